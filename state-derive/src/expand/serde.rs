//! `Serialize` / `Deserialize` for the state: every field, in declaration
//! order, through its table; decoding follows `State::from_json`. (The
//! delta's are in [`super::delta_impl`].) None with `#[state(serde =
//! "user")]`, where the user derives them.

use super::private;
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_serde(model: &Model) -> TokenStream {
    if model.user_serde.is_some() {
        // `#[state(serde = "user")]`: the user's derives write them.
        return TokenStream::new();
    }
    let p = private(model);
    let Model {
        ident, generics, ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let ser_where = super::bounds_via(model, &[super::fields_hub(model)]);
    let de_where = super::bounds_via(model, &[super::state_hub(model), super::fields_hub(model)]);
    let mut de_generics = generics.clone();
    de_generics.params.insert(0, syn::parse_quote!('__de));
    let (de_impl_generics, _, _) = de_generics.split_for_impl();

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::Serialize for #ident #ty_generics #ser_where {
            #[inline]
            fn serialize<__S: #p::Serializer>(&self, __serializer: __S) -> #p::Result<__S::Ok, __S::Error> {
                #p::table::serialize(self, __serializer)
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::Deserialize<'__de> for #ident #ty_generics #de_where {
            #[inline]
            fn deserialize<__D: #p::Deserializer<'__de>>(__deserializer: __D) -> #p::Result<Self, __D::Error> {
                #p::deserialize_state(__deserializer)
            }
        }
    }
}
