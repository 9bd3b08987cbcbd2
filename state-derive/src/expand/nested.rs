//! `impl Reducer<State> for Merge`: the state can be a nested field of
//! another state, `#[reducer(merge)]`, whose update is this state's delta.
//! Every method calls the runtime's `nested` module.

use super::private;
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_merge_reducer(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        ident,
        generics,
        delta,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = super::bounds_via(model, &[super::state_hub(model)]);
    let state = quote!(#ident #ty_generics);
    let update = quote!(#delta #ty_generics);
    let n = quote!(#p::nested);

    quote! {
        // (`#[diagnostic::do_not_recommend]` would keep this impl out of
        // rustc's hints, but it does not resolve under
        // `#![no_implicit_prelude]`.)
        #[automatically_derived]
        impl #impl_generics #p::Reducer<#state> for #p::reducer::Merge #where_clause {
            type Update = #update;

            fn apply(&self, target: &mut #state, update: #update) {
                #n::apply(target, update)
            }

            #[inline]
            fn stage(
                &self,
                target: &#state,
                writes: #p::reducer::Writes<#update>,
            ) -> #p::Result<#p::reducer::Staged<#state, #update>, #p::ReduceError> {
                #n::stage(target, writes)
            }

            #[inline]
            fn commit(&self, target: &mut #state, staged: #p::reducer::Staged<#state, #update>) {
                #n::commit(target, staged)
            }

            #[inline]
            fn fold(&self, first: #update, second: #update) -> #p::reducer::Fold<#update> {
                #n::fold::<#state>(first, second)
            }

            #[inline]
            fn try_fold(
                &self,
                first: #update,
                second: #update,
            ) -> #p::Result<#p::reducer::Fold<#update>, #p::StateError> {
                #n::try_fold::<#state>(first, second)
            }

            #[inline]
            fn begin_turn(&self, target: &mut #state) {
                #p::State::begin_turn(target)
            }

            #[inline]
            fn decode_update(
                &self,
                field: &str,
                _update_ty: &'static str,
                value: #p::serde_json::Value,
            ) -> #p::Result<#update, #p::StateError> {
                #n::decode::<#state>(field, value)
            }

            #[inline]
            fn nested_schema(&self) -> #p::Option<&'static #p::Schema> {
                #p::Some(<#state as #p::State>::schema())
            }
        }
    }
}
