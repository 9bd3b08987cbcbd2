//! `Serialize` / `Deserialize` for the delta (a map of the fields it
//! writes; an overwrite is `{"__overwrite__": value}`, the unfolded writes
//! of a merged step `{"__writes__": [update, ...]}`) and for the state
//! (all fields; decoding follows `State::from_json`). Decoding dispatches on
//! the key with a `match` and rejects unknown keys with a suggestion.

use super::{SerdeBound, bounds, key, private, project, reducer_value};
use crate::model::{Builtin, Field, Member, Model, Reducer};
use crate::text::type_text;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_serde(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        ident,
        generics,
        delta,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let keys = model.fields.iter().map(key).collect::<Vec<_>>();

    let ser_where = bounds(model, SerdeBound::Serialize);
    let de_where = bounds(model, SerdeBound::Deserialize);
    let state_where = bounds(model, SerdeBound::State);

    let decoders = model.fields.iter().map(|field| {
        let name = &field.ident;
        let key = key(field);
        let ty = type_text(&field.ty);
        if field.reducer.is_replace() {
            quote!(#key => #p::decode_replace(#key, #ty, &mut self.#name, value),)
        } else {
            let update = update_text(field);
            let project = project(model, field);
            let reducer = reducer_value(model, field);
            // LangGraph accepts one message where a list is expected.
            let one_or_many = matches!(field.reducer, Reducer::Builtin(Builtin::AddMessages, _));
            quote!(#key => #p::decode_reduced(&#reducer, #key, (#ty, #update, #one_or_many), &mut self.#name, &mut self.__more, #project, value),)
        }
    });

    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let base_deltas = model
        .bases
        .iter()
        .map(|b| model.base_delta(b))
        .collect::<Vec<_>>();
    let delta_entries = model.members().into_iter().map(|member| match member {
        Member::Field(field) => {
            let name = &field.ident;
            let key = key(field);
            quote!(#p::serialize_slot(__map, #key, &self.#name, __more.map(|__m| &__m.#name))?;)
        }
        Member::Base(base) => {
            let name = &base.ident;
            quote!(#p::SerializeEntries::serialize_entries(&self.#name, __map)?;)
        }
    });
    // Own keys first (a `match`), then each base's.
    let has_own = if keys.is_empty() {
        quote!(false)
    } else {
        quote!(#p::matches!(key, #(#keys)|*))
    };
    let has_field = quote!(#has_own #(|| <#base_deltas as #p::DecodeDelta>::has_field(key))*);
    let key_bases = model.bases.iter().map(|b| {
        let d = model.base_delta(b);
        quote!(<#d as #p::DecodeDelta>::KEYS)
    });

    let mut de_generics = generics.clone();
    de_generics.params.insert(0, syn::parse_quote!('__de));
    let (de_impl_generics, _, _) = de_generics.split_for_impl();

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::SerializeEntries for #delta #ty_generics #ser_where {
            #[inline]
            fn serialize_entries<__M: #p::SerializeMap>(&self, __map: &mut __M) -> #p::Result<(), __M::Error> {
                let __more = self.__more.as_deref();
                #(#delta_entries)*
                #p::Ok(())
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::Serialize for #delta #ty_generics #ser_where {
            #[inline]
            fn serialize<__S: #p::Serializer>(&self, __serializer: __S) -> #p::Result<__S::Ok, __S::Error> {
                let mut __map = #p::Serializer::serialize_map(__serializer, #p::None)?;
                #p::SerializeEntries::serialize_entries(self, &mut __map)?;
                #p::SerializeMap::end(__map)
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::DecodeDelta for #delta #ty_generics #de_where {
            const KEYS: #p::KeyTree = #p::KeyTree { own: &[#(#keys),*], bases: &[#(#key_bases),*] };

            #[inline]
            fn has_field(key: &str) -> bool {
                #has_field
            }

            #[inline]
            fn decode_field(
                &mut self,
                key: &str,
                value: #p::serde_json::Value,
            ) -> #p::Result<(), #p::StateError> {
                match key {
                    #(#decoders)*
                    #(
                        _ if <#base_deltas as #p::DecodeDelta>::has_field(key) => {
                            #p::DecodeDelta::decode_field(&mut self.#base_names, key, value)
                        }
                    )*
                    _ => #p::Err(#p::unknown_delta_field::<Self>(key)),
                }
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::Deserialize<'__de> for #delta #ty_generics #de_where {
            #[inline]
            fn deserialize<__D: #p::Deserializer<'__de>>(__deserializer: __D) -> #p::Result<Self, __D::Error> {
                #p::deserialize_delta(__deserializer)
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::Serialize for #ident #ty_generics #state_where {
            #[inline]
            fn serialize<__S: #p::Serializer>(&self, __serializer: __S) -> #p::Result<__S::Ok, __S::Error> {
                #p::table::serialize(self, __serializer)
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::Deserialize<'__de> for #ident #ty_generics #state_where {
            #[inline]
            fn deserialize<__D: #p::Deserializer<'__de>>(__deserializer: __D) -> #p::Result<Self, __D::Error> {
                #p::deserialize_state(__deserializer)
            }
        }
    }
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
