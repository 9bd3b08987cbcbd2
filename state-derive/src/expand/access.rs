//! Dict-like access: `get`, `set`, `to_json`, `write_json`, `field_ref`
//! and `field_mut` call the table-driven runtime (see `table`); only
//! `keys` is written out.

use super::{key, private};
use crate::model::{Member, Model};
use proc_macro2::TokenStream;
use quote::quote;

pub fn methods(model: &Model) -> TokenStream {
    let p = private(model);
    let keys = all_keys(model);
    // The table-driven runtime, or, with `#[state(serde = "user")]`, the
    // user's serde impls, through which every path reads and writes the
    // whole state (and `from_json` too).
    let (get, set, to_json, from_json, write_json) = if model.user_serde.is_some() {
        let from_json = quote! {
            #[inline]
            fn from_json(value: #p::serde_json::Value) -> #p::Result<Self, #p::StateError> {
                #p::user_serde::from_json(value)
            }
        };
        (
            quote!(#p::user_serde::get),
            quote!(#p::user_serde::set),
            quote!(#p::user_serde::to_json),
            from_json,
            TokenStream::new(),
        )
    } else {
        (
            quote!(#p::table::get),
            quote!(#p::table::set),
            quote!(#p::table::to_json_object),
            TokenStream::new(),
            quote! {
                #[inline]
                fn write_json(&self, __out: &mut #p::Vec<u8>) -> #p::Result<(), #p::serde_json::Error> {
                    #p::table::write_json(self, __out)
                }
            },
        )
    };

    quote! {
        #[inline]
        fn get(&self, key: &str) -> #p::Result<#p::serde_json::Value, #p::StateError> {
            #get(self, key)
        }

        #[inline]
        fn set(&mut self, key: &str, value: #p::serde_json::Value) -> #p::Result<(), #p::StateError> {
            #set(self, key, value)
        }

        #[inline]
        fn to_json(&self) -> #p::Result<#p::serde_json::Value, #p::StateError> {
            #to_json(self)
        }

        #from_json

        #write_json

        #[inline]
        fn keys() -> &'static [&'static str] {
            #keys
        }
    }
}

/// Every key, flattened bases' included: the delta's list of own keys, or
/// `__keys()` (see [`keys_item`]) when the state flattens a base.
pub fn all_keys(model: &Model) -> TokenStream {
    let p = private(model);
    if model.bases.is_empty() {
        let delta = super::delta_type(model);
        quote!(<#delta as #p::DeltaKeys>::KEYS.own)
    } else {
        quote!(__keys())
    }
}

/// For a state that flattens a base, `__keys()` in the `const _` block:
/// every key, built once, since a base's keys are known only at run time.
/// (The same for every instance of a generic struct: bases are concrete.)
pub fn keys_item(model: &Model) -> TokenStream {
    if model.bases.is_empty() {
        return TokenStream::new();
    }
    let p = private(model);
    let runs = model.members().into_iter().map(|member| match member {
        Member::Field(field) => {
            let key = key(field);
            quote!(&[#key])
        }
        Member::Base(base) => {
            let ty = &base.ty;
            quote!(<#ty as #p::State>::keys())
        }
    });
    quote! {
        fn __keys() -> &'static [&'static str] {
            static KEYS: #p::OnceLock<#p::Vec<&'static str>> = #p::OnceLock::new();
            KEYS.get_or_init(|| #p::flat_keys(&[#(#runs),*])).as_slice()
        }
    }
}

/// The inherent `field_ref` / `field_mut`, for states whose field types are
/// all `'static` (they go through `Any`).
pub fn typed_access(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        ident,
        vis,
        generics,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = super::bounds_via(model, &[super::fields_hub(model)]);
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            /// The field at `key` (a name, or a dotted path into a nested
            /// state) as `&T`, without JSON; `None` if there is no such field
            /// or it is not a `T`.
            #vis fn field_ref<__T: #p::Any>(&self, key: &str) -> #p::Option<&__T>
            where
                Self: 'static,
            {
                #p::table::field_ref(self, key)
            }

            /// The field at `key` as `&mut T`, without JSON; `None` if there
            /// is no such field or it is not a `T`. Writes through it bypass
            /// the field's reducer.
            #vis fn field_mut<__T: #p::Any>(&mut self, key: &str) -> #p::Option<&mut __T>
            where
                Self: 'static,
            {
                #p::table::field_mut(self, key)
            }
        }
    }
}
