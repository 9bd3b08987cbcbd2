//! Created assistants as the backends store them (`Store::create_assistant`):
//! rows of text and integers, the current version's row and one row per
//! version. A change (a new version, another version made current, a
//! delete) is decided inside the backend's transaction, after the
//! assistant's row is locked: `memory_assistants.rs` under its lock,
//! `sql_assistants.rs` in SQL. `crate::assistants` validates what goes in
//! and decodes what comes out.

use super::Backend;
use crate::error::StoreError;

/// An assistant (or one of its versions), as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssistantRow {
    pub assistant_id: String,
    pub graph_id: String,
    pub config: String,
    pub context: String,
    pub metadata: String,
    pub name: String,
    pub description: Option<String>,
    pub version: i64,
    pub owner: Option<String>,
    pub created_at: i64,
    /// A version's: when it was made.
    pub updated_at: i64,
}

/// The new version's row from the current one (its version and time are
/// set by the backend).
pub(crate) type Patch<'a> =
    &'a (dyn Fn(&AssistantRow) -> Result<AssistantRow, StoreError> + Send + Sync);

/// A change to an assistant visible to `owner` (`None`: any).
#[derive(Clone, Copy)]
pub(crate) enum Change<'a> {
    /// A new version, made by `patch`, becomes current.
    Update {
        owner: Option<&'a str>,
        patch: Patch<'a>,
    },
    /// Version `version` becomes current again.
    SetLatest {
        owner: Option<&'a str>,
        version: i64,
    },
    /// The assistant and its versions are deleted.
    Delete { owner: Option<&'a str> },
}

impl Change<'_> {
    pub fn owner(&self) -> Option<&str> {
        match self {
            Change::Update { owner, .. }
            | Change::SetLatest { owner, .. }
            | Change::Delete { owner } => *owner,
        }
    }
}

/// How a change ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Changed {
    /// The assistant as it is now (as it was, for a delete).
    Done(Box<AssistantRow>),
    /// No such assistant (or another owner's).
    NotFound,
    /// No such version (`SetLatest`).
    NoVersion,
}

impl Backend {
    /// Inserts an assistant and its first version unless it exists.
    /// False: it existed.
    pub async fn insert_assistant(&self, row: &AssistantRow) -> Result<bool, StoreError> {
        dispatch_split!(self, b => b.assistants.insert(row), b.insert_assistant(row))
    }

    pub async fn assistant(&self, id: &str) -> Result<Option<AssistantRow>, StoreError> {
        dispatch_split!(self, b => b.assistants.get(id), b.assistant(id))
    }

    /// Every assistant, newest first.
    pub async fn assistants(&self) -> Result<Vec<AssistantRow>, StoreError> {
        dispatch_split!(self, b => b.assistants.all(), b.assistants())
    }

    /// An assistant's versions, newest first (none: no assistant).
    pub async fn assistant_versions(&self, id: &str) -> Result<Vec<AssistantRow>, StoreError> {
        dispatch_split!(self, b => b.assistants.versions(id), b.assistant_versions(id))
    }

    /// The ids of assistant `id`'s runs pending, then running (oldest
    /// first in each).
    pub async fn assistant_runs_in_flight(&self, id: &str) -> Result<Vec<String>, StoreError> {
        dispatch_split!(self, b => Ok(b.runs.in_flight_of_assistant(id)),
            b.assistant_runs_in_flight(id))
    }

    /// Applies `change` in one transaction.
    pub async fn change_assistant(
        &self,
        id: &str,
        change: Change<'_>,
        now: i64,
    ) -> Result<Changed, StoreError> {
        dispatch_split!(self, b => b.assistants.change(id, change, now),
            b.change_assistant(id, change, now))
    }
}
