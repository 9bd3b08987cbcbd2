//! Inheritance across crates and at any depth. As a base, a concrete state
//! writes one `InheritedBy` impl (its delta into any delta that flattens
//! it, with its public fields' types) and a callback macro; as an
//! extension, a state writes `From` of its bases' deltas and calls each
//! base's callback.
//!
//! The extension's derive cannot see the base's fields, so the base's
//! derive writes them into a `macro_rules!` that the extension's expansion
//! calls through the base's own path (`path::Base! { .. }`): the macro is
//! exported under a unique name and re-exported, hidden, as the struct's
//! name in the macro namespace. It hands the field list to state-core's
//! `__inherit!`, which writes the setters in the extension's crate. Types
//! are named there through `InheritedBy`, since a base's own names may not
//! resolve in the extension's module, and bases are keyed by an id, since
//! a base of a base can only be named there through a projection.
//!
//! A state with bases cannot write its callback itself (it does not know
//! their fields): it calls its first base's callback in `__chain!` mode,
//! which inherits that base, calls the next one, and after the last one
//! defines this state's callback with its fields and all of theirs.

use super::{private, where_clause};
use crate::model::{Base, Field, Model};
use crate::reducer::Reducer;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use syn::ext::IdentExt;

/// The names one state's expansion gives its inheritance items.
pub struct Names {
    /// How many states this compiler process expanded before this one.
    n: usize,
    /// The state's id: `HasBase<ID>` of a delta that flattens it.
    id: syn::LitInt,
}

impl Names {
    pub fn new(model: &Model) -> Self {
        static EXPANDED: AtomicUsize = AtomicUsize::new(0);
        let n = EXPANDED.fetch_add(1, Ordering::Relaxed);
        Names {
            n,
            // Always 20 digits, so that the expansion reads the same
            // whatever the id (the snapshot tests pin it).
            id: syn::LitInt::new(
                &format!("{:020}", state_id(model, n)),
                proc_macro2::Span::call_site(),
            ),
        }
    }

    /// A crate-unique name for the callback: exported macros share the
    /// crate root, so two states of one name in two modules must not
    /// clash, even when they are written alike (the same struct in two
    /// test modules). A compiler process expands one crate, so counting
    /// the states it has expanded tells them apart.
    fn callback(&self, model: &Model) -> syn::Ident {
        format_ident!("__agent_state_{}_{}", model.ident.unraw(), self.n)
    }

    /// The name of filter `i` (module-level, so unique to this state).
    fn filter(&self, i: usize) -> syn::Ident {
        format_ident!("__agent_state_filter{i}_{}", self.n)
    }
}

