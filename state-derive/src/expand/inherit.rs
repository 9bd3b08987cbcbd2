//! Inheritance across crates: a state's fields as `FieldTypes<I>` and its
//! delta's bases as `BaseSlot<I>` (in the `const _` block), and a callback
//! macro that stamps the state's public setters, and `From` of its delta,
//! onto any delta that flattens it.
//!
//! The extension's derive cannot see the base's fields, so the base's
//! derive writes them into a `macro_rules!` that the extension's expansion
//! calls through the base's own path (`path::Base! { .. }`): the macro is
//! exported under a unique name and re-exported, hidden, as the struct's
//! name in the macro namespace. Types inside it are named from the
//! extension's side through `FieldTypes` (a base's own names may not
//! resolve there), and `From` names the base's delta by the path the
//! extension wrote (`path::BaseDelta`): coherence cannot tell a projection
//! like `<Base as State>::Delta` from the extension's own delta.

use super::{private, update_type, where_clause};
use crate::model::{Base, Model};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::hash::{Hash, Hasher};
use syn::ext::IdentExt;

/// `FieldTypes<I>` for each public field and `InheritedBy` (a concrete
/// state, as a base); `HasBase` for each base and `From` of their deltas
/// (as an extension).
pub fn tables(model: &Model) -> TokenStream {
    let p = private(model);
    let ident = &model.ident;
    let delta = &model.delta;
    let (impl_generics, ty_generics, _) = model.generics.split_for_impl();
    // Each impl holds only if the state is one (a `for<'__r>` fact, so
    // that a mistake in a field is reported once, at the field, and not
    // again through these impls).
    let is_state =
        super::checks::bound(model, ident, quote!(#ident #ty_generics), quote!(#p::State));
    let base_where = quote!(where #is_state);
    let where_clause = where_clause(model, []);
    // A generic state is not inherited from (its fields' types would need
    // its parameters' bounds here): only a concrete one is.
    let concrete = model.generics.params.is_empty();
    // Only public fields are inherited (their setters are public); a
    // private field's type may be private, and may not appear here.
    let public = model.fields.iter().filter(|field| is_public(&field.vis));
    let fields = concrete.then(|| {
        let types = list(public.clone().map(|field| {
            let ty = &field.ty;
            quote!(#ty)
        }));
        let updates = list(public.map(|field| update_type(model, field)));
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::FieldTypes for #ident #ty_generics #base_where {
                type Fields = #types;
                type Updates = #updates;
            }
        }
    });
    let bases = model.bases.iter().map(|base| {
        let name = &base.ident;
        let ty = &base.ty;
        let base_delta = model.base_delta(base);
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::HasBase<#ty> for #delta #ty_generics #where_clause {
                type Delta = #base_delta;

                #[inline]
                fn base_delta_mut(&mut self) -> &mut #base_delta {
                    &mut self.#name
                }
            }
        }
    });
    // A node written for a base returns a delta that applies here.
    let from = (!model.bases.is_empty()).then(|| {
        let generics = with_param(model, quote!(__D: #p::InheritedBy<Self>));
        let (from_generics, _, _) = generics.split_for_impl();
        quote! {
            #[automatically_derived]
            impl #from_generics #p::From<__D> for #delta #ty_generics #where_clause {
                #[inline]
                fn from(delta: __D) -> Self {
                    #p::InheritedBy::into_host(delta)
                }
            }
        }
    });
    // This delta, as the delta of any state that flattens this one.
    let generics = with_param(
        model,
        quote!(__H: #p::HasBase<#ident #ty_generics, Delta = #delta #ty_generics> + #p::Default),
    );
    let (host_generics, _, _) = generics.split_for_impl();
    let inherited = concrete.then(|| {
        quote! {
            #[automatically_derived]
            impl #host_generics #p::InheritedBy<__H> for #delta #ty_generics #base_where {
                #[inline]
                fn into_host(self) -> __H {
                    let mut host: __H = #p::Default::default();
                    *#p::HasBase::<#ident #ty_generics>::base_delta_mut(&mut host) = self;
                    host
                }
            }
        }
    });
    quote!(#fields #(#bases)* #from #inherited)
}

/// The callback macro and its re-export under the struct's name. It holds
/// only the list of public fields; state-core's `__inherit!` writes their
/// setters, in the crate that flattens this state and only there.
pub fn callback(model: &Model, input: &syn::DeriveInput) -> TokenStream {
    let name = callback_name(model, input);
    let ident = &model.ident;
    let vis = &model.vis;
    let fields = model
        .fields
        .iter()
        .filter(|field| model.generics.params.is_empty() && is_public(&field.vis))
        .enumerate()
        .map(|(i, field)| {
            let at = index(i);
            let name = &field.ident;
            let overwrite =
                (!field.reducer.is_replace()).then(|| format_ident!("overwrite_{}", name.unraw()));
            quote!((#name [#at] #overwrite))
        });
    let doc = format!("Stamps `{ident}`'s setters onto a delta that flattens it.");
    quote! {
        #[doc = #doc]
        #[doc(hidden)]
        #[macro_export]
        #[allow(non_local_definitions)]
        macro_rules! #name {
            (krate [$($krate:tt)*] $($rest:tt)*) => {
                $($krate)*::__inherit! { krate [$($krate)*] $($rest)* fields [#(#fields)*] }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #name as #ident;
    }
}

/// For each base, the call of its callback.
pub fn calls(model: &Model) -> TokenStream {
    let krate = &model.krate;
    let delta = &model.delta;
    let (impl_generics, ty_generics, _) = model.generics.split_for_impl();
    let impl_params = strip_angles(quote!(#impl_generics));
    let where_clause = where_clause(model, []);
    let predicates = match syn::parse2::<syn::WhereClause>(where_clause.clone()) {
        Ok(w) => {
            let p = w.predicates;
            quote!(#p)
        }
        Err(_) => TokenStream::new(),
    };
    let calls = model.bases.iter().map(|base| {
        let path = macro_path(base);
        let ty = &base.ty;
        quote! {
            #path! {
                krate [#krate] host [#delta #ty_generics] impl [#impl_params]
                where [#predicates] state [#ty]
            }
        }
    });
    quote!(#(#calls)*)
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

/// The struct's generics with one more type parameter.
fn with_param(model: &Model, param: TokenStream) -> syn::Generics {
    let mut generics = model.generics.clone();
    generics.params.push(syn::parse_quote!(#param));
    generics
}

fn strip_angles(generics: TokenStream) -> TokenStream {
    let mut tokens = generics.into_iter().collect::<Vec<_>>();
    if tokens.len() >= 2 {
        tokens.remove(0);
        tokens.pop();
    }
    tokens.into_iter().collect()
}

/// A crate-unique name for the callback: exported macros share the crate
/// root, so two states of one name in two modules must not clash.
fn callback_name(model: &Model, input: &syn::DeriveInput) -> syn::Ident {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    quote!(#input).to_string().hash(&mut hasher);
    format_ident!(
        "__agent_state_{}_{:016x}",
        model.ident.unraw(),
        hasher.finish()
    )
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

/// Index `i` of such a list, as a type (`Next<Next<Zero>>` is 2), through
/// the `__p` that `__inherit!` names `__private` by.
fn index(i: usize) -> TokenStream {
    (0..i).fold(quote!(__p::Zero), |inner, _| quote!(__p::Next<#inner>))
}
