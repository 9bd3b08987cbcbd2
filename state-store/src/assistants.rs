//! Created assistants (LangGraph's `POST /assistants`): a graph id with
//! the config, context and metadata its runs start with, versioned as
//! LangGraph versions them (an update is a new version; any version can
//! be made current again), in tables of their own so that every process
//! on one database sees the same ones. The server decides what the JSON
//! means; the store keeps it, numbers the versions and checks owners.

use crate::Store;
use crate::backend::{AssistantRow, Change, Changed};
use crate::error::StoreError;
use crate::ids::check_id;
use crate::items::time::{from_micros, iso, now_micros};
use crate::runs::{CancelAction, IfExists, Run};
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::SystemTime;

/// A created assistant, or one of its versions. Serializes with the
/// Agent Server's field names (times as ISO 8601 with microseconds; the
/// owner is not sent).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// use state_store::{IfExists, NewAssistant, Store};
/// let store = Store::memory();
/// let made = store.create_assistant(NewAssistant::new("a1", "agent").name("support"), IfExists::Raise).await?;
/// let json = serde_json::to_value(&made).unwrap();
/// assert_eq!((json["assistant_id"].clone(), json["version"].clone()), (json!("a1"), json!(1)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AssistantRecord {
    /// Its id.
    pub assistant_id: String,
    /// The graph it runs.
    pub graph_id: String,
    /// Its config (a JSON object).
    pub config: Value,
    /// Its context (a JSON object): what its runs' context is merged over.
    pub context: Value,
    /// Its metadata (a JSON object).
    pub metadata: Value,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its current version (the version's number, for a version).
    pub version: u64,
    /// Who created it (`None`: no auth).
    #[serde(skip)]
    pub owner: Option<String>,
    /// When it was created (a version: when that version was made).
    #[serde(with = "iso")]
    pub created_at: SystemTime,
    /// When it last changed (a version: when it was made).
    #[serde(with = "iso")]
    pub updated_at: SystemTime,
}

impl AssistantRecord {
    fn from_row(row: AssistantRow) -> Result<AssistantRecord, StoreError> {
        let what = format!("assistant \"{}\"", row.assistant_id);
        let object = |column: &'static str, text: &str| -> Result<Value, StoreError> {
            let corrupt = |detail: String| StoreError::CorruptRun {
                what: what.clone(),
                column,
                detail,
            };
            let value: Value =
                serde_json::from_str(text).map_err(|e| corrupt(format!("not JSON: {e}")))?;
            match value.is_object() {
                true => Ok(value),
                false => Err(corrupt("not a JSON object".into())),
            }
        };
        let version = u64::try_from(row.version).map_err(|_| StoreError::CorruptRun {
            what: what.clone(),
            column: "version",
            detail: format!("negative version {}", row.version),
        })?;
        Ok(AssistantRecord {
            config: object("config", &row.config)?,
            context: object("context", &row.context)?,
            metadata: object("metadata", &row.metadata)?,
            version,
            created_at: from_micros(row.created_at),
            updated_at: from_micros(row.updated_at),
            assistant_id: row.assistant_id,
            graph_id: row.graph_id,
            name: row.name,
            description: row.description,
            owner: row.owner,
        })
    }
}

/// What [`Store::create_assistant`] creates: an id and a graph id, with
/// empty config, context and metadata, named `"Untitled"` (LangGraph's
/// default), unless set.
///
/// ```
/// use serde_json::json;
/// use state_store::NewAssistant;
/// let new = NewAssistant::new("a1", "agent")
///     .context(json!({"user": "ada"}))
///     .metadata(json!({"team": "support"}))
///     .owner("ada");
/// assert_eq!(new.name, "Untitled");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NewAssistant {
    /// Its id.
    pub assistant_id: String,
    /// The graph it runs.
    pub graph_id: String,
    /// Its config: a JSON object.
    pub config: Value,
    /// Its context: a JSON object.
    pub context: Value,
    /// Its metadata: a JSON object.
    pub metadata: Value,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Who creates it: only they see it (`None`: anyone).
    pub owner: Option<String>,
}

