//! Helpers shared by the state-store integration tests.
#![allow(dead_code)]

pub mod backends;
pub mod postgres;
pub mod profile_v1;
pub mod states;
