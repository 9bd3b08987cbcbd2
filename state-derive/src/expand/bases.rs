//! `AsRef<Base>` and `AsMut<Base>` for each `#[state(flatten)]` base, so
//! code written for the base state takes the extended one.

use super::private;
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_as_base(model: &Model) -> TokenStream {
    let p = private(model);
    let ident = &model.ident;
    let (impl_generics, ty_generics, where_clause) = model.generics.split_for_impl();
    let impls = model.bases.iter().map(|base| {
        let name = &base.ident;
        let ty = &base.ty;
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::AsRef<#ty> for #ident #ty_generics #where_clause {
                #[inline]
                fn as_ref(&self) -> &#ty {
                    &self.#name
                }
            }

            #[automatically_derived]
            impl #impl_generics #p::AsMut<#ty> for #ident #ty_generics #where_clause {
                #[inline]
                fn as_mut(&mut self) -> &mut #ty {
                    &mut self.#name
                }
            }
        }
    });
    quote!(#(#impls)*)
}