impl NewAssistant {
    /// Assistant `assistant_id`, running graph `graph_id`.
    ///
    /// ```
    /// let new = state_store::NewAssistant::new("a1", "agent");
    /// assert_eq!(new.graph_id, "agent");
    /// ```
    pub fn new(assistant_id: impl Into<String>, graph_id: impl Into<String>) -> NewAssistant {
        NewAssistant {
            assistant_id: assistant_id.into(),
            graph_id: graph_id.into(),
            config: Value::Object(Map::new()),
            context: Value::Object(Map::new()),
            metadata: Value::Object(Map::new()),
            name: "Untitled".into(),
            description: None,
            owner: None,
        }
    }

    /// Its config (a JSON object).
    ///
    /// ```
    /// let new = state_store::NewAssistant::new("a1", "agent").config(serde_json::json!({"tags": ["x"]}));
    /// ```
    #[must_use]
    pub fn config(mut self, config: Value) -> Self {
        self.config = config;
        self
    }

    /// Its context (a JSON object).
    ///
    /// ```
    /// let new = state_store::NewAssistant::new("a1", "agent").context(serde_json::json!({"user": "ada"}));
    /// ```
    #[must_use]
    pub fn context(mut self, context: Value) -> Self {
        self.context = context;
        self
    }

    /// Its metadata (a JSON object).
    ///
    /// ```
    /// let new = state_store::NewAssistant::new("a1", "agent").metadata(serde_json::json!({"team": "x"}));
    /// ```
    #[must_use]
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// Its name.
    ///
    /// ```
    /// assert_eq!(state_store::NewAssistant::new("a1", "agent").name("bot").name, "bot");
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Its description.
    ///
    /// ```
    /// let new = state_store::NewAssistant::new("a1", "agent").description("answers tickets");
    /// ```
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Its owner: other owners do not see it.
    ///
    /// ```
    /// let new = state_store::NewAssistant::new("a1", "agent").owner("ada");
    /// ```
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }
}

/// What [`Store::update_assistant`] changes (LangGraph's `PATCH
/// /assistants/{id}`): each field given replaces the current version's;
/// `metadata` is merged into it key by key.
///
/// ```
/// use serde_json::json;
/// use state_store::AssistantPatch;
/// let patch = AssistantPatch::default().name("v2").metadata(json!({"stage": "beta"}));
/// assert_eq!(patch.name.as_deref(), Some("v2"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AssistantPatch {
    /// Another graph.
    pub graph_id: Option<String>,
    /// Another config (a JSON object).
    pub config: Option<Value>,
    /// Another context (a JSON object).
    pub context: Option<Value>,
    /// Keys merged into the metadata (a JSON object).
    pub metadata: Option<Value>,
    /// Another name.
    pub name: Option<String>,
    /// Another description.
    pub description: Option<String>,
}

impl AssistantPatch {
    /// Another graph.
    ///
    /// ```
    /// let patch = state_store::AssistantPatch::default().graph_id("hitl");
    /// ```
    #[must_use]
    pub fn graph_id(mut self, graph_id: impl Into<String>) -> Self {
        self.graph_id = Some(graph_id.into());
        self
    }

    /// Another config.
    ///
    /// ```
    /// let patch = state_store::AssistantPatch::default().config(serde_json::json!({}));
    /// ```
    #[must_use]
    pub fn config(mut self, config: Value) -> Self {
        self.config = Some(config);
        self
    }

    /// Another context.
    ///
    /// ```
    /// let patch = state_store::AssistantPatch::default().context(serde_json::json!({"user": "bo"}));
    /// ```
    #[must_use]
    pub fn context(mut self, context: Value) -> Self {
        self.context = Some(context);
        self
    }

