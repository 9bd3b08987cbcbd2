//! `#[derive(AgentState)]`. Use it through the `state-core` crate, which
//! re-exports it and documents the attribute language.

mod attrs;
mod errors;
mod expand;
mod meta;
mod model;
mod reducer;
mod rename;
mod text;

#[cfg(test)]
mod snapshot_tests;

use proc_macro::TokenStream;

/// Derives `state_core::State` for a struct, with its `{Name}Delta` partial
/// update type. See the `state-core` documentation for the attributes.
#[proc_macro_derive(AgentState, attributes(reducer, scope, default, state, serde))]
pub fn derive_agent_state(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}
