//! The state's field table (`__private::Fields`): its own fields' schema
//! rows, and projections from a field's index to the field. `get`, `set`,
//! `to_json`, `Serialize`, `Deserialize`, `field_ref` and `field_mut` are
//! runtime code in state-core that walks it; nothing else here is per
//! field.

use super::{Needs, bounds, private};
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_fields(model: &Model) -> TokenStream {
    let p = private(model);
    let ident = &model.ident;
    let (impl_generics, ty_generics, _) = model.generics.split_for_impl();
    let where_clause = bounds(model, Needs::Fields);
    let delta = super::delta_type(model);
    let any = project(model, quote!(any_projection), quote!(any), quote!(&));
    let any_mut = project(model, quote!(any_projection), quote!(any_mut), quote!(&mut));
    // A struct with no generic parameters is `'static`: its `Any` access
    // serves the plain one too. A generic one may not be, and writes the
    // plain one apart.
    let (field, field_mut) = if model.generics.params.is_empty() {
        (
            quote!(#p::Option::map(self.field_any(index), #p::table::AnyRef::into_field)),
            quote!(#p::Option::map(self.field_any_mut(index), #p::table::AnyMut::into_field)),
        )
    } else {
        (
            project(model, quote!(projection), quote!(field), quote!(&)),
            project(model, quote!(projection), quote!(field_mut), quote!(&mut)),
        )
    };
    let bases = bases(model);
    let keys = super::access::all_keys(model);
    let user_serde = model.user_serde.map(|_| {
        quote! {
            #[inline]
            fn user_serde(&self) -> bool {
                true
            }
        }
    });
    let state_name = ident.to_string();
    let rows = super::schema::rows(model);

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::Fields for #ident #ty_generics #where_clause {
            #[inline]
            fn name(&self) -> &'static str {
                #state_name
            }

            #[inline]
            fn fields(&self) -> &'static [#p::FieldInfo] {
                #rows
            }

            #[inline]
            fn keys(&self) -> &'static [&'static str] {
                #keys
            }

            #[inline]
            fn own_keys(&self) -> &'static [&'static str] {
                // The delta's key list, written once.
                <#delta as #p::DeltaKeys>::KEYS.own
            }

            #[inline]
            fn field(&self, index: usize) -> #p::Option<#p::table::FieldRef<'_>> {
                #field
            }

            #[inline]
            fn field_mut(&mut self, index: usize) -> #p::Option<#p::table::FieldMut<'_>> {
                #field_mut
            }

            #user_serde

            #[inline]
            fn field_any(&self, index: usize) -> #p::Option<#p::table::AnyRef<'_>>
            where
                Self: 'static,
            {
                #any
            }

            #[inline]
            fn field_any_mut(&mut self, index: usize) -> #p::Option<#p::table::AnyMut<'_>>
            where
                Self: 'static,
            {
                #any_mut
            }

            #bases
        }
    }
}

/// One of the table's projections from an index to a field: the
/// projection `probe` makes of each field type (`projection`, or
/// `any_projection` for a `'static` state) gives its function `method`,
/// called with the field borrowed `by`. One autoref probe per field type,
/// not per field (measured: a probe is most of a match arm's type
/// checking).
fn project(model: &Model, probe: TokenStream, method: TokenStream, by: TokenStream) -> TokenStream {
    let p = private(model);
    let first = model.first_of_each_type();
    let shared = |i: usize| quote::format_ident!("__projection{}", first[i]);
    let probes = model
        .fields
        .iter()
        .enumerate()
        .filter(|&(i, _)| first[i] == i)
        .map(|(i, field)| {
            let (name, ty) = (shared(i), &field.ty);
            quote!(let #name = (&#p::Probe::<#ty>::new()).#probe();)
        });
    let arms = model.fields.iter().enumerate().map(|(i, field)| {
        let (projection, name) = (shared(i), &field.ident);
        quote!(#i => #p::Some((#projection.#method)(#by self.#name)),)
    });
    quote! {
        use #p::{ViaStateField as _, ViaValueField as _};
        #(#probes)*
        match index {
            #(#arms)*
            _ => #p::None,
        }
    }
}

/// The flattened bases, by position among the own fields.
fn bases(model: &Model) -> TokenStream {
    if model.bases.is_empty() {
        return TokenStream::new();
    }
    let p = private(model);
    let index = (0..model.bases.len()).collect::<Vec<_>>();
    let names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let projections = base_projections(model, quote!(#p::ErasedState));
    quote! {
        #projections

        #[inline]
        fn base_any(&self, index: usize) -> #p::Option<&(dyn #p::Fields + 'static)>
        where
            Self: 'static,
        {
            match index {
                #(#index => #p::Some(&self.#names),)*
                _ => #p::None,
            }
        }

        #[inline]
        fn base_any_mut(&mut self, index: usize) -> #p::Option<&mut (dyn #p::Fields + 'static)>
        where
            Self: 'static,
        {
            match index {
                #(#index => #p::Some(&mut self.#names),)*
                _ => #p::None,
            }
        }
    }
}

/// A table's `bases`, `base` and `base_mut` (the state's and the delta's,
/// each base erased as `object`); the tables' defaults say there are none.
pub fn base_projections(model: &Model, object: TokenStream) -> TokenStream {
    if model.bases.is_empty() {
        return TokenStream::new();
    }
    let p = private(model);
    let positions = model.bases.iter().map(|b| b.position);
    let index = (0..model.bases.len()).collect::<Vec<_>>();
    let names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    quote! {
        #[inline]
        fn bases(&self) -> &'static [usize] {
            &[#(#positions),*]
        }

        #[inline]
        fn base(&self, index: usize) -> #p::Option<&dyn #object> {
            match index {
                #(#index => #p::Some(&self.#names),)*
                _ => #p::None,
            }
        }

        #[inline]
        fn base_mut(&mut self, index: usize) -> #p::Option<&mut dyn #object> {
            match index {
                #(#index => #p::Some(&mut self.#names),)*
                _ => #p::None,
            }
        }
    }
}
