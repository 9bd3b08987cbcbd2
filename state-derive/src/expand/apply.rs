//! `impl State` and `impl Staging`: `apply` stages every field (all errors,
//! no changes), then commits every field (no errors), so a delta applies
//! all-or-nothing; a nested state is staged with the state around it.

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
    let staging = staging(model);
    let apply = apply(model);

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::State for #ident #ty_generics #where_clause {
            type Delta = #delta #ty_generics;

            #apply

            #begin_turn
            #access
            #schema
        }

        #staging
    }
}

/// `apply`. A delta with no out-of-line writes (no overwrite, no second
/// write to one field: the common case) takes the fast path, as a
/// hand-written apply would: only the written reducer fields are staged,
/// then written `replace` fields are moved into place and the staged ones
/// committed. Any other delta goes through `stage_delta` / `commit_delta`.
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
                let __checked = #p::Staging::stage_delta(self, delta)?;
                #p::Staging::commit_delta(self, __checked);
                return #p::Ok(());
            }
            let #delta { #(#names: #writes,)* #(#base_names: #base_writes,)* __more: _ } = delta;
            #(#stages)*
            // A base's keys are this state's: its errors name them as they are.
            #(let #staged_bases = #p::Staging::stage_delta(&self.#staged_base_names, #staged_base_writes)?;)*
            // The last base applies as the last step that can fail: on error
            // nothing else has changed yet, and its own apply is atomic.
            #(#p::State::apply(&mut self.#last_base, #last_write)?;)*
            #(#commits)*
            #(#p::Staging::commit_delta(&mut self.#staged_base_names, #staged_bases);)*
            #p::Ok(())
        }
    }
}

/// `impl Staging`: `stage_delta` stages every field against the state (all
/// errors, no changes) and hands back the accepted writes as a delta;
/// `commit_delta` applies them (no errors).
fn staging(model: &Model) -> TokenStream {
    let p = private(model);
    let Model {
        ident,
        generics,
        delta,
        ..
    } = model;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let where_clause = bounds(model, SerdeBound::State);
    let names = model.fields.iter().map(|f| &f.ident).collect::<Vec<_>>();
    let writes = local_names("w", model);
    let rare = local_names("m", model);
    let plans = local_names("plan", model);
    let reducers = model
        .fields
        .iter()
        .map(|f| reducer_value(model, f))
        .collect::<Vec<_>>();
    let projects = model.fields.iter().map(|f| project(model, f));
    let keys = model.fields.iter().map(key);
    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let base_writes = base_locals(model);
    let unpack = unpack_more(model, quote!(__more));

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::Staging for #ident #ty_generics #where_clause {
            #[inline]
            fn stage_delta(&self, delta: #delta #ty_generics) -> #p::Result<#delta #ty_generics, #p::StateError> {
                let #delta { #(#names: #writes,)* #(#base_names: #base_writes,)* __more } = delta;
                #unpack
                #(let #plans = #p::stage(&#reducers, &self.#names, #keys, #writes, #rare)?;)*
                // A base's keys are this state's: its errors name them as they are.
                #(let #base_writes = #p::Staging::stage_delta(&self.#base_names, #base_writes)?;)*
                let mut __out = <#delta #ty_generics as #p::Default>::default();
                #(#p::unstage(&mut __out.#names, &mut __out.__more, #projects, #plans);)*
                #(__out.#base_names = #base_writes;)*
                #p::Ok(__out)
            }

            #[inline]
            fn commit_delta(&mut self, checked: #delta #ty_generics) {
                let #delta { #(#names: #writes,)* #(#base_names: #base_writes,)* __more } = checked;
                #unpack
                #(#p::commit(&#reducers, &mut self.#names, #p::restage(#writes, #rare));)*
                #(#p::Staging::commit_delta(&mut self.#base_names, #base_writes);)*
            }
        }
    }
}
