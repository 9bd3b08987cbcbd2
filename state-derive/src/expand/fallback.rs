//! Stub impls emitted beside the errors of invalid input (as serde_derive
//! and thiserror do), so the user sees the macro's errors and not a flood of
//! follow-on ones wherever the state, its delta or their setters are used.
//! The stubs are never run: the crate does not compile while the errors
//! stand.

use crate::attrs::{self, StateAttrs};
use crate::reducer::{Builtin, Reducer};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;

pub fn stubs(input: &syn::DeriveInput, derives_default: bool) -> TokenStream {
    // What can be read of the struct attribute despite its errors.
    let state = attrs::parse_state_attrs(&input.attrs).unwrap_or_else(|_| StateAttrs::default());
    let krate = state
        .krate
        .unwrap_or_else(|| syn::parse_quote!(::state_core));
    let p = quote!(#krate::__private);
    let ident = &input.ident;
    let vis = &input.vis;
    let delta = state
        .delta
        .unwrap_or_else(|| format_ident!("{}Delta", ident));
    let generics = &input.generics;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let mut de_generics = generics.clone();
    de_generics.params.insert(0, syn::parse_quote!('__de));
    let (de_impl_generics, _, _) = de_generics.split_for_impl();

    // The delta uses every parameter, as the real one does.
    let types = generics.type_params().map(|t| &t.ident);
    let lifetimes = generics.lifetimes().map(|l| &l.lifetime);
    let marker = quote!(#p::Option<(#(*const #types,)* #(&#lifetimes (),)*)>);

    // Stub serde impls for `ty` (the struct or its delta).
    let serde_stubs = |ty: &dyn quote::ToTokens| {
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::Serialize for #ty #ty_generics #where_clause {
                fn serialize<__S: #p::Serializer>(&self, _: __S) -> #p::Result<__S::Ok, __S::Error> {
                    loop {}
                }
            }

            #[automatically_derived]
            impl #de_impl_generics #p::Deserialize<'__de> for #ty #ty_generics #where_clause {
                fn deserialize<__D: #p::Deserializer<'__de>>(_: __D) -> #p::Result<Self, __D::Error> {
                    loop {}
                }
            }
        }
    };
    // A struct that names the owner of its serde impls (`serde = "user"`,
    // even misspelled) most likely derives them: no stubs to conflict.
    let state_serde = (!names_serde_owner(&input.attrs)).then(|| serde_stubs(ident));
    let delta_serde = serde_stubs(&delta);
    let default = (!derives_default).then(|| {
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::Default for #ident #ty_generics #where_clause {
                fn default() -> Self {
                    loop {}
                }
            }
        }
    });
    let setters = setters(input, &p);
    let table = super::apply::table_methods(&p, quote!(loop {}));
    quote! {
        #[doc(hidden)]
        #vis struct #delta #generics #where_clause {
            __marker: #marker,
        }

        #[automatically_derived]
        impl #impl_generics #delta #ty_generics #where_clause {
            #setters
        }

        const _: () = {
            #default

            #[automatically_derived]
            impl #impl_generics #p::Default for #delta #ty_generics #where_clause {
                fn default() -> Self {
                    Self { __marker: #p::None }
                }
            }

            #[automatically_derived]
            impl #impl_generics #p::Delta for #delta #ty_generics #where_clause {
                fn is_empty(&self) -> bool {
                    true
                }
                fn fields(&self) -> #p::FieldNames {
                    #p::Default::default()
                }
                fn merge_with(self, _: Self, _: #p::MergeMode) -> #p::Result<Self, #p::StateError> {
                    #p::Ok(self)
                }
                fn from_json(_: #p::serde_json::Value) -> #p::Result<Self, #p::StateError> {
                    loop {}
                }
            }

            #[automatically_derived]
            impl #impl_generics #p::State for #ident #ty_generics #where_clause {
                type Delta = #delta #ty_generics;
                fn apply(&mut self, _: Self::Delta) -> #p::Result<(), #p::StateError> {
                    #p::Ok(())
                }
                fn check(&self, _: Self::Delta) -> #p::Result<#p::Checked<Self::Delta>, #p::StateError> {
                    loop {}
                }
                fn commit(&mut self, _: #p::Checked<Self::Delta>) {}
                fn begin_turn(&mut self) {}
                fn get(&self, _: &str) -> #p::Result<#p::serde_json::Value, #p::StateError> {
                    loop {}
                }
                fn set(&mut self, _: &str, _: #p::serde_json::Value) -> #p::Result<(), #p::StateError> {
                    loop {}
                }
                fn to_json(&self) -> #p::Result<#p::serde_json::Value, #p::StateError> {
                    loop {}
                }
                fn keys() -> &'static [&'static str] {
                    &[]
                }
                fn schema() -> &'static #p::Schema {
                    loop {}
                }
                #table
            }

            #[automatically_derived]
            impl #impl_generics #ident #ty_generics #where_clause {
                #vis fn field_ref<__T: #p::Any>(&self, _: &str) -> #p::Option<&__T> {
                    #p::None
                }
                #vis fn field_mut<__T: #p::Any>(&mut self, _: &str) -> #p::Option<&mut __T> {
                    #p::None
                }
            }

            #state_serde
            #delta_serde
        };
    }
}

