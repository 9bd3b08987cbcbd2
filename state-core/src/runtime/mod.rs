//! The runtime that generated code calls. Keeping the logic here, in
//! ordinary tested Rust, keeps each expansion thin.

pub mod access;
pub mod apply;
pub mod delta_table;
pub mod fields;
pub mod flatten;
pub mod inherit;
#[cfg(feature = "schemars")]
pub mod json_schema;
pub mod migrate;
pub mod nested;
pub mod per_type;
pub mod serde_delta;
pub mod slot;
pub mod state_serde;
pub mod table;
pub mod user_serde;
pub mod with;
