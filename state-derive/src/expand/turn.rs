//! `begin_turn`: turn-scoped fields go back to their defaults; a persistent
//! field holding a nested state resets that state's turn-scoped fields.

use super::default::default_value;
use super::{checks, private, reducer_value};
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
            // Any other field holding a state (found by autoref
            // specialisation; a no-op otherwise, compiled away) resets its
            // turn-scoped fields too. A field of a generic parameter's type
            // is not probed.
            (Scope::Persistent, _) if !checks::is_generic(model, &field.ty) => Some(quote! {
                {
                    use #p::{NoStateTurn as _, ViaStateTurn as _};
                    #p::FieldMut(&mut self.#name).begin_turn_below();
                }
            }),
            (Scope::Persistent, _) => None,
        }
    });
    // A base's fields keep their own scopes.
    let bases = model.bases.iter().map(|base| {
        let name = &base.ident;
        quote!(#p::State::begin_turn(&mut self.#name);)
    });
    quote! {
        #[inline]
        fn begin_turn(&mut self) {
            #(#resets)*
            #(#bases)*
        }
    }
}
