//! The delta's table (`DeltaKeys`, `DeltaTable`: a field's index to its
//! slot, and to the decoding of its JSON), and what runs over it in
//! state-core: `Delta::is_empty` / `fields` / `from_json` and serde. Only
//! `Delta::merge` is typed code per field, one runtime call each.

use super::{Needs, base_locals, bounds, key, local_names, private, reducer_value};
use crate::model::{Field, Model};
use crate::reducer::{Builtin, Reducer};
use crate::text::type_text;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_delta(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        generics, delta, ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    // Everything here calls the table, whose impl carries the bounds.
    let where_clause = super::bounds_via(model, &[super::delta_hub(model)]);
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let writes = local_names("w", model);
    let merges = model.fields.iter().zip(&writes).map(|(field, w)| {
        let name = &field.ident;
        let key = key(field);
        if field.reducer.is_replace() {
            quote!(#p::merge_replace(#key, &mut self.#name, #w, &mut __merging);)
        } else {
            let reducer = reducer_value(model, field);
            quote!(#p::merge_slot(&#reducer, #key, &mut self.#name, #w, &mut __merging);)
        }
    });
    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let base_writes = base_locals(model);
    let table = impl_table(model);

    let mut de_generics = generics.clone();
    de_generics.params.insert(0, syn::parse_quote!('__de));
    let (de_impl_generics, _, _) = de_generics.split_for_impl();

    quote! {
        #table

        #[automatically_derived]
        impl #impl_generics #p::Delta for #delta #ty_generics #where_clause {
            #[inline]
            fn is_empty(&self) -> bool {
                #p::delta_table::is_empty(self)
            }

            #[inline]
            fn fields(&self) -> #p::FieldNames {
                #p::delta_table::fields(self)
            }

            #[inline]
            fn merge_with(mut self, other: Self, __mode: #p::MergeMode) -> #p::Result<Self, #p::StateError> {
                // Taken apart by moves: as fast as hand-written code
                // (taking each write out in place measured 4% slower).
                let Self { #(#names: #writes,)* #(#base_names: #base_writes,)* } = other;
                let mut __merging = #p::Merging::new(__mode);
                #(#merges)*
                __merging.finish()?;
                // A base's keys are this state's: its errors name them as they are.
                #(self.#base_names = #p::Delta::merge_with(#p::take(&mut self.#base_names), #base_writes, __mode)?;)*
                #p::Ok(self)
            }

            #[inline]
            fn from_json(value: #p::serde_json::Value) -> #p::Result<Self, #p::StateError> {
                #p::delta_table::from_json(value)
            }

            #[inline]
            fn write_json(&self, __out: &mut #p::Vec<u8>) -> #p::Result<(), #p::serde_json::Error> {
                #p::delta_table::write_json(self, __out)
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::Serialize for #delta #ty_generics #where_clause {
            #[inline]
            fn serialize<__S: #p::Serializer>(&self, __serializer: __S) -> #p::Result<__S::Ok, __S::Error> {
                #p::delta_table::serialize(self, __serializer)
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::Deserialize<'__de> for #delta #ty_generics #where_clause {
            #[inline]
            fn deserialize<__D: #p::Deserializer<'__de>>(__deserializer: __D) -> #p::Result<Self, __D::Error> {
                #p::delta_table::deserialize(__deserializer)
            }
        }
    }
}

/// `DeltaKeys` and `DeltaTable`.
fn impl_table(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        generics, delta, ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = bounds(model, Needs::DeltaTable);
    let keys_where = super::where_clause(model, []);
    let keys = model.fields.iter().map(key);
    let key_bases = model.bases.iter().map(|b| {
        let d = model.base_delta(b);
        quote!(<#d as #p::DeltaKeys>::KEYS)
    });
    let index = 0..model.fields.len();
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let decoders = model
        .fields
        .iter()
        .enumerate()
        .map(|(index, field)| decoder(model, index, field));
    let bases = super::table::base_projections(model, quote!(#p::DeltaTable));
    let state_name = model.ident.to_string();
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::DeltaKeys for #delta #ty_generics #keys_where {
            const KEYS: #p::KeyTree = #p::KeyTree { own: &[#(#keys),*], bases: &[#(#key_bases),*] };
        }

        #[automatically_derived]
        impl #impl_generics #p::DeltaTable for #delta #ty_generics #where_clause {
            #[inline]
            fn state(&self) -> &'static str {
                #state_name
            }

            #[inline]
            fn keys(&self) -> #p::KeyTree {
                <Self as #p::DeltaKeys>::KEYS
            }

            #[inline]
            fn slot(&self, index: usize) -> #p::Option<&dyn #p::ErasedSlot> {
                match index {
                    #(#index => #p::Some(&self.#names),)*
                    _ => #p::None,
                }
            }

            #[inline]
            fn decode(&mut self, index: usize, value: #p::UpdateInput<'_, '_>) -> #p::Result<(), #p::StateError> {
                match index {
                    #(#decoders)*
                    _ => #p::Ok(()),
                }
            }

            #bases
        }
    }
}

/// The arm of `DeltaTable::decode` for field `index`.
fn decoder(model: &Model, index: usize, field: &Field) -> TokenStream {
    let p = private(model);
    let name = &field.ident;
    let key = key(field);
    let ty = type_text(&field.ty);
    if field.reducer.is_replace() {
        return quote!(#index => #p::decode_replace(#key, #ty, &mut self.#name, value),);
    }
    let update = update_text(field);
    let reducer = reducer_value(model, field);
    // LangGraph accepts one message where a list is expected.
    let one_or_many = matches!(field.reducer, Reducer::Builtin(Builtin::AddMessages, _));
    quote!(#index => #p::decode_reduced(&#reducer, #key, (#ty, #update, #one_or_many), &mut self.#name, value),)
}

/// How errors name a field's update type.
fn update_text(field: &Field) -> String {
    match &field.reducer {
        Reducer::Builtin(Builtin::AddMessages, _) => "a message or a list of messages".to_owned(),
        Reducer::With {
            update: Some(update),
            ..
        } => type_text(update),
        _ => type_text(&field.ty),
    }
}
