//! `#[state(migrate = f)]`: a migration function may return `()` or any
//! `Result<(), E: Display>`; the schema keeps one `fn` pointer type (the
//! derive writes the adapter, so that errors point at the user's code).

use std::fmt::Display;

/// What a `#[state(migrate = f)]` function returns: `()`, or `Result<(),
/// E>` with `E: Display` (an error fails the load, with its message).
///
/// ```
/// use state_core::MigrationOutcome;
///
/// assert_eq!(().into_result(), Ok(()));
/// assert_eq!(Err::<(), _>("no such field").into_result(), Err("no such field".to_owned()));
/// ```
#[diagnostic::on_unimplemented(
    message = "a migration function returns `()` or `Result<(), E>`, not `{Self}`",
    label = "this function's return type",
    note = "`#[state(migrate = f)]` takes `fn(from_version: u32, data: &mut serde_json::Value)`, \
            returning `()` or `Result<(), E>` with `E: Display`"
)]
pub trait MigrationOutcome {
    /// The outcome, an error as its message.
    fn into_result(self) -> Result<(), String>;
}

#[diagnostic::do_not_recommend]
impl MigrationOutcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

#[diagnostic::do_not_recommend]
impl<E: Display> MigrationOutcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// A `#[state(migrate = f)]` function: `fn(from_version: u32, data: &mut
/// serde_json::Value)`, returning a [`MigrationOutcome`]. Implemented for
/// every such function and closure; the derive requires it so that a wrong
/// signature is reported in these words.
///
/// ```
/// use state_core::MigrationFn;
///
/// fn upgrade(from: u32, data: &mut serde_json::Value) {
///     if from < 2 {
///         data["renamed"] = data["old"].take();
///     }
/// }
/// let mut data = serde_json::json!({"old": 1});
/// assert_eq!(upgrade.migrate(1, &mut data), ());
/// assert_eq!(data["renamed"], 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a migration function",
    label = "expected `fn(from_version: u32, data: &mut serde_json::Value)`",
    note = "`#[state(migrate = f)]` takes `fn(from_version: u32, data: &mut serde_json::Value)`, \
            returning `()` or `Result<(), E>` with `E: Display`"
)]
pub trait MigrationFn {
    /// What the function returns.
    type Outcome;

    /// Runs the migration of `data`, written at version `from`.
    fn migrate(&self, from: u32, data: &mut serde_json::Value) -> Self::Outcome;
}

#[diagnostic::do_not_recommend]
impl<F, O> MigrationFn for F
where
    F: Fn(u32, &mut serde_json::Value) -> O,
{
    type Outcome = O;

    fn migrate(&self, from: u32, data: &mut serde_json::Value) -> O {
        self(from, data)
    }
}
