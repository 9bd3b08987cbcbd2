//! `schemars::JsonSchema` for the state and its delta, on request
//! (`#[state(json_schema)]`: every field type must then implement
//! `JsonSchema`), emitted through `__private::with_schemars!`, which asks
//! for state-core's `schemars` feature when it is off.

use super::{Needs, bounds, key, private, update_type};
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_json_schema(model: &Model) -> TokenStream {
    if !model.json_schema {
        return TokenStream::new();
    }
    let p = private(model);
    let Model {
        ident,
        generics,
        delta,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let base_bounds = model.bases.iter().flat_map(|base| {
        let ty = &base.ty;
        let d = model.base_delta(base);
        [
            super::checks::bound(model, ty, quote!(#ty), quote!(#p::schemars::JsonSchema)),
            super::checks::bound(model, ty, d, quote!(#p::schemars::JsonSchema)),
        ]
    });
    let where_clause = bounds(model, Needs::Schema);
    let where_clause = quote!(#where_clause #(#base_bounds,)*);
    // A base's schema is its own state's (or delta's), inlined, not a `$ref`.
    let base_types = model.bases.iter().map(|b| &b.ty).collect::<Vec<_>>();
    let base_deltas = model
        .bases
        .iter()
        .map(|b| model.base_delta(b))
        .collect::<Vec<_>>();
    let checks = super::checks::json_schema_items(model);
    let name = ident.to_string();
    let delta_name = delta.to_string();
    let keys = model.fields.iter().map(key).collect::<Vec<_>>();
    let types = model.fields.iter().map(|f| &f.ty).collect::<Vec<_>>();
    let delta_fields = model.fields.iter().map(|field| {
        let key = key(field);
        let ty = &field.ty;
        let update = update_type(model, field);
        let overwrite = if field.reducer.is_replace() {
            quote!(#p::None)
        } else {
            quote!(#p::Some(__generator.subschema_for::<#ty>()))
        };
        quote!((#key, __generator.subschema_for::<#update>(), #overwrite))
    });
    quote! {
        #p::with_schemars! {
            #checks

            #[automatically_derived]
            impl #impl_generics #p::schemars::JsonSchema for #ident #ty_generics #where_clause {
                fn schema_name() -> #p::Cow<'static, str> {
                    #p::Cow::Borrowed(#name)
                }
                fn json_schema(__generator: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                    #p::with_base_properties(
                        #p::state_json_schema(
                            <Self as #p::State>::schema(),
                            [#((#keys, __generator.subschema_for::<#types>())),*],
                        ),
                        [#(<#base_types as #p::schemars::JsonSchema>::json_schema(__generator)),*],
                    )
                }
            }

            #[automatically_derived]
            impl #impl_generics #p::schemars::JsonSchema for #delta #ty_generics #where_clause {
                fn schema_name() -> #p::Cow<'static, str> {
                    #p::Cow::Borrowed(#delta_name)
                }
                fn json_schema(__generator: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                    #p::with_base_properties(
                        #p::delta_json_schema(
                            <#ident #ty_generics as #p::State>::schema(),
                            [#(#delta_fields),*],
                        ),
                        [#(<#base_deltas as #p::schemars::JsonSchema>::json_schema(__generator)),*],
                    )
                }
            }
        }
    }
}
