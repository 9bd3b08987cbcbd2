//! Code generation from a validated [`Model`]: one file per artifact.

mod access;
mod apply;
mod bases;
mod checks;
mod default;
mod delta;
mod delta_impl;
mod fallback;
mod json_schema;
mod nested;
mod schema;
mod serde;
mod table;
mod turn;

use crate::model::{Field, Model, Reducer};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;

/// Expands `#[derive(AgentState)]`: the generated items, or the errors plus
/// stub impls that keep one mistake from cascading into many.
pub fn derive(input: &syn::DeriveInput) -> TokenStream {
    match Model::from_input(input) {
        Ok(model) => expand(&model),
        Err(errors) => {
            let stubs = fallback::stubs(input, crate::model::derives_default(input));
            let errors = errors.write_errors();
            quote!(#errors #stubs)
        }
    }
}

fn expand(model: &Model) -> TokenStream {
    let delta_items = delta::items(model);
    let impls = [
        checks::items(model),
        delta::impl_setters(model),
        default::impl_default(model),
        delta_impl::impl_delta(model),
        serde::impl_serde(model),
        apply::impl_state(model),
        nested::impl_merge_reducer(model),
        bases::impl_as_base(model),
        access::typed_access(model),
        table::impl_fields(model),
        schema::own_fields(model),
        json_schema::impl_json_schema(model),
    ];
    quote! {
        #delta_items
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
fn key(field: &Field) -> String {
    field.ident.unraw().to_string()
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

/// Moves a delta's out-of-line part (`boxed`, an `Option<Box<More>>`) into
/// one `Option<More<..>>` local per field, `__m0, __m1, ...`.
fn unpack_more(model: &Model, boxed: TokenStream) -> TokenStream {
    let p = private(model);
    let more = &model.more;
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let rare = local_names("m", model);
    quote! {
        #(let mut #rare = #p::None;)*
        if let #p::Some(__boxed) = #boxed {
            let #more { #(#names,)* } = *__boxed;
            #(#rare = #p::Some(#names);)*
        }
    }
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

/// `|m: &mut Companion| &mut m.field`, the accessor the runtime uses to
/// reach one field's rare writes.
fn project(model: &Model, field: &Field) -> TokenStream {
    let more = &model.more;
    let (_, ty_generics, _) = model.generics.split_for_impl();
    let ident = &field.ident;
    quote!(|__m: &mut #more #ty_generics| &mut __m.#ident)
}

/// Which trait bounds an impl needs on the field and update types.
#[derive(Clone, Copy)]
enum SerdeBound {
    /// `Serialize`, for the `Serialize` impls.
    Serialize,
    /// `DeserializeOwned`, for decoding deltas.
    Deserialize,
    /// Everything `impl State` uses: both serde traits.
    State,
    /// `impl State`'s bounds plus `schemars::JsonSchema`.
    Schema,
    /// `PartialEq`, for the delta's equality.
    PartialEq,
}

/// The struct's where clause plus the bounds `kind` needs on every field
/// type and update type, and the facts [`checks`] establishes about the
/// reducers, each spanned at the field.
fn bounds(model: &Model, kind: SerdeBound) -> TokenStream {
    let p = private(model);
    let ser = quote!(#p::Serialize);
    let de = quote!(#p::serde::de::DeserializeOwned);
    let schema = quote!(#p::schemars::JsonSchema);
    // Each trait, and whether it is `DeserializeOwned`.
    let traits = match kind {
        SerdeBound::Serialize => vec![(ser, false)],
        SerdeBound::Deserialize => vec![(de, true)],
        SerdeBound::State => vec![(ser, false), (de, true)],
        SerdeBound::Schema => vec![(ser, false), (de, true), (schema, false)],
        SerdeBound::PartialEq => vec![(quote!(#p::PartialEq), false)],
    };
    // One bound per distinct type: forty `String` fields need one
    // `String: Serialize`, and every predicate costs the type checker.
    let mut seen = std::collections::HashSet::new();
    let extra = model.fields.iter().flat_map(|field| {
        let ty = &field.ty;
        // Each type the field's values and updates have, and whether it is
        // a projection (`<AddMessages as Reducer<T>>::Update`).
        let mut types = vec![(quote!(#ty), false)];
        match &field.reducer {
            Reducer::With {
                update: Some(update),
                ..
            } => types.push((quote!(#update), false)),
            Reducer::Builtin(builtin, _) if builtin.projects_update() => {
                types.push((update_type(model, field), true));
            }
            _ => {}
        }
        types
            .into_iter()
            .filter(|(t, _)| seen.insert(t.to_string()))
            .filter_map(|(t, projection)| {
                let generic = checks::is_generic(model, &t);
                let traits = traits
                    .iter()
                    // `for<'_> Update: DeserializeOwned` beside the same
                    // bound on the type `Update` normalizes to is
                    // ambiguous, and the update of `add_messages` (a Vec of
                    // messages) deserializes anyway.
                    .filter(|(_, deserialize)| generic || !projection || !deserialize)
                    .map(|(t, _)| t)
                    .collect::<Vec<_>>();
                (!traits.is_empty()).then(|| checks::bound(model, ty, t, quote!(#(#traits)+*)))
            })
            .collect::<Vec<_>>()
    });
    where_clause(model, extra.collect::<Vec<_>>())
}

/// The struct's where clause, the reducer facts of [`checks`] and `extra`.
fn where_clause(model: &Model, extra: impl IntoIterator<Item = TokenStream>) -> TokenStream {
    let existing = model
        .generics
        .where_clause
        .as_ref()
        .map(|w| w.predicates.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    let reducers = checks::reducer_bounds(model);
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
                    quote!(#p::DecodeDelta + #p::SerializeEntries + #p::PartialEq + #p::Debug + #p::Clone),
                ),
            ]
        })
        .collect()
}
