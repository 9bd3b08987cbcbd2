//! `begin_turn`: turn-scoped fields go back to their defaults.

use super::default::default_value;
use crate::attrs::Scope;
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn begin_turn(model: &Model) -> TokenStream {
    let resets = model
        .fields
        .iter()
        .filter(|f| f.scope == Scope::Turn)
        .map(|field| {
            let name = &field.ident;
            let value = default_value(model, field);
            quote!(self.#name = #value;)
        });
    quote! {
        fn begin_turn(&mut self) {
            #(#resets)*
        }
    }
}
