//! Dict-like access, generated as a `match` on the key (no hash map):
//! `get`, `set`, `to_json`, `keys` and the type-erased field access behind
//! `field_ref` / `field_mut`. A dotted path enters a nested state through
//! its own methods, or any other field through its JSON value.

use super::{key, private};
use crate::model::{Member, Model};
use crate::text::type_text;
use proc_macro2::TokenStream;
use quote::quote;

pub fn methods(model: &Model) -> TokenStream {
    let p = private(model);
    let keys = model.fields.iter().map(key).collect::<Vec<_>>();
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let types = model
        .fields
        .iter()
        .map(|f| type_text(&f.ty))
        .collect::<Vec<_>>();
    let unknown = quote!(#p::Err(#p::unknown_field(__head, <Self as #p::State>::keys())));
    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    // A key of a base goes to the base, which knows its own fields.
    let is_base_key = is_base_key(model);
    let json_entries = model.members().into_iter().map(|member| match member {
        Member::Field(field) => {
            let name = &field.ident;
            let key = key(field);
            quote!(#p::json_field(&mut __map, #key, &self.#name);)
        }
        Member::Base(base) => {
            let name = &base.ident;
            quote!(#p::json_base(&mut __map, #p::State::to_json(&self.#name));)
        }
    });
    let keys_fn = if model.bases.is_empty() {
        quote! {
            #[inline]
            fn keys() -> &'static [&'static str] {
                &[#(#keys),*]
            }
        }
    } else {
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
        // Built once: a base's keys are known only at run time. (The same
        // for every instance of a generic struct: bases are concrete.)
        quote! {
            #[inline]
            fn keys() -> &'static [&'static str] {
                static KEYS: #p::OnceLock<#p::Vec<&'static str>> = #p::OnceLock::new();
                KEYS.get_or_init(|| #p::flat_keys(&[#(#runs),*])).as_slice()
            }
        }
    };

    quote! {
        #[inline]
        fn get(&self, key: &str) -> #p::Result<#p::serde_json::Value, #p::StateError> {
            use #p::{ViaJson as _, ViaState as _};
            match #p::split_path(key) {
                #(
                    (#keys, #p::None) => #p::to_json(#keys, &self.#names),
                    (#keys, #p::Some(__rest)) => #p::Field(&self.#names).get_below(key, __rest),
                )*
                #((__head, _) if #is_base_key => #p::State::get(&self.#base_names, key),)*
                (__head, _) => #unknown,
            }
        }

        #[inline]
        fn set(&mut self, key: &str, value: #p::serde_json::Value) -> #p::Result<(), #p::StateError> {
            use #p::{ViaJsonMut as _, ViaStateMut as _};
            match #p::split_path(key) {
                #(
                    (#keys, #p::None) => {
                        self.#names = #p::from_json(#keys, #types, value)?;
                        #p::Ok(())
                    }
                    (#keys, #p::Some(__rest)) => #p::FieldMut(&mut self.#names).set_below(key, __rest, value),
                )*
                #((__head, _) if #is_base_key => #p::State::set(&mut self.#base_names, key, value),)*
                (__head, _) => #unknown,
            }
        }

        #[inline]
        fn to_json(&self) -> #p::serde_json::Value {
            let mut __map = #p::JsonMap::new();
            #(#json_entries)*
            #p::JsonValue::Object(__map)
        }

        #keys_fn
    }
}

/// The hidden `FieldAny` impl and the inherent `field_ref` / `field_mut`,
/// for states whose field types are all `'static` (they go through `Any`).
pub fn typed_access(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        ident,
        vis,
        generics,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = super::bounds(model, super::SerdeBound::Static);
    let keys = model.fields.iter().map(key).collect::<Vec<_>>();
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let is_base_key = is_base_key(model);
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::FieldAny for #ident #ty_generics #where_clause {
            #[inline]
            fn field_any(&self, key: &str) -> #p::Option<&dyn #p::Any> {
                use #p::{NoAny as _, ViaAny as _};
                match #p::split_path(key) {
                    #(
                        (#keys, #p::None) => #p::Some(&self.#names),
                        (#keys, #p::Some(__rest)) => #p::Field(&self.#names).any_below(__rest),
                    )*
                    #((__head, _) if #is_base_key => #p::FieldAny::field_any(&self.#base_names, key),)*
                    _ => #p::None,
                }
            }

            #[inline]
            fn field_any_mut(&mut self, key: &str) -> #p::Option<&mut dyn #p::Any> {
                use #p::{NoAnyMut as _, ViaAnyMut as _};
                match #p::split_path(key) {
                    #(
                        (#keys, #p::None) => #p::Some(&mut self.#names),
                        (#keys, #p::Some(__rest)) => #p::FieldMut(&mut self.#names).any_below_mut(__rest),
                    )*
                    #((__head, _) if #is_base_key => #p::FieldAny::field_any_mut(&mut self.#base_names, key),)*
                    _ => #p::None,
                }
            }
        }

        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            /// The field at `key` (a name, or a dotted path into a nested
            /// state) as `&T`, without JSON; `None` if there is no such field
            /// or it is not a `T`.
            #vis fn field_ref<__T: #p::Any>(&self, key: &str) -> #p::Option<&__T> {
                #p::FieldAny::field_any(self, key)?.downcast_ref()
            }

            /// The field at `key` as `&mut T`, without JSON; `None` if there
            /// is no such field or it is not a `T`. Writes through it bypass
            /// the field's reducer.
            #vis fn field_mut<__T: #p::Any>(&mut self, key: &str) -> #p::Option<&mut __T> {
                #p::FieldAny::field_any_mut(self, key)?.downcast_mut()
            }
        }
    }
}

/// Per base, whether `__head` is one of its keys (a generated `match`).
fn is_base_key(model: &Model) -> Vec<TokenStream> {
    let p = private(model);
    model
        .bases
        .iter()
        .map(|b| {
            let d = model.base_delta(b);
            quote!(<#d as #p::DecodeDelta>::has_field(__head))
        })
        .collect()
}
