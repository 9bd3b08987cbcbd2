//! Code generation from a validated [`Model`]: one file per artifact.

mod access;
mod apply;
mod default;
mod delta;
mod delta_impl;
mod fallback;
mod json_schema;
mod schema;
mod serde;
mod turn;

use crate::model::{Builtin, Field, Model, Reducer};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

/// Expands `#[derive(AgentState)]`: the generated items, or the errors plus
/// stub impls that keep one mistake from cascading into many.
pub fn derive(input: &syn::DeriveInput) -> TokenStream {
    match Model::from_input(input) {
        Ok(model) => expand(&model),
        Err(errors) => {
            let stubs = fallback::stubs(input, crate::model::derives_default(input));
            let errors = errors.write_errors();
            quote!(#errors #stubs)
        }
    }
}

fn expand(model: &Model) -> TokenStream {
    let delta_items = delta::items(model);
    let impls = [
        default::impl_default(model),
        delta_impl::impl_delta(model),
        serde::impl_serde(model),
        apply::impl_state(model),
        access::typed_access(model),
        json_schema::impl_json_schema(model),
    ];
    quote! {
        #delta_items
        #[doc(hidden)]
        const _: () = {
            #(#impls)*
        };
    }
}

/// `#krate::__private`, the one path generated code goes through.
fn private(model: &Model) -> TokenStream {
    let krate = &model.krate;
    quote!(#krate::__private)
}

/// The key of a field: its name without `r#`.
fn key(field: &Field) -> String {
    field.ident.unraw().to_string()
}

/// A positional local name, so user field names never clash with ours.
fn local(prefix: &str, index: usize) -> syn::Ident {
    format_ident!("__{}{}", prefix, index)
}

/// The reducer as a value expression.
fn reducer_value(model: &Model, field: &Field) -> TokenStream {
    let p = private(model);
    match &field.reducer {
        Reducer::Builtin(builtin, span) => {
            let name = format_ident!("{}", builtin.type_name(), span = *span);
            quote_spanned!(field.ty.span()=> #p::reducer::#name)
        }
        Reducer::With { path, .. } => quote!(#path),
    }
}

/// The type a node writes to this field.
fn update_type(model: &Model, field: &Field) -> TokenStream {
    let p = private(model);
    let ty = &field.ty;
    match &field.reducer {
        Reducer::Builtin(Builtin::Replace, _) => quote!(#ty),
        Reducer::Builtin(builtin, _) => {
            let name = format_ident!("{}", builtin.type_name());
            quote_spanned!(ty.span()=> <#p::reducer::#name as #p::Reducer<#ty>>::Update)
        }
        Reducer::With {
            update: Some(update),
            ..
        } => quote!(#update),
        Reducer::With { update: None, .. } => quote!(#ty),
    }
}

/// `|m: &mut Companion| &mut m.field`, the accessor the runtime uses to
/// reach one field's rare writes.
fn project(model: &Model, field: &Field) -> TokenStream {
    let more = &model.more;
    let (_, ty_generics, _) = model.generics.split_for_impl();
    let ident = &field.ident;
    quote!(|__m: &mut #more #ty_generics| &mut __m.#ident)
}

/// Which trait bounds an impl needs on the field and update types.
#[derive(Clone, Copy)]
enum SerdeBound {
    /// `Serialize`, for the `Serialize` impls.
    Serialize,
    /// `DeserializeOwned`, for decoding deltas.
    Deserialize,
    /// Everything `impl State` uses: both serde traits.
    State,
    /// `impl State`'s bounds plus `schemars::JsonSchema`.
    Schema,
    /// `'static`, for the type-erased field access.
    Static,
    /// `PartialEq`, for the delta's equality.
    PartialEq,
}

/// The struct's where clause plus the bounds `kind` needs on every field
/// type and update type, each spanned at the field so a missing impl is
/// reported there.
fn bounds(model: &Model, kind: SerdeBound) -> TokenStream {
    let p = private(model);
    let ser = quote!(#p::Serialize);
    let de = quote!(#p::serde::de::DeserializeOwned);
    let bound = match kind {
        SerdeBound::Serialize => ser,
        SerdeBound::Deserialize => de,
        SerdeBound::State => quote!(#ser + #de),
        SerdeBound::Schema => quote!(#ser + #de + #p::schemars::JsonSchema),
        SerdeBound::Static => quote!('static),
        SerdeBound::PartialEq => quote!(#p::PartialEq),
    };
    let existing = model
        .generics
        .where_clause
        .as_ref()
        .map(|w| w.predicates.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    let extra = model.fields.iter().flat_map(|field| {
        let ty = &field.ty;
        let span = ty.span();
        let update = update_type(model, field);
        let update_bound =
            (!field.reducer.is_replace()).then(|| quote_spanned!(span=> #update: #bound));
        std::iter::once(quote_spanned!(span=> #ty: #bound)).chain(update_bound)
    });
    quote!(where #(#existing,)* #(#extra,)*)
}
