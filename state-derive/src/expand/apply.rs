//! `impl State`: `check` stages every field (all errors, no changes), then
//! `commit` commits every field (no errors), so a delta applies
//! all-or-nothing; a nested state is checked with the state around it.
//! `apply` is the two in one, with a fast path for the common delta.

use super::turn::begin_turn;
use super::{
    SerdeBound, access, base_locals, bounds, key, local_names, private, project, reducer_value,
    schema, unpack_more,
};
use crate::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn impl_state(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        ident,
        generics,
        delta,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = bounds(model, SerdeBound::State);
    let access = access::methods(model);
    let schema = schema::method(model);
    let begin_turn = begin_turn(model);
    let check = check(model);
    let commit = commit(model);
    let apply = apply(model);

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::State for #ident #ty_generics #where_clause {
            type Delta = #delta #ty_generics;

            #apply
            #check
            #commit

            #begin_turn
            #access
            #schema
        }
    }
}

/// `apply`. A delta with no out-of-line writes (no overwrite, no second
/// write to one field: the common case) takes the fast path, as a
/// hand-written apply would: only the written reducer fields are staged,
/// then written `replace` fields are moved into place and the staged ones
/// committed. Any other delta goes through `check` / `commit`.
fn apply(model: &Model) -> TokenStream {
    let p = private(model);
    let delta = &model.delta;
    let writes = local_names("w", model);
    let plans = local_names("plan", model);
    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let base_writes = base_locals(model);
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let split = base_names.len().saturating_sub(1);
    let (staged_base_names, last_base) = base_names.split_at(split);
    let (staged_base_writes, last_write) = base_writes.split_at(split);
    let staged_bases = staged_base_writes;
    let mut stages = Vec::new();
    let mut commits = Vec::new();
    for (i, field) in model.fields.iter().enumerate() {
        let name = &field.ident;
        let (w, plan) = (&writes[i], &plans[i]);
        if field.reducer.is_replace() {
            commits.push(quote! {
                if let #p::Some(__value) = #w {
                    self.#name = __value;
                }
            });
        } else {
            let reducer = reducer_value(model, field);
            let key = key(field);
            stages
                .push(quote!(let #plan = #p::stage(&#reducer, &self.#name, #key, #w, #p::None)?;));
            commits.push(quote!(#p::commit(&#reducer, &mut self.#name, #plan);));
        }
    }
    quote! {
        #[inline]
        fn apply(&mut self, delta: Self::Delta) -> #p::Result<(), #p::StateError> {
            if delta.__more.is_some() {
                let __checked = #p::State::check(self, delta)?;
                #p::State::commit(self, __checked);
                return #p::Ok(());
            }
            let #delta { #(#names: #writes,)* #(#base_names: #base_writes,)* __more: _ } = delta;
            #(#stages)*
            // A base's keys are this state's: its errors name them as they are.
            #(let #staged_bases = #p::State::check(&self.#staged_base_names, #staged_base_writes)?;)*
            // The last base applies as the last step that can fail: on error
            // nothing else has changed yet, and its own apply is atomic.
            #(#p::State::apply(&mut self.#last_base, #last_write)?;)*
            #(#commits)*
            #(#p::State::commit(&mut self.#staged_base_names, #staged_bases);)*
            #p::Ok(())
        }
    }
}

/// `check`: stages every field against the state (all errors, no changes)
/// and hands back the accepted writes as a delta (a fallible custom
/// reducer's result as an overwrite).
fn check(model: &Model) -> TokenStream {
    let p = private(model);
    let Parts {
        names,
        writes,
        rare,
        reducers,
        base_names,
        base_writes,
        unpack,
    } = parts(model);
    let delta = &model.delta;
    let plans = local_names("plan", model);
    let projects = model.fields.iter().map(|f| project(model, f));
    let keys = model.fields.iter().map(key);
    quote! {
        #[inline]
        fn check(&self, delta: Self::Delta) -> #p::Result<#p::Checked<Self::Delta>, #p::StateError> {
            let #delta { #(#names: #writes,)* #(#base_names: #base_writes,)* __more } = delta;
            #unpack
            #(let #plans = #p::stage(&#reducers, &self.#names, #keys, #writes, #rare)?;)*
            // A base's keys are this state's: its errors name them as they are.
            #(let #base_writes = #p::State::check(&self.#base_names, #base_writes)?;)*
            let mut __out = <Self::Delta as #p::Default>::default();
            #(#p::unstage(&mut __out.#names, &mut __out.__more, #projects, #plans);)*
            #(__out.#base_names = #p::Checked::into_inner(#base_writes);)*
            #p::Ok(#p::checked(__out))
        }
    }
}

/// `commit`: applies the writes `check` accepted (no errors).
fn commit(model: &Model) -> TokenStream {
    let p = private(model);
    let Parts {
        names,
        writes,
        rare,
        reducers,
        base_names,
        base_writes,
        unpack,
    } = parts(model);
    let delta = &model.delta;
    quote! {
        #[inline]
        fn commit(&mut self, checked: #p::Checked<Self::Delta>) {
            let #delta { #(#names: #writes,)* #(#base_names: #base_writes,)* __more } = #p::Checked::into_inner(checked);
            #unpack
            #(#p::commit(&#reducers, &mut self.#names, #p::restage(#writes, #rare));)*
            #(#p::State::commit(&mut self.#base_names, #p::checked(#base_writes));)*
        }
    }
}

/// What `check` and `commit` both take apart: a delta's slots, its
/// out-of-line part and its bases' deltas, and each field's reducer.
struct Parts<'a> {
    names: Vec<&'a syn::Ident>,
    writes: Vec<syn::Ident>,
    rare: Vec<syn::Ident>,
    reducers: Vec<TokenStream>,
    base_names: Vec<&'a syn::Ident>,
    base_writes: Vec<syn::Ident>,
    unpack: TokenStream,
}

fn parts(model: &Model) -> Parts<'_> {
    Parts {
        names: model.fields.iter().map(|f| &f.ident).collect(),
        writes: local_names("w", model),
        rare: local_names("m", model),
        reducers: model
            .fields
            .iter()
            .map(|f| reducer_value(model, f))
            .collect(),
        base_names: model.bases.iter().map(|b| &b.ident).collect(),
        base_writes: base_locals(model),
        unpack: unpack_more(model, quote!(__more)),
    }
}
