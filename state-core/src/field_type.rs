//! What a state field's type and a reducer's update type must be: one
//! trait each, so that a type missing several of these is one error at the
//! field, worded for the user, instead of one error per missing trait and
//! generated item. Reducers (which read updates) and the runtime of
//! generated code both use them; neither owns them.

use crate::error::StateError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;

/// What the type of a state field (and of a reducer's update) must
/// implement: `Debug`, `Clone` and `PartialEq` (the delta holds updates and
/// overwrites) and `Serialize` / `Deserialize` (JSON, checkpoints, dynamic
/// access). Implemented for every such type; a generic state can bound its
/// parameters with it.
///
/// ```
/// use state_core::{AgentState, StateField};
///
/// #[derive(AgentState)]
/// struct Slot<T: StateField + Default> {
///     value: T,
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the type of a state field or update",
    label = "needs Debug, Clone, PartialEq, Serialize and Deserialize (and so does every type inside it)",
    note = "derive them on the type: \
            #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]"
)]
pub trait StateField: Debug + Clone + PartialEq + Serialize + DeserializeOwned {}

// Errors name `StateField`, not the one bound of this impl that failed.
#[diagnostic::do_not_recommend]
impl<T: Debug + Clone + PartialEq + Serialize + DeserializeOwned> StateField for T {}

/// An update that can be read from JSON: every `DeserializeOwned` type.
///
/// A trait of its own, without supertraits, so that generated where
/// clauses can state it of a reducer's `Update` beside a field type's
/// `StateField`: two bounds that both imply `for<'de> Deserialize<'de>` of
/// one type are ambiguous to rustc.
#[doc(hidden)]
pub trait DecodeUpdate: Sized {
    /// `value` read as this type; an error names `field` and `ty`.
    fn decode_json(field: &str, ty: &'static str, value: Value) -> Result<Self, StateError>;

    /// This type read from a compact format's deserializer.
    fn decode_compact(
        d: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<Self, erased_serde::Error>;
}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> DecodeUpdate for T {
    fn decode_json(field: &str, ty: &'static str, value: Value) -> Result<Self, StateError> {
        crate::dynamic::from_json(field, ty, value)
    }

    fn decode_compact(
        d: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<Self, erased_serde::Error> {
        erased_serde::deserialize(d)
    }
}
