//! `begin_turn`: turn-scoped fields go back to their defaults; a persistent
//! field holding a nested state resets that state's turn-scoped fields.

use super::default::default_value;
use super::{private, reducer_value};
use crate::attrs::Scope;
use crate::model::{Builtin, Model, Reducer};
use proc_macro2::TokenStream;
use quote::quote;

pub fn begin_turn(model: &Model) -> TokenStream {
    let p = private(model);
    let resets = model.fields.iter().filter_map(|field| {
        let name = &field.ident;
        match (field.scope, &field.reducer) {
            (Scope::Turn, _) => {
                let value = default_value(model, field);
                Some(quote!(self.#name = #value;))
            }
            // A map's `begin_turn` does nothing; a nested state's resets its
            // turn-scoped fields.
            (Scope::Persistent, Reducer::Builtin(Builtin::Merge, _)) => {
                let reducer = reducer_value(model, field);
                Some(quote!(#p::Reducer::begin_turn(&#reducer, &mut self.#name);))
            }
            (Scope::Persistent, _) => None,
        }
    });
    // Any other persistent field that holds a state (the field table knows
    // which) resets its turn-scoped fields too, in one runtime call. (A
    // field of a generic parameter's type is a plain value to the table.)
    let below = model
        .fields
        .iter()
        .enumerate()
        .filter(|(_, field)| {
            field.scope == Scope::Persistent
                && !matches!(field.reducer, Reducer::Builtin(Builtin::Merge, _))
        })
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    let below =
        (!below.is_empty()).then(|| quote!(#p::table::begin_turn_below(self, &[#(#below),*]);));
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