    /// Keys merged into the metadata.
    ///
    /// ```
    /// let patch = state_store::AssistantPatch::default().metadata(serde_json::json!({"a": 1}));
    /// ```
    #[must_use]
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Another name.
    ///
    /// ```
    /// let patch = state_store::AssistantPatch::default().name("bot");
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Another description.
    ///
    /// ```
    /// let patch = state_store::AssistantPatch::default().description("answers tickets");
    /// ```
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The new version's row from the current one.
    fn apply(&self, current: &AssistantRow) -> Result<AssistantRow, StoreError> {
        let mut row = current.clone();
        if let Some(graph_id) = &self.graph_id {
            row.graph_id.clone_from(graph_id);
        }
        if let Some(config) = &self.config {
            row.config = config.to_string();
        }
        if let Some(context) = &self.context {
            row.context = context.to_string();
        }
        if let Some(Value::Object(add)) = &self.metadata {
            let mut metadata: Map<String, Value> =
                serde_json::from_str(&row.metadata).map_err(|e| StoreError::CorruptRun {
                    what: format!("assistant \"{}\"", row.assistant_id),
                    column: "metadata",
                    detail: format!("not a JSON object: {e}"),
                })?;
            metadata.extend(add.clone());
            row.metadata = Value::Object(metadata).to_string();
        }
        if let Some(name) = &self.name {
            row.name.clone_from(name);
        }
        if let Some(description) = &self.description {
            row.description = Some(description.clone());
        }
        Ok(row)
    }
}

/// `value` if a JSON object, else [`StoreError::InvalidRun`] naming it.
fn object<'a>(id: &str, field: &str, value: &'a Value) -> Result<&'a Value, StoreError> {
    match value.is_object() {
        true => Ok(value),
        false => Err(StoreError::InvalidRun {
            what: format!("assistant \"{id}\""),
            reason: format!("{field} must be a JSON object"),
        }),
    }
}

