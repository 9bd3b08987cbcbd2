//! `#[state(migrate = f)]`: a migration function may return `()` or any
//! `Result<(), E: Display>`; the schema keeps one `fn` pointer type.

use serde_json::Value;
use std::fmt::Display;

/// What a migration function returns.
#[diagnostic::on_unimplemented(
    message = "a migration function returns `()` or `Result<(), E>`, not `{Self}`",
    label = "this function's return type",
    note = "`#[state(migrate = f)]` takes `fn(from_version: u32, data: &mut serde_json::Value)`, \
            returning `()` or `Result<(), E>` with `E: Display`"
)]
pub trait MigrationOutcome {
    /// As a message on failure.
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

/// Runs a user's migration function; its outcome as the schema stores it.
/// Taking `migrate` as a `fn` pointer makes a wrong signature one type
/// error at the attribute's path.
pub fn migration_result<O: MigrationOutcome>(
    migrate: fn(u32, &mut Value) -> O,
    from: u32,
    data: &mut Value,
) -> Result<(), String> {
    migrate(from, data).into_result()
}
