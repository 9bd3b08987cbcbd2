//! Integration tests for `state-core`; the tests are under `tests/`.

/// The root README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct RootReadme;

/// An error and its causes, joined by ": ", as a report prints them.
pub fn report(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut next = err.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}
