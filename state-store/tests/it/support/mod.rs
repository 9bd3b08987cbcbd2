//! Helpers shared by the state-store integration tests.

pub mod backends;
pub mod child;
pub mod postgres;
pub mod profile_v1;
pub mod states;
