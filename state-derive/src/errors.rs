//! Errors at their spans, all of an input's reported together: syn's own
//! `Error::combine` gathers them.

use std::fmt::Display;
use syn::spanned::Spanned;

/// An error at `at`: a syntax node, a token or a span.
pub fn error(at: &impl Spanned, message: impl Display) -> syn::Error {
    syn::Error::new(at.span(), message)
}

/// The errors found so far, in the order found.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// The value, or `None` with its error kept.
    pub fn handle<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// `value` when no error was found; otherwise all of them.
    pub fn finish_with<T>(self, value: T) -> syn::Result<T> {
        match self.0 {
            None => Ok(value),
            Some(errors) => Err(errors),
        }
    }
}
