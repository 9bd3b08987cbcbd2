//! `Serialize` and `Deserialize` for the delta: a map of the fields it
//! writes; an overwrite is `{"__overwrite__": value}`. Decoding dispatches
//! on the key with a `match` and rejects unknown keys with a suggestion.

use super::{key, private, project, update_type};
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

pub fn impl_serde(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        generics, delta, ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let keys = model.fields.iter().map(key).collect::<Vec<_>>();
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();

    let ser_where = bounds(model, quote!(#p::Serialize));
    let de_where = bounds(model, quote!(#p::serde::de::DeserializeOwned));

    let decoders = model.fields.iter().map(|field| {
        let name = &field.ident;
        let key = key(field);
        if field.reducer.is_replace() {
            quote!(#key => #p::decode_replace(__map, #key, &mut self.#name),)
        } else {
            let project = project(model, field);
            quote!(#key => #p::decode_reduced(__map, #key, &mut self.#name, &mut self.__more, #project),)
        }
    });

    let mut de_generics = generics.clone();
    de_generics.params.insert(0, syn::parse_quote!('__de));
    let (de_impl_generics, _, _) = de_generics.split_for_impl();

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::Serialize for #delta #ty_generics #ser_where {
            fn serialize<__S: #p::Serializer>(&self, __serializer: __S) -> #p::Result<__S::Ok, __S::Error> {
                let mut __map = #p::Serializer::serialize_map(__serializer, #p::None)?;
                let __more = self.__more.as_deref();
                #(
                    #p::serialize_slot(&mut __map, #keys, &self.#names, __more.map(|__m| &__m.#names))?;
                )*
                #p::SerializeMap::end(__map)
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::DecodeDelta for #delta #ty_generics #de_where {
            const FIELDS: &'static [&'static str] = &[#(#keys),*];

            fn decode_field<'__de, __A: #p::MapAccess<'__de>>(
                &mut self,
                __key: &str,
                __map: &mut __A,
            ) -> #p::Result<(), __A::Error> {
                match __key {
                    #(#decoders)*
                    _ => #p::Err(#p::unknown_field(__key, <Self as #p::DecodeDelta>::FIELDS)),
                }
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::Deserialize<'__de> for #delta #ty_generics #de_where {
            fn deserialize<__D: #p::Deserializer<'__de>>(__deserializer: __D) -> #p::Result<Self, __D::Error> {
                #p::deserialize_delta(__deserializer)
            }
        }
    }
}

/// The struct's where clause plus `Type: bound` for every field type and
/// update type, each spanned at the field so a missing impl points there.
fn bounds(model: &Model, bound: TokenStream) -> TokenStream {
    let existing = model
        .generics
        .where_clause
        .as_ref()
        .map(|w| w.predicates.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    let extra = model.fields.iter().flat_map(|field| {
        let ty = &field.ty;
        let update = update_type(model, field);
        let span = ty.span();
        let update_bound =
            (!field.reducer.is_replace()).then(|| quote_spanned!(span=> #update: #bound));
        std::iter::once(quote_spanned!(span=> #ty: #bound)).chain(update_bound)
    });
    quote!(where #(#existing,)* #(#extra,)*)
}