impl Store {
    /// Creates an assistant at version 1. One that exists is
    /// [`StoreError::AssistantExists`] with [`IfExists::Raise`], returned
    /// unchanged with [`IfExists::DoNothing`] (if its owner's). Config,
    /// context and metadata must be JSON objects.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{IfExists, NewAssistant, Store, StoreError};
    /// let store = Store::memory();
    /// let new = NewAssistant::new("a1", "agent").context(json!({"user": "ada"}));
    /// let made = store.create_assistant(new.clone(), IfExists::Raise).await?;
    /// assert_eq!((made.version, &made.context), (1, &json!({"user": "ada"})));
    /// let again = store.create_assistant(new.clone(), IfExists::Raise).await;
    /// assert!(matches!(again, Err(StoreError::AssistantExists { .. })));
    /// assert_eq!(store.create_assistant(new, IfExists::DoNothing).await?, made);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_assistant(
        &self,
        new: NewAssistant,
        if_exists: IfExists,
    ) -> Result<AssistantRecord, StoreError> {
        let id = &new.assistant_id;
        check_id(id)?;
        for (field, value) in [
            ("config", &new.config),
            ("context", &new.context),
            ("metadata", &new.metadata),
        ] {
            object(id, field, value)?;
        }
        let now = now_micros();
        let row = AssistantRow {
            assistant_id: id.clone(),
            graph_id: new.graph_id.clone(),
            config: new.config.to_string(),
            context: new.context.to_string(),
            metadata: new.metadata.to_string(),
            name: new.name.clone(),
            description: new.description.clone(),
            version: 1,
            owner: new.owner.clone(),
            created_at: now,
            updated_at: now,
        };
        if self.backend.insert_assistant(&row).await? {
            return AssistantRecord::from_row(row);
        }
        let exists = || StoreError::AssistantExists {
            assistant: id.clone(),
        };
        match (if_exists, self.assistant(id, new.owner.as_deref()).await?) {
            (IfExists::DoNothing, Some(found)) => Ok(found),
            _ => Err(exists()),
        }
    }

    /// Assistant `id` at its current version, if visible to `owner`
    /// (`None`: any owner).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{IfExists, NewAssistant, Store};
    /// let store = Store::memory();
    /// store.create_assistant(NewAssistant::new("a1", "agent").owner("ada"), IfExists::Raise).await?;
    /// assert!(store.assistant("a1", Some("ada")).await?.is_some());
    /// assert!(store.assistant("a1", Some("bo")).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn assistant(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Option<AssistantRecord>, StoreError> {
        check_id(id)?;
        match self.backend.assistant(id).await? {
            Some(row) if owner.is_none() || row.owner.as_deref() == owner => {
                AssistantRecord::from_row(row).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Every assistant visible to `owner` (`None`: all), newest first.
    /// Assistants are few (they are made by hand): the server filters and
    /// pages them itself, with the ones given in code.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{IfExists, NewAssistant, Store};
    /// let store = Store::memory();
    /// store.create_assistant(NewAssistant::new("a1", "agent"), IfExists::Raise).await?;
    /// assert_eq!(store.assistants(None).await?.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn assistants(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<AssistantRecord>, StoreError> {
        self.backend
            .assistants()
            .await?
            .into_iter()
            .filter(|row| owner.is_none() || row.owner.as_deref() == owner)
            .map(AssistantRecord::from_row)
            .collect()
    }

    /// Makes a new version of assistant `id` from its current one and
    /// `patch`, numbered one past its highest, and makes it current, in one
    /// transaction. `None`: no assistant visible to `owner`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use serde_json::json;
    /// use state_store::{AssistantPatch, IfExists, NewAssistant, Store};
    /// let store = Store::memory();
    /// store.create_assistant(NewAssistant::new("a1", "agent").metadata(json!({"a": 1})), IfExists::Raise).await?;
    /// let patch = AssistantPatch::default().name("v2").metadata(json!({"b": 2}));
    /// let v2 = store.update_assistant("a1", patch, None).await?.unwrap();
    /// assert_eq!((v2.version, v2.name.as_str(), &v2.metadata), (2, "v2", &json!({"a": 1, "b": 2})));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update_assistant(
        &self,
        id: &str,
        patch: AssistantPatch,
        owner: Option<&str>,
    ) -> Result<Option<AssistantRecord>, StoreError> {
        check_id(id)?;
        for (field, value) in [
            ("config", &patch.config),
            ("context", &patch.context),
            ("metadata", &patch.metadata),
        ] {
            if let Some(value) = value {
                object(id, field, value)?;
            }
        }
        let apply = |row: &AssistantRow| patch.apply(row);
        let change = Change::Update {
            owner,
            patch: &apply,
        };
        self.changed(
            self.backend
                .change_assistant(id, change, now_micros())
                .await?,
        )
    }

    /// Makes `version` of assistant `id` its current one again (LangGraph's
    /// `set_latest`). `None`: no assistant visible to `owner`;
    /// [`StoreError::NoSuchAssistantVersion`]: no such version.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{AssistantPatch, IfExists, NewAssistant, Store};
    /// let store = Store::memory();
    /// store.create_assistant(NewAssistant::new("a1", "agent").name("one"), IfExists::Raise).await?;
    /// store.update_assistant("a1", AssistantPatch::default().name("two"), None).await?;
    /// let back = store.set_assistant_version("a1", 1, None).await?.unwrap();
    /// assert_eq!((back.version, back.name.as_str()), (1, "one"));
    /// assert!(store.set_assistant_version("a1", 9, None).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn set_assistant_version(
        &self,
        id: &str,
        version: u64,
        owner: Option<&str>,
    ) -> Result<Option<AssistantRecord>, StoreError> {
        check_id(id)?;
        let missing = || StoreError::NoSuchAssistantVersion {
            assistant: id.to_owned(),
            version,
        };
        let number = i64::try_from(version).map_err(|_| missing())?;
        let change = Change::SetLatest {
            owner,
            version: number,
        };
        match self
            .backend
            .change_assistant(id, change, now_micros())
            .await?
        {
            Changed::NoVersion => Err(missing()),
            other => self.changed(other),
        }
    }

    /// Deletes assistant `id` with its versions. False: no assistant
    /// visible to `owner`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{IfExists, NewAssistant, Store};
    /// let store = Store::memory();
    /// store.create_assistant(NewAssistant::new("a1", "agent"), IfExists::Raise).await?;
    /// assert!(store.delete_assistant("a1", None).await?);
    /// assert!(!store.delete_assistant("a1", None).await?);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_assistant(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<bool, StoreError> {
        check_id(id)?;
        let change = Change::Delete { owner };
        Ok(matches!(
            self.backend
                .change_assistant(id, change, now_micros())
                .await?,
            Changed::Done(_)
        ))
    }

    /// Cancels every run of assistant `id` still in flight, as the Agent
    /// Server does when the assistant is deleted: each pending run ends
    /// at once (interrupted, or gone for a rollback), each running one is
    /// asked to stop ([`cancel_run`](Store::cancel_run), whoever owns
    /// it). The pending ones go first, so none is claimed in the gap a
    /// cancelled running one leaves on its thread. Returns the runs as
    /// they are after the cancel.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{CancelAction, NewRun, RunStatus, Store};
    /// let store = Store::memory();
    /// store.create_run(NewRun::new("run-1", "a1")).await?;
    /// store.create_run(NewRun::new("run-2", "a2")).await?;
    /// let cancelled = store.cancel_assistant_runs("a1", CancelAction::Interrupt).await?;
    /// assert_eq!(cancelled.len(), 1);
    /// assert_eq!((cancelled[0].run_id.as_str(), cancelled[0].status), ("run-1", RunStatus::Interrupted));
    /// assert_eq!(store.get_run("run-2", None).await?.unwrap().status, RunStatus::Pending);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancel_assistant_runs(
        &self,
        id: &str,
        action: CancelAction,
    ) -> Result<Vec<Run>, StoreError> {
        check_id(id)?;
        let mut cancelled = Vec::new();
        for run_id in self.backend.assistant_runs_in_flight(id).await? {
            // One that ended meanwhile is left as it ended.
            if let Some(run) = self.cancel_run(&run_id, action, None).await? {
                cancelled.push(run);
            }
        }
        Ok(cancelled)
    }

    /// The versions of assistant `id`, newest first (each with the time
    /// it was made). `None`: no assistant visible to `owner`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_store::StoreError> {
    /// use state_store::{AssistantPatch, IfExists, NewAssistant, Store};
    /// let store = Store::memory();
    /// store.create_assistant(NewAssistant::new("a1", "agent"), IfExists::Raise).await?;
    /// store.update_assistant("a1", AssistantPatch::default().name("two"), None).await?;
    /// let versions = store.assistant_versions("a1", None).await?.unwrap();
    /// assert_eq!(versions.iter().map(|v| v.version).collect::<Vec<_>>(), [2, 1]);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn assistant_versions(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Option<Vec<AssistantRecord>>, StoreError> {
        check_id(id)?;
        let rows = self.backend.assistant_versions(id).await?;
        if rows.is_empty()
            || rows
                .iter()
                .any(|r| owner.is_some() && r.owner.as_deref() != owner)
        {
            return Ok(None);
        }
        rows.into_iter()
            .map(AssistantRecord::from_row)
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    fn changed(&self, changed: Changed) -> Result<Option<AssistantRecord>, StoreError> {
        match changed {
            Changed::Done(row) => AssistantRecord::from_row(*row).map(Some),
            Changed::NotFound | Changed::NoVersion => Ok(None),
        }
    }
}
