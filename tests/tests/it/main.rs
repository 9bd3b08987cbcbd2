//! state-core's and state-derive's integration tests, in one binary: a
//! binary per file linked the whole dependency graph each time, most of
//! the suite's build time and disk. A test is named `module::test`
//! (`cargo test -p state-tests --test it derive_apply::`).

mod placeholders;

mod access;
mod add_messages_vectors;
mod check_commit;
mod compose_flatten;
mod compose_nested;
mod custom_update_type;
mod delta_json;
mod derive_apply;
mod derive_delta;
mod derive_generics;
mod derive_messages;
mod derive_option;
mod derive_struct_attrs;
mod derive_superstep;
mod derive_turn;
mod error_chain;
mod hygiene_no_prelude;
mod hygiene_shadowing;
mod inherit;
mod langchain_messages;
mod lint_clean;
mod nested_generic;
mod push_setters;
mod renames;
mod replay;
mod seed_agentflow;
mod seed_alpha_berkeley;
mod seed_gaia;
mod seed_ohmind;
mod seed_therapy;
mod serde_formats;
mod store_examples;
mod store_seeds;
mod supersteps_vectors;
mod ui;
mod user_serde;
