//! `State::schema`: a static table of the fields as written (`__FIELDS`,
//! shared with the field table; per instance for a generic state, see
//! `per_instance`), each field that may hold a nested state linked to that
//! state's schema.

use super::checks::is_generic;
use super::{key, private};
use crate::attrs::Scope;
use crate::model::{Field, Model};
use crate::text::{expr_text, type_text};
use proc_macro2::TokenStream;
use quote::quote;

pub fn method(model: &Model) -> TokenStream {
    let p = private(model);
    let name = model.ident.to_string();
    let docs = &model.docs;
    let evolution = evolution(model);
    let per = per_instance(model);
    let rows = rows_with(model, per);
    if model.bases.is_empty() && per {
        // A static cannot name the generic parameters; an inline constant
        // can, and is one per instance.
        return quote! {
            #[inline]
            fn schema() -> &'static #p::Schema {
                const { &#p::Schema::new(#name, #docs, #rows)#evolution }
            }
        };
    }
    if model.bases.is_empty() {
        return quote! {
            #[inline]
            fn schema() -> &'static #p::Schema {
                static SCHEMA: #p::Schema = #p::Schema::new(#name, #docs, &__FIELDS)#evolution;
                &SCHEMA
            }
        };
    }
    // Built once: a base's schema is known only at run time. Runs of the
    // own fields' rows between the bases'.
    let place = rows_place(model, per);
    let mut runs = Vec::new();
    let mut start = 0;
    for base in &model.bases {
        let end = base.position;
        if end > start {
            runs.push(quote!(&#place[#start..#end]));
        }
        let ty = &base.ty;
        runs.push(quote!(<#ty as #p::State>::schema().fields));
        start = end;
    }
    if start < model.fields.len() {
        runs.push(quote!(&#place[#start..]));
    }
    let build = quote!(#p::flat_schema(#name, #docs, &[#(#runs),*])#evolution);
    if model.generics.params.is_empty() {
        return quote! {
            #[inline]
            fn schema() -> &'static #p::Schema {
                static SCHEMA: #p::OnceLock<#p::Schema> = #p::OnceLock::new();
                SCHEMA.get_or_init(|| #build)
            }
        };
    }
    // A static in a generic function is one for every instance, whose
    // bases' schemas may differ: one schema per type instead.
    quote! {
        #[inline]
        fn schema() -> &'static #p::Schema {
            #p::schema_of::<Self>(|| #build)
        }
    }
}

/// `.with_version(N).with_migration(..)`, for what the struct declares.
fn evolution(model: &Model) -> TokenStream {
    let version = (model.version != 1).then(|| {
        let version = model.version;
        quote!(.with_version(#version))
    });
    let migration = model.migrate.as_ref().map(|path| {
        let checked = quote::quote_spanned!(syn::spanned::Spanned::span(path)=> __migration(#path, from, data));
        quote!(.with_migration(|from, data| #checked))
    });
    quote!(#version #migration)
}

/// Own field `index`'s `FieldInfo`, for the rows next to
/// [`nested_schema_fn`].
fn field_info(model: &Model, args: &TokenStream, index: usize, field: &Field) -> TokenStream {
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
    quote!(#info.with_nested(__nested_schema #args, #index))
}

/// Whether the rows are per instance of a generic state (`__rows()`),
/// not one static (`__FIELDS`): when a field's type names a generic
/// parameter, so that a field of type `T` links the schema of the state
/// `T` is in that instance.
fn per_instance(model: &Model) -> bool {
    // Asked once per expansion (callers pass it on): `is_generic` prints
    // the type.
    !model.generics.params.is_empty() && model.fields.iter().any(|f| is_generic(model, &f.ty))
}

/// `::<T, N>`: the state's type and const parameters, for the rows'
/// functions of a generic state (lifetimes are inferred).
fn turbofish(model: &Model, per: bool) -> TokenStream {
    let args = model
        .generics
        .params
        .iter()
        .filter_map(|param| match param {
            syn::GenericParam::Type(t) => Some(&t.ident),
            syn::GenericParam::Const(c) => Some(&c.ident),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect::<Vec<_>>();
    match per && !args.is_empty() {
        true => quote!(::<#(#args),*>),
        false => TokenStream::new(),
    }
}

/// The own fields' rows, as an expression of type
/// `&'static [FieldInfo; N]`.
pub fn rows(model: &Model) -> TokenStream {
    rows_with(model, per_instance(model))
}

fn rows_with(model: &Model, per: bool) -> TokenStream {
    let place = rows_place(model, per);
    match per {
        true => place,
        false => quote!(&#place),
    }
}

/// The own fields' rows as a place to index: `__FIELDS`, or the reference
/// `__rows::<T>()` (indexing derefs it) when they are per instance.
fn rows_place(model: &Model, per: bool) -> TokenStream {
    match per {
        true => {
            let args = turbofish(model, per);
            quote!(__rows #args())
        }
        false => quote!(__FIELDS),
    }
}

/// The schema of the nested state field `field` may hold, as an
/// expression: its type, probed for being a state, whatever its reducer.
/// A field of a generic parameter's type is probed in a function generic
/// like the state, where a parameter bounded by `State` is one.
fn nested_arm(model: &Model, field: &Field) -> TokenStream {
    let p = private(model);
    let ty = &field.ty;
    quote!((&#p::Probe::<#ty>::new()).state_schema())
}

/// `__nested_schema(index)`, for the rows: the schema of the nested state
/// own field `index` holds. One function for all the fields, each row
/// keeping its index, instead of a closure per field; generic like the
/// state when the rows are per instance.
fn nested_schema_fn(model: &Model, per: bool) -> TokenStream {
    let p = private(model);
    // One arm per distinct type, answering for the later fields of that
    // type too: the type is probed once.
    let first = model.first_of_each_type();
    let arms = (0..model.fields.len())
        .filter(|&i| first[i] == i)
        .map(|i| {
            let arm = nested_arm(model, &model.fields[i]);
            let alike = (i..model.fields.len()).filter(|&j| first[j] == i);
            quote!(#(#alike)|* => #arm,)
        })
        .collect::<Vec<_>>();
    if arms.is_empty() {
        return TokenStream::new();
    }
    let (generics, where_clause) = fn_generics(model, per);
    quote! {
        fn __nested_schema #generics (index: usize) -> #p::Option<&'static #p::Schema> #where_clause {
            use #p::{NoStateSchema as _, ViaStateSchema as _};
            match index {
                #(#arms)*
                _ => #p::None,
            }
        }
    }
}

/// The generic parameters and where clause of the rows' functions: the
/// state's own, when the rows are per instance.
fn fn_generics(model: &Model, per: bool) -> (TokenStream, TokenStream) {
    if !per {
        return (TokenStream::new(), TokenStream::new());
    }
    let (impl_generics, _, where_clause) = model.generics.split_for_impl();
    (quote!(#impl_generics), quote!(#where_clause))
}

/// The own fields' rows, `__FIELDS`, for the schema and the field table,
/// the `__nested_schema` they link to, and the `__migration` adapter of
/// `#[state(migrate = f)]`. (At the level of the `const _`
/// block, a static cannot name the struct's generic parameters: see
/// [`nested_arm`].)
pub fn own_fields(model: &Model) -> TokenStream {
    let p = private(model);
    let count = model.fields.len();
    let per = per_instance(model);
    let args = turbofish(model, per);
    let fields = model
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| field_info(model, &args, i, f));
    let nested = nested_schema_fn(model, per);
    let migration = model.migrate.is_some().then(|| {
        // Here, not in state-core: an error about the migration function
        // names this function and the derive, not a state-core file.
        quote! {
            fn __migration<__F: #p::MigrationFn>(
                migrate: __F,
                from: u32,
                data: &mut #p::serde_json::Value,
            ) -> #p::Result<(), #p::String>
            where
                __F::Outcome: #p::MigrationOutcome,
            {
                #p::MigrationOutcome::into_result(#p::MigrationFn::migrate(&migrate, from, data))
            }
        }
    });
    let rows = match per {
        true => {
            let (generics, where_clause) = fn_generics(model, per);
            quote! {
                const fn __rows #generics () -> &'static [#p::FieldInfo; #count] #where_clause {
                    const { &[#(#fields),*] }
                }
            }
        }
        false => quote!(static __FIELDS: [#p::FieldInfo; #count] = [#(#fields),*];),
    };
    quote! {
        #rows
        #nested
        #migration
    }
}
