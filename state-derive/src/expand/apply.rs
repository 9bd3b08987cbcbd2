//! `impl State`: `check` stages every field (all errors, no changes), then
//! `commit` commits every field (no errors), so a delta applies
//! all-or-nothing; a nested state is checked with the state around it.
//! `apply` is the two in one, without building the checked delta.

use super::turn::begin_turn;
use super::{access, base_locals, key, local_names, private, reducer_value, schema};
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
    // The bodies reach field types only through the tables and reducers.
    let delta_is_delta = (super::delta_type(model), quote!(#p::Delta));
    let mut hubs = vec![super::fields_hub(model), delta_is_delta];
    if model.user_serde.is_some() {
        // Checked once, at the attribute (`checks`).
        hubs.push((super::state_type(model), quote!(#p::user_serde::OwnSerde)));
    }
    let where_clause = super::bounds_via(model, &hubs);
    let access = access::methods(model);
    let schema = schema::method(model);
    let begin_turn = begin_turn(model);
    let check = check(model);
    let commit = commit(model);
    let apply = apply(model);
    let table = table_methods(&p, quote!(self));

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
            #table
        }
    }
}

/// `State`'s hidden methods that give the field table, each returning
/// `body` (`self`, or the fallback's `loop {}`).
pub fn table_methods(p: &TokenStream, body: TokenStream) -> TokenStream {
    quote! {
        #[inline]
        fn __fields(&self) -> &dyn #p::Fields {
            #body
        }

        #[inline]
        fn __fields_mut(&mut self) -> &mut dyn #p::Fields {
            #body
        }

        #[inline]
        fn __static_fields(&self) -> &(dyn #p::Fields + 'static)
        where
            Self: 'static,
        {
            #body
        }

        #[inline]
        fn __static_fields_mut(&mut self) -> &mut (dyn #p::Fields + 'static)
        where
            Self: 'static,
        {
            #body
        }
    }
}

/// `apply`: every reducer field's writes are staged (all errors, no
/// changes), then written `replace` fields are moved into place and the
/// staged ones committed. One runtime call per field and phase, generic
/// only over the field's types, so it is compiled once per field type.
/// The last step that can fail applies at once, since on its error nothing
/// else has changed yet: the last base if there is one (its own apply is
/// atomic), else the last reducer field.
///
/// Not `#[inline]`, unlike the state's other `State` methods: compiled like a
/// hand-written `apply`, in the crate that declares the state, and inlined
/// only where LLVM would inline that. `#[inline]` got the whole body
/// inlined into a caller that calls it once (a node loop, a runner), where
/// LLVM copied the delta (1.3 KB for 40 fields) into the inlined body and
/// each write into a stack temporary before testing it: 1.12x-1.5x the
/// instructions of `if let Some(v) = d.f { s.f = v }` for each field
/// (BENCHMARKS.md, section 1, `apply_plain40`). Out of line, it reads the
/// caller's delta in place. (A hidden generic `#[inline(never)]` method
/// would keep the code generation in the callers, for more compile
/// instructions in all, in the declaring crate's type checking:
/// BENCHMARKS.md, section 5.)
fn apply(model: &Model) -> TokenStream {
    let p = private(model);
    let writes = field_moves(model);
    // The field applied at once, when no base is: the last to stage.
    let now = match model.bases.is_empty() {
        true => model
            .fields
            .iter()
            .rposition(|field| !field.reducer.is_replace()),
        false => None,
    };
    let stages = stages(model, &writes, now);
    // After the staged fields' errors: on its error nothing has changed.
    let at_once = now.map(|i| {
        let field = &model.fields[i];
        let reducer = reducer_value(model, field);
        let key = key(field);
        let (name, w) = (&field.ident, &writes[i]);
        quote!(#p::reduce_now(&#reducer, &mut self.#name, #key, #w)?;)
    });
    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let split = base_names.len().saturating_sub(1);
    let (staged_base_names, last_base) = base_names.split_at(split);
    let staged_base_checks = &base_locals(model)[..split];
    let commits = commits(model, &writes, |plan, _| quote!(#plan))
        .into_iter()
        .enumerate()
        .filter(|(i, _)| now != Some(*i))
        .map(|(_, commit)| commit);
    quote! {
        fn apply(&mut self, delta: Self::Delta) -> #p::Result<(), #p::StateError> {
            #stages
            #at_once
            // A base's keys are this state's: its errors name them as they are.
            #(let #staged_base_checks = #p::State::check(&self.#staged_base_names, delta.#staged_base_names)?;)*
            #(#p::State::apply(&mut self.#last_base, delta.#last_base)?;)*
            #(#commits)*
            #(#p::State::commit(&mut self.#staged_base_names, #staged_base_checks);)*
            #p::Ok(())
        }
    }
}

/// `check`: stages every field against the state (all errors, no changes)
/// and hands back the accepted writes as a delta (a fallible custom
/// reducer's result as an overwrite), the delta it was given with its
/// reducer slots replaced by their staged plans.
fn check(model: &Model) -> TokenStream {
    let p = private(model);
    let takes = model.fields.iter().map(|field| {
        let name = &field.ident;
        quote!(#p::take(&mut delta.#name))
    });
    let stages = stages(model, &takes.collect::<Vec<_>>(), None);
    let plans = local_names("plan", model);
    let replans = model
        .fields
        .iter()
        .zip(&plans)
        .filter(|(field, _)| !field.reducer.is_replace())
        .map(|(field, plan)| {
            let name = &field.ident;
            quote!(delta.#name = #p::Slot::from_plan(#plan);)
        });
    let base_names = model.bases.iter().map(|b| &b.ident).collect::<Vec<_>>();
    let base_writes = base_locals(model);
    quote! {
        #[inline]
        fn check(&self, mut delta: Self::Delta) -> #p::Result<#p::Checked<Self::Delta>, #p::StateError> {
            #stages
            // A base's keys are this state's: its errors name them as they are.
            #(let #base_writes = #p::State::check(&self.#base_names, #p::take(&mut delta.#base_names))?;)*
            #(#replans)*
            #(delta.#base_names = #p::Checked::into_inner(#base_writes);)*
            #p::Ok(#p::checked(delta))
        }
    }
}

/// `commit`: applies the writes `check` accepted (no errors).
///
/// Not `#[inline]`, for the reason `apply` is not: inlined into a caller
/// that calls it once (a store's step, a runner), LLVM copied the checked
/// delta into the inlined body before moving each write: 781 instructions
/// against 525 for the hand-written moves of the same 3 writes on 40
/// `replace` fields (1.49x; BENCHMARKS.md, section 1, `commit_plain40`).
fn commit(model: &Model) -> TokenStream {
    let p = private(model);
    let writes = field_moves(model);
    let commits = commits(model, &writes, |_, w| quote!(#p::restage(#w)));
    let base_names = model.bases.iter().map(|b| &b.ident);
    quote! {
        fn commit(&mut self, checked: #p::Checked<Self::Delta>) {
            let delta = #p::Checked::into_inner(checked);
            #(#commits)*
            #(#p::State::commit(&mut self.#base_names, #p::checked(delta.#base_names));)*
        }
    }
}

/// `delta.field` for each field: a write moved out of the delta where it
/// is used, with no copy of the delta into locals first (measured: a few
/// percent of `apply`).
fn field_moves(model: &Model) -> Vec<TokenStream> {
    let fields = model.fields.iter().map(|field| &field.ident);
    fields.map(|name| quote!(delta.#name)).collect()
}

/// One commit per field: `put` for a `replace` field's write, `commit` of
/// a reducer field's plan (`plan(plan local, write local)`).
fn commits(
    model: &Model,
    writes: &[TokenStream],
    plan: impl Fn(&syn::Ident, &TokenStream) -> TokenStream,
) -> Vec<TokenStream> {
    let p = private(model);
    let plans = local_names("plan", model);
    model
        .fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let name = &field.ident;
            if field.reducer.is_replace() {
                let w = &writes[i];
                quote!(#p::put(&mut self.#name, #w);)
            } else {
                let reducer = reducer_value(model, field);
                let plan = plan(&plans[i], &writes[i]);
                quote!(#p::commit(&#reducer, &mut self.#name, #plan);)
            }
        })
        .collect()
}

/// Each reducer field's staging but the one `except`, with `writes[i]`
/// the write of field `i`, and one accumulator for their first error with
/// one early return after them: a `?` per field would drop, on each error
/// path, everything not yet moved out of the delta (measured: compile
/// time).
fn stages(model: &Model, writes: &[TokenStream], except: Option<usize>) -> TokenStream {
    let p = private(model);
    let plans = local_names("plan", model);
    let stages = model
        .fields
        .iter()
        .enumerate()
        .filter(|&(i, field)| !field.reducer.is_replace() && except != Some(i))
        .map(|(i, field)| {
            let reducer = reducer_value(model, field);
            let key = key(field);
            let (name, w, plan) = (&field.ident, &writes[i], &plans[i]);
            quote!(let #plan = #p::stage(&#reducer, &self.#name, #key, #w, &mut __result);)
        })
        .collect::<Vec<_>>();
    if stages.is_empty() {
        return TokenStream::new();
    }
    quote! {
        let mut __result = #p::Ok(());
        #(#stages)*
        __result?;
    }
}
