//! Integration tests for `state-core`; the tests are under `tests/`.

/// The root README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct RootReadme;
