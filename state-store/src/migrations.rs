//! Stored data of an older schema: the version written with every step
//! and snapshot, and how what was stored with an older one is brought up
//! to the current schema. Loading (`rebuild.rs`) and replaying one step
//! (`step.rs`) both read stored data through here.

use crate::error::StoreError;
use serde_json::Value;
use state_core::State;

/// The schema version written with every step and snapshot of `S`.
pub(crate) fn version_of<S: State>() -> i64 {
    i64::from(S::schema().version())
}

/// What reading stored data of `S` needs: its schema version, and whether
/// any field has a former name (then even current data is looked at).
pub(crate) struct Migrations {
    current: u32,
    aliases: bool,
}

impl Migrations {
    pub(crate) fn of<S: State>() -> Migrations {
        let schema = S::schema();
        Migrations {
            current: schema.version(),
            aliases: schema
                .entries()
                .iter()
                .any(|(_, f)| !f.aliases().is_empty()),
        }
    }

    /// The version data was written with, refused if newer than the code.
    pub(crate) fn check<S: State>(
        &self,
        id: &str,
        what: &'static str,
        seq: u64,
        version: i64,
    ) -> Result<u32, StoreError> {
        match u32::try_from(version) {
            Ok(v) if v <= self.current => Ok(v),
            _ => Err(StoreError::TooNew {
                what: format!("thread \"{id}\", {what} {seq} (state {})", S::schema().name),
                found: version,
                known: i64::from(self.current),
            }),
        }
    }

    /// How to bring the field maps of step `seq`, written with `version`,
    /// up to the current version; refused if `version` is newer than the
    /// code. Loading and [`StepRecord::replay_onto`] both go through here.
    ///
    /// [`StepRecord::replay_onto`]: crate::StepRecord::replay_onto
    pub(crate) fn for_step<S: State>(
        &self,
        id: &str,
        seq: u64,
        version: i64,
    ) -> Result<impl Fn(&mut Value) -> Result<(), String> + '_, StoreError> {
        let from = self.check::<S>(id, "step", seq, version)?;
        Ok(move |data: &mut Value| self.apply::<S>(from, data))
    }

    /// Brings one stored field map up to the current version.
    pub(crate) fn apply<S: State>(&self, from: u32, data: &mut Value) -> Result<(), String> {
        if from < self.current || self.aliases {
            S::schema().migrate(from, data)?;
        }
        Ok(())
    }
}
