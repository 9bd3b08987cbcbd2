//! `#[derive(AgentState)]` and `#[tool]`. Use them through the
//! `state-core` and `state-agent` crates, which re-export them and
//! document them.

mod attrs;
mod errors;
mod expand;
mod meta;
mod model;
mod reducer;
mod rename;
mod text;
mod tool;

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

/// Makes a function a tool a model can call (state-agent's `Tool`). See
/// the `state-agent` documentation, which re-exports it.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::tool(args.into(), item.into()).into()
}
