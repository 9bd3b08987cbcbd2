//! `impl State`: `apply` stages every field (all errors, no changes), then
//! commits every field (no errors), so a delta applies all-or-nothing.

use super::delta_impl::local_names;
use super::turn::begin_turn;
use super::{SerdeBound, access, bounds, key, private, reducer_value, schema};
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_state(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        ident,
        generics,
        delta,
        more,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = bounds(model, SerdeBound::State);
    let access = access::methods(model);
    let schema = schema::method(model);
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let writes = local_names("w", model);
    let rare = local_names("m", model);
    let plans = local_names("plan", model);
    let reducers = model
        .fields
        .iter()
        .map(|f| reducer_value(model, f))
        .collect::<Vec<_>>();
    let keys = model.fields.iter().map(key);
    let begin_turn = begin_turn(model);

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::State for #ident #ty_generics #where_clause {
            type Delta = #delta #ty_generics;

            fn apply(&mut self, delta: Self::Delta) -> #p::Result<(), #p::StateError> {
                let #delta { #(#names: #writes,)* __more } = delta;
                #(let mut #rare = #p::None;)*
                if let #p::Some(__boxed) = __more {
                    let #more { #(#names,)* } = *__boxed;
                    #(#rare = #p::Some(#names);)*
                }
                #(let #plans = #p::stage(&#reducers, &self.#names, #keys, #writes, #rare)?;)*
                #(#p::commit(&#reducers, &mut self.#names, #plans);)*
                #p::Ok(())
            }

            #begin_turn
            #access
            #schema
        }
    }
}
