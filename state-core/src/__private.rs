//! Everything generated code names, behind one hidden path, so user crates
//! need no dependency but `state-core` and generated code never relies on
//! the user's imports or prelude. Not a public API.

pub use ::core::clone::Clone;
pub use ::core::cmp::PartialEq;
pub use ::core::convert::Into;
pub use ::core::default::Default;
pub use ::core::fmt::{self, Debug, Formatter};
pub use ::core::option::Option::{self, None, Some};
pub use ::core::result::Result::{self, Err, Ok};
pub use ::std::boxed::Box;
pub use ::std::vec::Vec;

pub use ::serde;
pub use ::serde::de::MapAccess;
pub use ::serde::ser::SerializeMap;
pub use ::serde::{Deserialize, Deserializer, Serialize, Serializer};
pub use ::serde_json;

pub use ::core::any::Any;
pub use ::core::iter::{Extend, IntoIterator, Iterator};
pub use ::std::string::String;

pub use crate::error::{ReduceError, StateError};
pub use crate::field_type::{DecodeUpdate, StateField};
pub use crate::into_update::IntoUpdate;
pub use crate::messages::Message;
pub use crate::reducer;
pub use crate::reducer::Reducer;
pub use crate::runtime::access::{NoStateSchema, Probe, ViaStateSchema};
pub use crate::runtime::apply::{Plan, commit, put, reduce_now, restage, stage};
pub use crate::runtime::delta_table::{self, DeltaKeys, DeltaTable, ErasedSlot};
pub use crate::runtime::flatten::{KeyTree, flat_keys, flat_schema};
pub use crate::runtime::inherit::index::*;
pub use crate::runtime::inherit::{
    At, FieldOf, Given, HasBase, InheritedBy, IntoHost, Next, Reduce, Same, UpdateOf, UpdateRule,
    Zero,
};
pub use crate::runtime::migrate::{MigrationFn, MigrationOutcome};
pub use crate::runtime::nested;
pub use crate::runtime::per_type::schema_of;
pub use crate::runtime::serde_delta::{UpdateInput, decode_reduced, decode_replace};
pub use crate::runtime::slot::{
    MergeMode, Merging, Slot, Written, merge_replace, merge_slot, write,
};
pub use crate::runtime::state_serde::deserialize_state;
pub use crate::runtime::table::{self, ErasedState, Fields, ViaStateField, ViaValueField};
pub use crate::runtime::user_serde;
pub use crate::runtime::with::{Pick, PickFunction, PickOther, PickReducer};
pub use crate::schema::{FieldInfo, Schema, Scope};
pub use crate::state::{Checked, Delta, FieldNames, State};
pub use crate::{__chain, __inherit};

/// Wraps a delta that generated `State::check` accepted.
#[inline]
pub fn checked<D>(delta: D) -> Checked<D> {
    Checked::new(delta)
}

pub use ::core::convert::{AsMut, AsRef, From};
pub use ::core::mem::take;
pub use ::core::{matches, panic};
pub use ::serde_json::{Map as JsonMap, Value as JsonValue};
pub use ::std::borrow::Cow;
pub use ::std::sync::OnceLock;

#[cfg(feature = "schemars")]
pub use crate::runtime::json_schema::{delta_json_schema, state_json_schema, with_base_properties};
#[cfg(feature = "schemars")]
pub use ::schemars;

/// Expands its input only when state-core is built with the `schemars`
/// feature: generated code cannot test the features of state-core itself.
#[cfg(feature = "schemars")]
#[macro_export]
#[doc(hidden)]
macro_rules! __with_schemars {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Without the `schemars` feature, `#[state(json_schema)]` says how to
/// turn it on.
#[cfg(not(feature = "schemars"))]
#[macro_export]
#[doc(hidden)]
macro_rules! __with_schemars {
    ($($tokens:tt)*) => {
        ::core::compile_error!(
            "#[state(json_schema)] needs the `schemars` feature of state-core: \
             state-core = { version = \"...\", features = [\"schemars\"] }"
        );
    };
}

pub use crate::__with_schemars as with_schemars;
