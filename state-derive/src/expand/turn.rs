//! `begin_turn`: turn-scoped fields go back to their defaults; a persistent
//! field holding a nested state resets that state's turn-scoped fields.

use super::default::default_value;
use super::private;
use crate::attrs::Scope;
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn begin_turn(model: &Model) -> TokenStream {
    let p = private(model);
    let resets = model
        .fields
        .iter()
        .filter(|field| field.scope == Scope::Turn)
        .map(|field| {
            let name = &field.ident;
            let value = default_value(model, field);
            quote!(self.#name = #value;)
        });
    // Each persistent field that holds a nested state resets that state's
    // turn-scoped fields: the field table knows which do, whatever their
    // reducer, and for a field of a type parameter bounded by `State` too.
    let persistent = model
        .fields
        .iter()
        .enumerate()
        .filter(|(_, field)| field.scope == Scope::Persistent)
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    let below = (!persistent.is_empty())
        .then(|| quote!(#p::table::begin_turn_below(self, &[#(#persistent),*]);));
    // A base's fields keep their own scopes.
    let bases = model.bases.iter().map(|base| {
        let name = &base.ident;
        quote!(#p::State::begin_turn(&mut self.#name);)
    });
    quote! {
        #[inline]
        fn begin_turn(&mut self) {
            #(#resets)*
            #below
            #(#bases)*
        }
    }
}
