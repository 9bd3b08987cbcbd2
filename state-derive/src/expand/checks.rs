//! Early checks, each reported once and at the field: that a field's reducer
//! fits its type, and that its type has the traits every state field needs.
//!
//! The rest of the generated code must then not repeat these errors:
//! - it calls a field's reducer through a function returning `impl
//!   Reducer<Field, Update = ...>` (here), so it relies on that bound, not on
//!   the reducer's impls; only the function's body can fail;
//! - it states the other facts in its where clauses, as `for<'__r> Type:
//!   Trait` when `Type` names no generic parameter. Such a bound is not
//!   checked where it is written, only where the item is used, so a missing
//!   trait is one error here instead of one per generated item. A bound on a
//!   type naming a generic parameter is an ordinary one, carried to the
//!   users of every generated item.
//!
//! What a field type needs (`Debug`, `Clone`, `PartialEq`, `Serialize`,
//! `Deserialize`) is one trait, `StateField`, so that a type missing
//! several of them is one error.

use super::{Facts, local, private, update_type};
use crate::model::{Field, Model, mentions_self};
use crate::reducer::Reducer;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};

/// The checks, as items for the generated `const _: () = { ... };` block:
/// one function per distinct reducer and field type that returns the
/// reducer as `impl Reducer<Field, Update = ...>` (the rest of the generated
/// code calls it, so it relies on that bound and not on the reducer's
/// impls), and one function that names every distinct field type in a
/// trait-bounded call.
pub fn items(model: &Model) -> TokenStream {
    let p = private(model);
    let (impl_generics, _, _) = model.generics.split_for_impl();
    // Always a `where` (of the macro's span), so that rustc does not suggest
    // adding one at the field, where it would not compile.
    let predicates = model.generics.where_clause.as_ref().map(|w| &w.predicates);
    let where_clause = quote!(where #predicates);
    let reducers = model.fields.iter().enumerate().filter_map(|(i, field)| {
        if field.reducer.is_replace() || mentions_self(&field.ty) || model.first_alike(i) != i {
            return None;
        }
        let name = reducer_fn(i);
        let ty = &field.ty;
        let update = update_type(model, field);
        let value = reducer_expr(model, field);
        let returns = around(
            ty,
            quote!(impl #p::Reducer<),
            quote!(#ty, Update = #update),
            quote!(>),
        );
        Some(quote! {
            #[inline]
            fn #name #impl_generics () -> #returns #where_clause {
                #value
            }
        })
    });
    let fields = field_types(model);
    let bases = base_checks(model);
    let user_serde = user_serde_check(model);
    quote! {
        #(#reducers)*
        #bases
        #user_serde
        #[allow(dead_code)]
        fn __state_field_types() {
            fn state_field<__T: #p::StateField>() {}
            #(state_field::<#fields>();)*
        }
    }
}

/// With `#[state(serde = "user")]` on a struct that is not generic, that
/// the user derived its serde impls: one error, at `"user"`.
fn user_serde_check(model: &Model) -> TokenStream {
    let Some(span) = model.user_serde else {
        return TokenStream::new();
    };
    if !model.generics.params.is_empty() {
        return TokenStream::new();
    }
    let p = private(model);
    let ident = &model.ident;
    let check = respan(quote!(own_serde::<#ident>), span);
    quote! {
        #[allow(dead_code)]
        fn __own_serde() {
            fn own_serde<__T: #p::user_serde::OwnSerde>() {}
            #check();
        }
    }
}

/// When the struct is not generic, that no key is declared twice: a field of
/// this struct and a base's, or two bases'. Both fields are pointed at.
fn base_checks(model: &Model) -> TokenStream {
    if model.bases.is_empty() {
        return TokenStream::new();
    }
    let p = private(model);
    // The panic is reported where the macro is named: at the field.
    let panic_at = |span: Span| respan(quote!(#p::panic!), span);
    let mut clashes = Vec::new();
    if model.generics.params.is_empty() {
        let tree = |b: &crate::model::Base| {
            let d = model.base_delta(b);
            quote!(<#d as #p::DeltaKeys>::KEYS)
        };
        for (i, base) in model.bases.iter().enumerate() {
            let base_tree = tree(base);
            let base_name = crate::text::type_text(&base.ty);
            for field in &model.fields {
                let key = field.key.clone();
                let message = format!(
                    "`{key}` is also a field of `{base_name}`, flattened into this state; rename one of them"
                );
                let panic = panic_at(field.ident.span());
                clashes.push(quote_spanned! {field.ident.span()=>
                    const _: () = if #base_tree.contains(#key) { #panic(#message) };
                });
            }
            for other in &model.bases[i + 1..] {
                let other_tree = tree(other);
                let message = format!(
                    "the flattened states `{base_name}` and `{}` share a field name; rename one of them",
                    crate::text::type_text(&other.ty)
                );
                let panic = panic_at(other.ident.span());
                clashes.push(quote_spanned! {other.ident.span()=>
                    const _: () = if #base_tree.overlaps(&#other_tree) { #panic(#message) };
                });
            }
        }
    }
    // (That a base is a state at all is checked once, by the delta's
    // field of type `<Base as State>::Delta`.)
    quote!(#(#clashes)*)
}

/// `JsonSchema` for every field type, checked as [`items`] checks the
/// other traits; for `#[state(json_schema)]`.
pub fn json_schema_items(model: &Model) -> TokenStream {
    let p = private(model);
    let fields = field_types(model);
    quote! {
        #[allow(dead_code)]
        fn __state_field_schemas() {
            fn state_field_json_schema<__T: #p::schemars::JsonSchema>() {}
            #(state_field_json_schema::<#fields>();)*
        }
    }
}

/// The field types (and explicit `update = Type` types) that name none of
/// the struct's generic parameters, each spanned at itself; a type written
/// again is checked once, at its first field.
fn field_types(model: &Model) -> Vec<TokenStream> {
    let types = model.fields.iter().flat_map(Field::written_types);
    super::distinct_by(types, |ty| *ty)
        .into_iter()
        .filter(|ty| !is_generic(model, ty))
        .map(|ty| ty.to_token_stream())
        .collect()
}

/// `__reducer0`: the function returning the reducer of field 0.
pub fn reducer_fn(index: usize) -> syn::Ident {
    local("reducer", index)
}

/// The reducer of `field` as a value: `Replace` itself (it fits every
/// type), or a call of the field's checked reducer function.
pub fn reducer_value(model: &Model, field: &Field) -> TokenStream {
    if field.reducer.is_replace() || mentions_self(&field.ty) {
        return reducer_expr(model, field);
    }
    let index = model
        .fields
        .iter()
        .position(|f| f.ident == field.ident)
        .unwrap_or_default();
    // Fields of one type and reducer share one function.
    let name = reducer_fn(model.first_alike(index));
    let (_, ty_generics, _) = model.generics.split_for_impl();
    let turbofish = ty_generics.as_turbofish();
    quote!(#name #turbofish ())
}

/// The reducer as written: a built-in's unit struct, spanned at its name in
/// the attribute, or the `with = path` value, as a reducer (see
/// [`with_reducer`]).
fn reducer_expr(model: &Model, field: &Field) -> TokenStream {
    let p = private(model);
    match &field.reducer {
        Reducer::Builtin(builtin, span) => {
            let name = format_ident!("{}", builtin.type_name());
            respan(quote!(#p::reducer::#name), *span)
        }
        Reducer::With { path, update } => with_reducer(model, field, path, update.as_deref()),
    }
}

/// The value `path` names as the field's reducer: itself when it is a
/// reducer, a function `fn(&mut T, U)` wrapped when `update = U` is given.
/// Which one it is, autoref specialisation decides (`Pick`); a value that
/// fits neither is one error at the path, in the words of `FieldReducer`
/// (no `update`) or `UpdateReducer` (see state-core's `runtime::with`).
fn with_reducer(
    model: &Model,
    field: &Field,
    path: &syn::Path,
    update: Option<&syn::Type>,
) -> TokenStream {
    let p = private(model);
    let ty = &field.ty;
    // The error is reported at the value's type, the `_`: at the path.
    let span = path_span(path);
    let value = quote_spanned!(span=> _);
    let (update, select) = match update {
        Some(update) => (
            quote!(#update),
            quote!(#value as #p::reducer::UpdateReducer<#ty, #update, _, _>),
        ),
        None => (
            quote!(#ty),
            quote!(#value as #p::reducer::FieldReducer<#ty, _, _>),
        ),
    };
    let call = quote_spanned! {span=>
        <#select>::reducer(__kind, __value)
    };
    let body = quote! {
        #[allow(unused_imports)]
        use #p::{PickFunction as _, PickOther as _, PickReducer as _};
        let __value = #path;
        let __kind = #p::Pick::<#ty, #update, _>::new(&__value).kind();
        #call
    };
    // The block at the path too: "return type was inferred to be `f` here".
    let mut block = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, body);
    block.set_span(span);
    block.into_token_stream()
}

/// The span of a path's first token (a span cannot be joined on stable).
fn path_span(path: &syn::Path) -> Span {
    path.to_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |token| token.span())
}

/// `for<'__r> AddMessages: Reducer<Field>` for every distinct `add_messages`
/// and `merge` field type (a plain `AddMessages: Reducer<Field, Update:
/// StateField>` when the type is generic): the generated items name its
/// `Update` type, which exists only when the reducer fits. (The other
/// built-ins' update type is the field type, written out.)
///
/// With [`Facts::Update`], for the items that clone, compare, print or
/// encode the update, the fact also states those traits of the update type.
/// Only those items carry it: a where clause that bounds an associated
/// type costs the type checker in every item that has it (measured: a
/// third of the crate's type-checking time when every impl had it),
/// while a bare `for<'__r>` fact is set aside for the impl it restates,
/// and the update type normalizes as usual.
pub fn reducer_bounds(model: &Model, facts: &Facts) -> Vec<TokenStream> {
    let p = private(model);
    // One fact per distinct (reducer, type): five `merge` maps of one type
    // state it once.
    model
        .fields
        .iter()
        .enumerate()
        .filter(|&(i, _)| model.first_alike(i) == i)
        .filter_map(|(_, field)| match field.reducer {
            Reducer::Builtin(builtin, _) if builtin.projects_update() => Some((field, builtin)),
            _ => None,
        })
        .map(|(field, builtin)| {
            let ty = &field.ty;
            let name = format_ident!("{}", builtin.type_name());
            let reducer = quote!(#p::reducer::#name);
            // The delta holds `Update`: every generated item needs what
            // a field type has of it, even where `Reducer` is not
            // implemented. (Not `DeserializeOwned` where the type is
            // concrete: beside the same bound on the type `Update`
            // normalizes to, rustc finds it ambiguous; the decoding
            // functions' own bounds check it there.)
            if is_generic(model, ty) {
                around(
                    ty,
                    quote!(#reducer: #p::Reducer<),
                    quote!(#ty),
                    quote!(, Update: #p::StateField>),
                )
            } else {
                around(
                    ty,
                    quote!(for<'__r> #reducer: #p::Reducer<),
                    quote!(#ty),
                    match facts {
                        Facts::Fit => quote!(>),
                        Facts::Update(traits) => quote!(, Update: #traits>),
                    },
                )
            }
        })
        .collect()
}

/// `Type: Bound`, spanned at `node`; as `for<'__r> Type: Bound` when it
/// names none of the struct's generic parameters (see the module docs).
pub fn bound(
    model: &Model,
    node: &impl ToTokens,
    bounded: TokenStream,
    bound: TokenStream,
) -> TokenStream {
    let open = if is_generic(model, &bounded) || is_generic(model, &bound) {
        quote!()
    } else {
        quote!(for<'__r>)
    };
    around(node, open, quote!(#bounded:), bound)
}

/// Whether `ty` names one of the struct's generic parameters (or `Self`,
/// which only the impls can name).
pub fn is_generic(model: &Model, ty: &impl ToTokens) -> bool {
    crate::model::mentions_param(&model.generics, ty)
}

/// `open`, `inner` and `close`, where `open` and `close` (our tokens) are
/// re-spanned to the start and the end of the user's `node`: rustc then
/// reports an error about the whole at all of `node`. `inner` keeps its own
/// spans, so that an error inside it (an unknown type, say) is reported
/// where it is.
pub fn around(
    node: &impl ToTokens,
    open: TokenStream,
    inner: TokenStream,
    close: TokenStream,
) -> TokenStream {
    let mut tokens = node.to_token_stream().into_iter();
    let Some(first) = tokens.next() else {
        return quote!(#open #inner #close);
    };
    let start = first.span();
    let end = tokens.last().map_or(start, |t| t.span());
    let open = respan(open, start);
    let close = respan(close, end);
    quote!(#open #inner #close)
}

/// Our `tokens`, all re-spanned to `span`.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut out =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                out.set_span(span);
                TokenTree::Group(out)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
