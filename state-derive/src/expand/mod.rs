//! Code generation from a validated [`Model`]: one file per artifact.

mod access;
mod apply;
mod bases;
mod checks;
mod default;
mod delta;
mod delta_impl;
mod fallback;
mod inherit;
mod json_schema;
mod schema;
mod serde;
mod table;
mod turn;

use crate::model::{Field, Model};
use crate::reducer::Reducer;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// Expands `#[derive(AgentState)]`: the generated items, or the errors plus
/// stub impls that keep one mistake from cascading into many.
pub fn derive(input: &syn::DeriveInput) -> TokenStream {
    match Model::from_input(input) {
        Ok(model) => expand(&model),
        Err(errors) => {
            let stubs = fallback::stubs(input, crate::model::derives_default(input));
            let errors = errors.into_compile_error();
            quote!(#errors #stubs)
        }
    }
}

fn expand(model: &Model) -> TokenStream {
    let delta_items = delta::items(model);
    let names = inherit::Names::new(model);
    let callback = inherit::callback(model, &names);
    let bases = inherit::calls(model, &names);
    let impls = [
        checks::items(model),
        delta::impl_setters(model),
        delta::impl_std(model),
        default::impl_default(model),
        delta_impl::impl_delta(model),
        serde::impl_serde(model),
        apply::impl_state(model),
        bases::impl_as_base(model),
        access::typed_access(model),
        table::impl_fields(model),
        schema::own_fields(model),
        access::keys_item(model),
        json_schema::impl_json_schema(model),
        inherit::base_tables(model, &names),
        inherit::from_bases(model),
    ];
    quote! {
        #delta_items
        #callback
        #bases
        #[doc(hidden)]
        #[allow(clippy::type_complexity)]
        const _: () = {
            #(#impls)*
        };
    }
}

/// `#krate::__private`, the one path generated code goes through.
fn private(model: &Model) -> TokenStream {
    let krate = &model.krate;
    quote!(#krate::__private)
}

/// The key of a field: its name without `r#`.
fn key(field: &Field) -> &str {
    &field.key
}

/// A positional local name, so user field names never clash with ours.
fn local(prefix: &str, index: usize) -> syn::Ident {
    format_ident!("__{}{}", prefix, index)
}

/// `__w0, __w1, ...`: one local per field.
fn local_names(prefix: &str, model: &Model) -> Vec<syn::Ident> {
    (0..model.fields.len()).map(|i| local(prefix, i)).collect()
}

/// `__b0, __b1, ...`: one local per flattened base.
fn base_locals(model: &Model) -> Vec<syn::Ident> {
    (0..model.bases.len()).map(|i| local("b", i)).collect()
}

/// The reducer as a value expression (see [`checks::reducer_value`]).
fn reducer_value(model: &Model, field: &Field) -> TokenStream {
    checks::reducer_value(model, field)
}

/// The type a node writes to this field: the field's own type for
/// `replace`, `append` and `append_by_id` (their `Reducer::Update` is the
/// field type, written out so that no generated item depends on the reducer
/// fitting: see [`checks`]), the `Update` of `add_messages` (a Vec of
/// messages for `Messages`) and of `merge` (the map itself, or a nested
/// state's delta), or the `update = Type` of a custom reducer.
fn update_type(model: &Model, field: &Field) -> TokenStream {
    let p = private(model);
    let ty = &field.ty;
    match &field.reducer {
        Reducer::Builtin(builtin, _) if builtin.projects_update() => {
            let name = format_ident!("{}", builtin.type_name());
            checks::around(
                ty,
                quote!(<#p::reducer::#name as #p::Reducer<),
                quote!(#ty),
                quote!(>>::Update),
            )
        }
        Reducer::Builtin(..) => quote!(#ty),
        Reducer::With {
            update: Some(update),
            ..
        } => quote!(#update),
        Reducer::With { update: None, .. } => quote!(#ty),
    }
}

/// What an impl that touches every field's value needs of the field and
/// update types: only what its body uses, since every predicate of a where
/// clause costs the type checker in every item that has it. (Each bound is
/// `for<'__r>`: false, it keeps the body quiet, and the one error is the
/// check's, at the field.)
#[derive(Clone, Copy)]
enum Needs {
    /// The delta's `Clone`.
    Clone,
    /// The delta's `PartialEq`.
    PartialEq,
    /// The delta's table: all of [`StateField`] of the field types, and of
    /// the update types what their slots print, encode and decode.
    DeltaTable,
    /// The state's table: [`StateField`] of the field types; of the
    /// reducers only that they fit.
    Fields,
    /// `schemars::JsonSchema` of the state and the delta: the delta
    /// table's, plus `JsonSchema` of the field types.
    Schema,
}

/// The struct's where clause plus the bounds `needs` on every field type
/// and explicit update type, and the facts [`checks`] establishes about
/// the reducers, each spanned at the field.
fn bounds(model: &Model, needs: Needs) -> TokenStream {
    let p = private(model);
    let table_updates =
        quote!(#p::Debug + #p::Clone + #p::PartialEq + #p::Serialize + #p::DecodeUpdate);
    let (traits, facts) = match needs {
        Needs::Clone => (quote!(#p::Clone), Facts::Update(quote!(#p::Clone))),
        Needs::PartialEq => (quote!(#p::PartialEq), Facts::Update(quote!(#p::PartialEq))),
        Needs::DeltaTable => (quote!(#p::StateField), Facts::Update(table_updates)),
        Needs::Fields => (quote!(#p::StateField), Facts::Fit),
        Needs::Schema => (
            quote!(#p::StateField + #p::schemars::JsonSchema),
            Facts::Update(table_updates),
        ),
    };
    // One bound per distinct type: forty `String` fields need one
    // `String: StateField`. (Types compare as syntax trees: turning tokens
    // into text goes through the compiler, slowly.)
    let written = model
        .fields
        .iter()
        .flat_map(|field| field.written_types().map(move |t| (field, t)));
    let extra = distinct_by(written, |&(_, t)| t)
        .into_iter()
        .map(|(field, t)| checks::bound(model, &field.ty, quote!(#t), traits.clone()))
        .collect::<Vec<_>>();
    where_clause_with(model, extra, &facts)
}

/// The items whose `key` no earlier item had, in order: one per distinct
/// key, at its first.
fn distinct_by<T, K: PartialEq>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
) -> Vec<T> {
    let mut seen = Vec::new();
    items
        .into_iter()
        .filter(|item| {
            let k = key(item);
            let first = !seen.contains(&k);
            if first {
                seen.push(k);
            }
            first
        })
        .collect()
}

/// For an impl that only calls runtime code over the state's or the
/// delta's table: the struct's where clause, the reducer and base facts,
/// and `Type: Trait` for each `(Type, Trait)` in `hubs` (the state or its
/// delta, and the generated trait whose impl carries the field types'
/// bounds). One predicate per hub instead of one per field type, and a
/// missing trait on a field type is still reported once, at the field.
fn bounds_via(model: &Model, hubs: &[(TokenStream, TokenStream)]) -> TokenStream {
    let extra = hubs
        .iter()
        .map(|(ty, traits)| checks::bound(model, &model.ident, ty.clone(), traits.clone()))
        .collect::<Vec<_>>();
    where_clause(model, extra)
}

/// The state's type, `Name<T, ..>`.
fn state_type(model: &Model) -> TokenStream {
    let ident = &model.ident;
    let (_, ty_generics, _) = model.generics.split_for_impl();
    quote!(#ident #ty_generics)
}

/// The delta's type, `NameDelta<T, ..>`.
fn delta_type(model: &Model) -> TokenStream {
    let delta = &model.delta;
    let (_, ty_generics, _) = model.generics.split_for_impl();
    quote!(#delta #ty_generics)
}

/// `(delta type, DeltaTable)`: the hub of the delta's table-driven impls.
fn delta_hub(model: &Model) -> (TokenStream, TokenStream) {
    let p = private(model);
    (delta_type(model), quote!(#p::DeltaTable))
}

/// `(state type, Fields)`: the hub of the state's table-driven impls.
fn fields_hub(model: &Model) -> (TokenStream, TokenStream) {
    let p = private(model);
    (state_type(model), quote!(#p::Fields))
}

/// `(state type, State<Delta = delta type>)`: for impls that use the state
/// through `State` (naming the delta, so that a generic state's
/// `<S as State>::Delta` still normalizes).
fn state_hub(model: &Model) -> (TokenStream, TokenStream) {
    let p = private(model);
    let delta = delta_type(model);
    (state_type(model), quote!(#p::State<Delta = #delta>))
}

/// The struct's where clause, the reducer facts of [`checks`] (that each
/// reducer fits its field) and `extra`.
fn where_clause(model: &Model, extra: impl IntoIterator<Item = TokenStream>) -> TokenStream {
    where_clause_with(model, extra, &Facts::Fit)
}

/// How much of a reducer's fact a where clause states (see
/// [`checks::reducer_bounds`]).
pub enum Facts {
    /// That the reducer fits its field: enough for an item that only names
    /// the update type, or moves it.
    Fit,
    /// Also these traits of the update type, for an item that clones,
    /// compares, prints or encodes it.
    Update(TokenStream),
}

fn where_clause_with(
    model: &Model,
    extra: impl IntoIterator<Item = TokenStream>,
    facts: &Facts,
) -> TokenStream {
    let existing = model
        .generics
        .where_clause
        .as_ref()
        .map(|w| w.predicates.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    let reducers = checks::reducer_bounds(model, facts);
    let bases = base_bounds(model);
    let extra = extra.into_iter();
    quote!(where #(#existing,)* #(#reducers,)* #(#bases,)* #(#extra,)*)
}

/// What the generated code uses of a flattened base and its delta.
fn base_bounds(model: &Model) -> Vec<TokenStream> {
    let p = private(model);
    model
        .bases
        .iter()
        .flat_map(|base| {
            let ty = &base.ty;
            let delta = model.base_delta(base);
            [
                checks::bound(
                    model,
                    ty,
                    quote!(#ty),
                    quote!(#p::State + #p::Fields + #p::Serialize + #p::serde::de::DeserializeOwned),
                ),
                checks::bound(
                    model,
                    ty,
                    delta,
                    quote!(#p::DeltaTable + #p::DeltaKeys + #p::StateField),
                ),
            ]
        })
        .collect()
}
