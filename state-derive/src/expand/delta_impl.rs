//! `impl Delta`: `is_empty`, `fields` and `merge` (two deltas of one step).

use super::{
    SerdeBound, base_locals, bounds, key, local_names, private, project, reducer_value, unpack_more,
};
use crate::model::{Member, Model};
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_delta(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        generics, delta, ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = bounds(model, SerdeBound::Deserialize);
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let writes = local_names("w", model);
    let rare = local_names("m", model);
    let unpack = unpack_more(model, quote!(__other_more));

    let merges = model.fields.iter().enumerate().map(|(i, field)| {
        let name = &field.ident;
        let key = key(field);
        let reducer = reducer_value(model, field);
        let project = project(model, field);
        let (w, m) = (&writes[i], &rare[i]);
        quote! {
            #p::merge_field(&#reducer, #key, &mut self.#name, &mut self.__more, #project, #w, #m)?;
        }
    });

    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let base_writes = base_locals(model);
    // Declaration order: a base's keys where the base is declared.
    let field_pushes = model.members().into_iter().map(|member| match member {
        Member::Field(field) => {
            let name = &field.ident;
            let key = key(field);
            quote! {
                if self.#name.is_some() || __more.is_some_and(|__m| __m.#name.has_overwrite()) {
                    __out.push(#key);
                }
            }
        }
        Member::Base(base) => {
            let name = &base.ident;
            quote!(#p::Extend::extend(&mut __out, #p::Delta::fields(&self.#name));)
        }
    });

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::Delta for #delta #ty_generics #where_clause {
            #[inline]
            fn is_empty(&self) -> bool {
                #(self.#names.is_none() &&)*
                #(#p::Delta::is_empty(&self.#base_names) &&)*
                self.__more.as_deref().is_none_or(|__m| true #(&& !__m.#names.has_overwrite())*)
            }

            #[inline]
            fn fields(&self) -> #p::Vec<&'static str> {
                let mut __out = #p::Vec::new();
                let __more = self.__more.as_deref();
                #(#field_pushes)*
                __out
            }

            #[inline]
            fn merge(mut self, other: Self) -> #p::Result<Self, #p::StateError> {
                let #delta { #(#names: #writes,)* #(#base_names: #base_writes,)* __more: __other_more } = other;
                #unpack
                #(#merges)*
                // A base's keys are this state's: its errors name them as they are.
                #(self.#base_names = #p::Delta::merge(#p::take(&mut self.#base_names), #base_writes)?;)*
                #p::Ok(self)
            }

            #[inline]
            fn from_json(value: #p::serde_json::Value) -> #p::Result<Self, #p::StateError> {
                #p::delta_from_json(value)
            }
        }
    }
}