/// Whether a `#[state(...)]` attribute has a `serde = ...` key, whatever
/// its value.
fn names_serde_owner(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("state"))
        .filter_map(|attr| attr.meta.require_list().ok())
        .any(|list| {
            let tokens: Vec<_> = list.tokens.clone().into_iter().collect();
            tokens.windows(2).any(|pair| {
                matches!(&pair[0], proc_macro2::TokenTree::Ident(i) if i == "serde")
                    && matches!(&pair[1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '=')
            })
        })
}

/// A setter per named field, taking what the real one takes where that can
/// be told from the (possibly invalid) attributes, and anything otherwise;
/// plus `overwrite_x` for a field with a reducer other than `replace`.
fn setters(input: &syn::DeriveInput, p: &TokenStream) -> TokenStream {
    let syn::Data::Struct(syn::DataStruct {
        fields: syn::Fields::Named(fields),
        ..
    }) = &input.data
    else {
        return TokenStream::new();
    };
    let names = fields
        .named
        .iter()
        .filter_map(|f| f.ident.as_ref().map(|i| i.unraw().to_string()))
        .collect::<Vec<_>>();
    let mut out = TokenStream::new();
    for field in &fields.named {
        let Some(name) = &field.ident else { continue };
        let vis = &field.vis;
        let ty = &field.ty;
        let parsed = attrs::parse_field_attrs(&field.attrs).ok();
        let reducer = parsed.as_ref().and_then(|a| a.reducer.as_ref());
        let has_reducer_attr = field.attrs.iter().any(|a| a.path().is_ident("reducer"));
        // `<__V>`: anything, where the update type is not known.
        let (param, value) = match reducer {
            None if has_reducer_attr => (quote!(<__V>), quote!(__V)),
            Some(Reducer::Builtin(Builtin::AddMessages, _)) => (quote!(<__V>), quote!(__V)),
            Some(Reducer::With {
                update: Some(update),
                ..
            }) => (quote!(), quote!(impl #p::IntoUpdate<#update>)),
            _ => (quote!(), quote!(impl #p::IntoUpdate<#ty>)),
        };
        out.extend(quote! {
            #[must_use]
            #vis fn #name #param (self, _: #value) -> Self {
                self
            }
        });
        let replace = matches!(reducer, Some(Reducer::Builtin(Builtin::Replace, _)))
            || reducer.is_none() && !has_reducer_attr;
        let overwrite = format!("overwrite_{}", name.unraw());
        if !replace && !names.contains(&overwrite) {
            let overwrite = format_ident!("{}", overwrite);
            out.extend(quote! {
                #[must_use]
                #vis fn #overwrite(self, _: impl #p::IntoUpdate<#ty>) -> Self {
                    self
                }
            });
        }
    }
    out
}
