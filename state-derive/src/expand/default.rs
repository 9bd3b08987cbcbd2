//! `impl Default`, from the fields' `#[default(...)]` expressions.

use super::private;
use crate::model::{Field, Model};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

pub fn impl_default(model: &Model) -> TokenStream {
    let p = private(model);
    let ident = &model.ident;
    let (impl_generics, ty_generics, where_clause) = model.generics.split_for_impl();
    let inits = model.fields.iter().map(|field| {
        let name = &field.ident;
        let value = default_value(model, field);
        quote!(#name: #value)
    });
    let bases = model.bases.iter().map(|base| {
        let name = &base.ident;
        let ty = &base.ty;
        quote!(#name: <#ty as #p::Default>::default())
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::Default for #ident #ty_generics #where_clause {
            #[inline]
            fn default() -> Self {
                Self { #(#inits,)* #(#bases,)* }
            }
        }
    }
}

/// A field's default value: its `#[default]` expression (typed by the
/// field; a string literal alone goes through `Into`) or `Default::default()`.
/// Spans point at the expression or the field type, so a mismatch is
/// reported there.
pub fn default_value(model: &Model, field: &Field) -> TokenStream {
    let p = private(model);
    let ty = &field.ty;
    match &field.default {
        Some(
            lit @ syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(_),
                ..
            }),
        ) => quote_spanned!(lit.span()=> <_ as #p::Into<#ty>>::into(#lit)),
        Some(expr) => quote_spanned!(expr.span()=> #expr),
        None => quote_spanned!(ty.span()=> <#ty as #p::Default>::default()),
    }
}
