//! `State::schema`: a static table of the fields as written, each `merge`
//! field linked to its nested state's schema when it holds one.

use super::checks::is_generic;
use super::{key, private, reducer_value};
use crate::attrs::Scope;
use crate::model::{Builtin, Field, Model, Reducer};
use crate::text::{expr_text, type_text};
use proc_macro2::TokenStream;
use quote::quote;

pub fn method(model: &Model) -> TokenStream {
    let p = private(model);
    let name = model.ident.to_string();
    let docs = &model.docs;
    let evolution = evolution(model);
    if model.bases.is_empty() {
        let fields = model.fields.iter().map(|f| field_info(model, f, true));
        return quote! {
            #[inline]
            fn schema() -> &'static #p::Schema {
                static SCHEMA: #p::Schema = #p::Schema::new(#name, #docs, &[#(#fields),*])#evolution;
                &SCHEMA
            }
        };
    }
    // Built once: a base's schema is known only at run time. Runs of the
    // own fields' rows (shared with the field table) between the bases'.
    let (_, ty_generics, _) = model.generics.split_for_impl();
    let turbofish = ty_generics.as_turbofish();
    let own = quote!(__own_fields #turbofish ());
    let mut runs = Vec::new();
    let mut start = 0;
    for base in &model.bases {
        let end = base.position;
        if end > start {
            runs.push(quote!(&#own[#start..#end]));
        }
        let ty = &base.ty;
        runs.push(quote!(<#ty as #p::State>::schema().fields));
        start = end;
    }
    if start < model.fields.len() {
        runs.push(quote!(&#own[#start..]));
    }
    quote! {
        #[inline]
        fn schema() -> &'static #p::Schema {
            static SCHEMA: #p::OnceLock<#p::Schema> = #p::OnceLock::new();
            SCHEMA.get_or_init(|| #p::flat_schema(#name, #docs, &[#(#runs),*])#evolution)
        }
    }
}

/// `.with_version(N).with_migration(..)`, for what the struct declares.
fn evolution(model: &Model) -> TokenStream {
    let p = private(model);
    let version = (model.version != 1).then(|| {
        let version = model.version;
        quote!(.with_version(#version))
    });
    let migration = model.migrate.as_ref().map(|path| {
        let checked = quote::quote_spanned!(syn::spanned::Spanned::span(path)=> #p::migration_result(#path, from, data));
        quote!(.with_migration(|from, data| #checked))
    });
    quote!(#version #migration)
}

/// One field's `FieldInfo`. In a `static` (`in_static`), the link to a
/// nested state's schema cannot name the struct's generic parameters.
fn field_info(model: &Model, field: &Field, in_static: bool) -> TokenStream {
    let p = private(model);
    let key = key(field);
    let ty = type_text(&field.ty);
    let reducer = field.reducer.describe();
    let scope = match field.scope {
        Scope::Turn => quote!(#p::Scope::Turn),
        Scope::Persistent => quote!(#p::Scope::Persistent),
    };
    let default = match &field.default {
        Some(expr) => {
            let text = expr_text(expr);
            quote!(#p::Some(#text))
        }
        None => quote!(#p::None),
    };
    let doc = &field.docs;
    let mut info = quote!(#p::FieldInfo::new(#key, #ty, #reducer, #scope, #default, #doc));
    if !field.aliases.is_empty() {
        let aliases = &field.aliases;
        info = quote!(#info.with_aliases(&[#(#aliases),*]));
    }
    // A `merge` field may hold a nested state, whose schema its reducer
    // knows; any other field whose type is a state is found by probing it,
    // as is a `merge` field in a static when its type is concrete. (A
    // static cannot name the struct's generic parameters.)
    let merge = matches!(field.reducer, Reducer::Builtin(Builtin::Merge, _));
    let nameable = !in_static || model.generics.params.is_empty();
    if merge && nameable {
        let reducer = reducer_value(model, field);
        quote!(#info.with_nested(|| #p::Reducer::nested_schema(&#reducer)))
    } else if nameable || !is_generic(model, &field.ty) {
        let ty = &field.ty;
        quote!(#info.with_nested(|| {
            use #p::{NoStateSchema as _, ViaStateSchema as _};
            (&#p::Probe::<#ty>::new()).state_schema()
        }))
    } else {
        info
    }
}

/// For a state with flattened bases: a function returning its own fields'
/// rows, shared by the schema and the field table.
pub fn own_fields(model: &Model) -> TokenStream {
    if model.bases.is_empty() {
        return TokenStream::new();
    }
    let p = private(model);
    let (impl_generics, _, _) = model.generics.split_for_impl();
    let predicates = model.generics.where_clause.as_ref().map(|w| &w.predicates);
    let count = model.fields.len();
    let fields = model.fields.iter().map(|f| field_info(model, f, true));
    quote! {
        #[inline]
        fn __own_fields #impl_generics () -> &'static [#p::FieldInfo] where #predicates {
            static OWN: [#p::FieldInfo; #count] = [#(#fields),*];
            &OWN
        }
    }
}