/// An id unique across the crates of a build: ids key `HasBase`, and two
/// bases of one extension (at any depth) must not share one. The crate is
/// told apart by what cargo says of it, the state by its count and shape.
fn state_id(model: &Model, n: usize) -> u64 {
    let mut hasher = DefaultHasher::new();
    for var in [
        "CARGO_CRATE_NAME",
        "CARGO_PKG_VERSION",
        "CARGO_MANIFEST_DIR",
    ] {
        std::env::var(var).ok().hash(&mut hasher);
    }
    n.hash(&mut hasher);
    model.ident.to_string().hash(&mut hasher);
    for field in &model.fields {
        field.ident.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

/// As a base (a concrete state only): `InheritedBy`, which converts this
/// state's delta into the delta of any state that flattens it, and lists
/// its public fields' types for the setters `__inherit!` writes there.
pub fn base_tables(model: &Model, names: &Names) -> TokenStream {
    let p = private(model);
    let id = &names.id;
    let delta = &model.delta;
    // Only public fields are inherited (their setters are public); a
    // private field's type may be private, and may not appear here.
    let public = model.fields.iter().filter(|field| is_public(&field.vis));
    let types = list(public.clone().map(|field| {
        let ty = &field.ty;
        quote!(#ty)
    }));
    let updates = list(public.filter_map(|field| match &field.reducer {
        Reducer::With {
            update: Some(update),
            ..
        } => Some(quote!(#update)),
        _ => None,
    }));
    // The delta's table as the one fact: the delta's own bounds hold
    // wherever it is named, and one predicate costs less than its where
    // clause.
    let where_clause = super::bounds_via(model, &[super::delta_hub(model)]);
    // A generic state's impl is generic over its parameters too: an
    // extension flattens one instance, whose field types it names.
    let (_, ty_generics, _) = model.generics.split_for_impl();
    let mut generics = model.generics.clone();
    generics
        .params
        .push(syn::parse_quote!(__H: #p::HasBase<#id, Delta = #delta #ty_generics> + #p::Default));
    let (impl_generics, _, _) = generics.split_for_impl();
    // One generic impl per state, on its own delta: coherence then knows
    // that no other type converts (a blanket impl over any delta would make
    // a user's `From<String>` for an extension's delta conflict with it).
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::InheritedBy<__H> for #delta #ty_generics #where_clause
        {
            type Fields = #types;
            type Updates = #updates;

            #[inline]
            fn into_host(self) -> __H {
                let mut host: __H = #p::Default::default();
                *#p::HasBase::<#id>::base_delta_mut(&mut host) = self;
                host
            }
        }
    }
}

/// How an inherited setter's update type follows from the field's type
/// (state-core's `UpdateRule`), through the `__p` that `__inherit!` names
/// `__private` by: `custom` counts the earlier fields with `update = U`.
fn update_rule(field: &Field, custom: &mut usize) -> TokenStream {
    match &field.reducer {
        Reducer::Builtin(builtin, _) if builtin.projects_update() => {
            let name = format_ident!("{}", builtin.type_name());
            quote!(__p::Reduce<__p::reducer::#name>)
        }
        Reducer::With {
            update: Some(_), ..
        } => {
            let at = index(*custom);
            *custom += 1;
            quote!(__p::Given<#at>)
        }
        _ => quote!(__p::Same),
    }
}

/// As an extension: `From` of any delta that is one of its bases', at any
/// depth (state-core's `InheritedBy`, through the `HasBase` impls that
/// `__inherit!` writes). A node written for a base returns a delta that
/// applies here.
pub fn from_bases(model: &Model) -> TokenStream {
    if model.bases.is_empty() {
        return TokenStream::new();
    }
    let p = private(model);
    let delta = &model.delta;
    let (_, ty_generics, _) = model.generics.split_for_impl();
    let where_clause = where_clause(model, []);
    let mut generics = model.generics.clone();
    generics
        .params
        .push(syn::parse_quote!(__D: #p::IntoHost<Self>));
    let (from_generics, _, _) = generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #from_generics #p::From<__D> for #delta #ty_generics #where_clause {
            #[inline]
            fn from(delta: __D) -> Self {
                #p::IntoHost::into_host(delta)
            }
        }
    }
}

/// The state's own group for its callback: its id and public fields, as
/// `__inherit!` reads them.
fn own_group(model: &Model) -> TokenStream {
    let (mut replaced, mut reduced) = (Vec::new(), Vec::new());
    let public = model.fields.iter().filter(|field| is_public(&field.vis));
    let mut custom = 0;
    for (i, field) in public.enumerate() {
        let at = index(i);
        let name = &field.ident;
        let get = format_ident!("get_{}", name.unraw());
        if field.reducer.is_replace() {
            replaced.push(quote!((#name [#at] #get)));
        } else {
            let overwrite = format_ident!("overwrite_{}", name.unraw());
            let rule = update_rule(field, &mut custom);
            let push = field
                .push_item()
                .map(|_| format_ident!("push_{}", name.unraw()));
            reduced.push(quote!((#name [#at] #get #overwrite [#rule] #push)));
        }
    }
    quote!(replaced [#(#replaced)*] reduced [#(#reduced)*])
}

/// The callback macro and its re-export under the struct's name, for a
/// state without bases (one with bases defines it through `__chain!`).
/// It holds only the list of public fields; state-core's `__inherit!`
/// writes their setters, in the crate that flattens this state and only
/// there.
pub fn callback(model: &Model, names: &Names) -> TokenStream {
    if !model.bases.is_empty() {
        return TokenStream::new();
    }
    let name = names.callback(model);
    let ident = &model.ident;
    let vis = &model.vis;
    let id = &names.id;
    let own = own_group(model);
    quote! {
        #[doc(hidden)]
        #[macro_export]
        #[allow(non_local_definitions)]
        macro_rules! #name {
            (krate [$($krate:tt)*] $mode:ident $($rest:tt)*) => {
                $($krate)*::__private::$mode! {
                    krate [$($krate)*] $($rest)* id [#id] deep [] groups [(#id [#own])]
                }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #name as #ident;
    }
}

/// The chain of calls of the bases' callbacks (see `__chain!`), written
/// next to the struct: it ends in this state's own callback, which must be
/// in the struct's module to be re-exported there.
pub fn calls(model: &Model, names: &Names) -> TokenStream {
    let Some(first) = model.bases.first() else {
        return TokenStream::new();
    };
    let krate = &model.krate;
    let delta = &model.delta;
    let (impl_generics, ty_generics, _) = model.generics.split_for_impl();
    // The delta's own where clause: the struct's, and the facts the derive
    // adds.
    let where_clause = where_clause(model, []);
    // Each base's methods pass through a filter that drops a field named
    // like one of this state's or of an earlier base's: the clash is
    // reported once, by the key check, and not again as duplicate methods.
    // Filter 0 knows this state's own fields; each base's call defines the
    // next one (`d` is the `$` it needs for that).
    let own = model.fields.iter().map(|field| &field.ident);
    let filter0 = names.filter(0);
    let filter = quote! {
        macro_rules! #filter0 {
            #( (#own $($item:tt)*) => {}; )*
            ($other:ident $($item:tt)*) => { $($item)* };
        }
    };
    let this = |i: usize, base: &Base| {
        let field = &base.ident;
        let base_delta = model.base_delta(base);
        let (filter, next) = (names.filter(i), names.filter(i + 1));
        quote!(delta [#base_delta] field [#field] filter [#filter] next [#next])
    };
    let pending = model.bases.iter().enumerate().skip(1).map(|(i, base)| {
        let path = macro_path(base);
        let this = this(i, base);
        quote!(([#path] #this))
    });
    let (name, ident, vis) = (names.callback(model), &model.ident, &model.vis);
    let (id, own) = (&names.id, own_group(model));
    let define = quote!(name [#name] ident [#ident] vis [#vis] id [#id] own [#own]);
    let path = macro_path(first);
    let first = this(0, first);
    quote! {
        #filter
        #path! {
            krate [#krate] __chain host [#delta #ty_generics] impl [#impl_generics]
            where [#where_clause] d [$] this [#first] pending [#(#pending)*]
            define [#define] acc [ids [] groups []]
        }
    }
}

/// `path::Base<Args>` as `path::Base`: the callback's path.
fn macro_path(base: &Base) -> TokenStream {
    let ty = &base.ty;
    let syn::Type::Path(syn::TypePath {
        qself: None, path, ..
    }) = ty
    else {
        return quote!(#ty);
    };
    let mut bare = path.clone();
    if let Some(last) = bare.segments.last_mut() {
        last.arguments = syn::PathArguments::None;
    }
    quote!(#bare)
}

fn is_public(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

/// `(T0, (T1, (.., ())))`.
fn list(items: impl Iterator<Item = TokenStream>) -> TokenStream {
    let items = items.collect::<Vec<_>>();
    items
        .into_iter()
        .rev()
        .fold(quote!(()), |rest, item| quote!((#item, #rest)))
}

/// Index `i` of such a list, as a type, through the `__p` that
/// `__inherit!` names `__private` by: `__p::I2` for 2 (state-core names
/// the first 64), `__p::Next<__p::I63>` for 64.
fn index(i: usize) -> TokenStream {
    let named = i.min(LAST_NAMED_INDEX);
    let name = format_ident!("I{named}");
    (named..i).fold(quote!(__p::#name), |inner, _| quote!(__p::Next<#inner>))
}

/// The last index state-core names (`I63`).
const LAST_NAMED_INDEX: usize = 63;
