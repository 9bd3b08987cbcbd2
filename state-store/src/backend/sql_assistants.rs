//! The SQL of created assistants (schema version 6), for both SQL
//! backends, and `sql_assistants!`, which stamps their methods out beside
//! `sql_backend!`'s. An assistant is one row holding its current version
//! (what `GET /assistants/{id}` answers) and one row per version, as
//! LangGraph keeps them; both change in one write transaction.
//!
//! Times are microseconds since the Unix epoch, JSON is stored as text.

/// The tables of version 6, the same in both databases.
pub(crate) const ASSISTANT_TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS state_store_assistants (
        assistant_id TEXT PRIMARY KEY,
        graph_id TEXT NOT NULL,
        config TEXT NOT NULL,
        context TEXT NOT NULL,
        metadata TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT,
        version BIGINT NOT NULL,
        owner TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS state_store_assistant_versions (
        assistant_id TEXT NOT NULL,
        version BIGINT NOT NULL,
        graph_id TEXT NOT NULL,
        config TEXT NOT NULL,
        context TEXT NOT NULL,
        metadata TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (assistant_id, version)
    )",
];

pub(crate) const INSERT_ASSISTANT: &str = "INSERT INTO state_store_assistants \
     (assistant_id, graph_id, config, context, metadata, name, description, version, owner, \
     created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
     ON CONFLICT (assistant_id) DO NOTHING";
pub(crate) const INSERT_VERSION: &str = "INSERT INTO state_store_assistant_versions \
     (assistant_id, version, graph_id, config, context, metadata, name, description, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
pub(crate) const SELECT_ASSISTANT: &str = "SELECT assistant_id, graph_id, config, context, \
     metadata, name, description, version, owner, created_at, updated_at \
     FROM state_store_assistants WHERE assistant_id = $1";
pub(crate) const SELECT_ASSISTANTS: &str = "SELECT assistant_id, graph_id, config, context, \
     metadata, name, description, version, owner, created_at, updated_at \
     FROM state_store_assistants ORDER BY created_at DESC, assistant_id DESC";
/// Takes the assistant's row lock (PostgreSQL; SQLite's write transaction
/// has the database already) before its versions are read, so two
/// updates number their versions one after the other.
pub(crate) const LOCK_ASSISTANT: &str =
    "UPDATE state_store_assistants SET updated_at = updated_at WHERE assistant_id = $1";
pub(crate) const MAX_VERSION: &str =
    "SELECT MAX(version) FROM state_store_assistant_versions WHERE assistant_id = $1";
pub(crate) const SET_CURRENT: &str = "UPDATE state_store_assistants SET graph_id = $2, \
     config = $3, context = $4, metadata = $5, name = $6, description = $7, version = $8, \
     updated_at = $9 WHERE assistant_id = $1";
/// A version's row, its owner and update time being the assistant's.
pub(crate) const SELECT_VERSIONS: &str = "SELECT v.assistant_id, v.graph_id, v.config, \
     v.context, v.metadata, v.name, v.description, v.version, a.owner, v.created_at, \
     v.created_at FROM state_store_assistant_versions v JOIN state_store_assistants a \
     ON a.assistant_id = v.assistant_id WHERE v.assistant_id = $1 ORDER BY v.version DESC";
pub(crate) const DELETE_VERSIONS: &str =
    "DELETE FROM state_store_assistant_versions WHERE assistant_id = $1";
pub(crate) const DELETE_ASSISTANT: &str =
    "DELETE FROM state_store_assistants WHERE assistant_id = $1";

/// The runs of an assistant still in flight (what its delete cancels),
/// the pending ones first; the status is matched first, as the claim's
/// index has it.
pub(crate) const IN_FLIGHT_RUNS: &str = "SELECT run_id FROM state_store_runs \
     WHERE status IN ('pending', 'running') AND assistant_id = $1 \
     ORDER BY status = 'running', created_at";

/// The columns of an assistant, as read.
pub(crate) type AssistantTuple = (
    String,
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    i64,
    Option<String>,
    i64,
    i64,
);

pub(crate) fn assistant_row(t: AssistantTuple) -> super::assistants::AssistantRow {
    super::assistants::AssistantRow {
        assistant_id: t.0,
        graph_id: t.1,
        config: t.2,
        context: t.3,
        metadata: t.4,
        name: t.5,
        description: t.6,
        version: t.7,
        owner: t.8,
        created_at: t.9,
        updated_at: t.10,
    }
}

/// The assistant methods of a SQL backend (see `sql_backend!`).
macro_rules! sql_assistants {
    ($name:ident, $db:ty) => {
        impl $name {
            /// Inserts the assistant with its first version, unless it
            /// exists. False: it existed.
            pub async fn insert_assistant(
                &self,
                row: &$crate::backend::assistants::AssistantRow,
            ) -> Result<bool, StoreError> {
                use $crate::backend::sql_assistants::*;
                let _queued = self.queue().await;
                let context = || format!("creating assistant \"{}\"", row.assistant_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let inserted = sqlx::query(INSERT_ASSISTANT)
                    .bind(&row.assistant_id)
                    .bind(&row.graph_id)
                    .bind(&row.config)
                    .bind(&row.context)
                    .bind(&row.metadata)
                    .bind(&row.name)
                    .bind(row.description.as_deref())
                    .bind(row.version)
                    .bind(row.owner.as_deref())
                    .bind(row.created_at)
                    .bind(row.updated_at)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                if inserted == 1 {
                    Self::insert_version(&mut *tx, row)
                        .await
                        .map_err(db_error(context()))?;
                }
                tx.commit().await.map_err(db_error(context()))?;
                Ok(inserted == 1)
            }

            async fn insert_version(
                conn: &mut <$db as sqlx::Database>::Connection,
                row: &$crate::backend::assistants::AssistantRow,
            ) -> Result<(), sqlx::Error> {
                sqlx::query($crate::backend::sql_assistants::INSERT_VERSION)
                    .bind(&row.assistant_id)
                    .bind(row.version)
                    .bind(&row.graph_id)
                    .bind(&row.config)
                    .bind(&row.context)
                    .bind(&row.metadata)
                    .bind(&row.name)
                    .bind(row.description.as_deref())
                    .bind(row.updated_at)
                    .execute(&mut *conn)
                    .await
                    .map(|_| ())
            }

            async fn set_current(
                conn: &mut <$db as sqlx::Database>::Connection,
                row: &$crate::backend::assistants::AssistantRow,
            ) -> Result<(), sqlx::Error> {
                sqlx::query($crate::backend::sql_assistants::SET_CURRENT)
                    .bind(&row.assistant_id)
                    .bind(&row.graph_id)
                    .bind(&row.config)
                    .bind(&row.context)
                    .bind(&row.metadata)
                    .bind(&row.name)
                    .bind(row.description.as_deref())
                    .bind(row.version)
                    .bind(row.updated_at)
                    .execute(&mut *conn)
                    .await
                    .map(|_| ())
            }

            pub async fn assistant(
                &self,
                id: &str,
            ) -> Result<Option<$crate::backend::assistants::AssistantRow>, StoreError> {
                use $crate::backend::sql_assistants::*;
                // Read whole, as every read of the pool (see `get_run`).
                let row: Option<AssistantTuple> = sqlx::query_as(SELECT_ASSISTANT)
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading assistant \"{id}\"")))?
                    .pop();
                Ok(row.map(assistant_row))
            }

            pub async fn assistants(
                &self,
            ) -> Result<Vec<$crate::backend::assistants::AssistantRow>, StoreError> {
                use $crate::backend::sql_assistants::*;
                let rows: Vec<AssistantTuple> = sqlx::query_as(SELECT_ASSISTANTS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("listing assistants".to_owned()))?;
                Ok(rows.into_iter().map(assistant_row).collect())
            }

            pub async fn assistant_versions(
                &self,
                id: &str,
            ) -> Result<Vec<$crate::backend::assistants::AssistantRow>, StoreError> {
                use $crate::backend::sql_assistants::*;
                let rows: Vec<AssistantTuple> = sqlx::query_as(SELECT_VERSIONS)
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!(
                        "listing the versions of assistant \"{id}\""
                    )))?;
                Ok(rows.into_iter().map(assistant_row).collect())
            }

            pub async fn assistant_runs_in_flight(
                &self,
                id: &str,
            ) -> Result<Vec<String>, StoreError> {
                use $crate::backend::sql_assistants::*;
                let rows: Vec<(String,)> = sqlx::query_as(IN_FLIGHT_RUNS)
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!(
                        "listing the runs in flight of assistant \"{id}\""
                    )))?;
                Ok(rows.into_iter().map(|(run_id,)| run_id).collect())
            }

            pub async fn change_assistant(
                &self,
                id: &str,
                change: $crate::backend::assistants::Change<'_>,
                now: i64,
            ) -> Result<$crate::backend::assistants::Changed, StoreError> {
                use $crate::backend::assistants::{Change, Changed};
                use $crate::backend::sql_assistants::*;
                let _queued = self.queue().await;
                let context = || format!("changing assistant \"{id}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                sqlx::query(LOCK_ASSISTANT)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let current: Option<AssistantTuple> = sqlx::query_as(SELECT_ASSISTANT)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some(current) = current.map(assistant_row) else {
                    return Ok(Changed::NotFound);
                };
                if change.owner().is_some() && current.owner.as_deref() != change.owner() {
                    return Ok(Changed::NotFound);
                }
                let changed = match change {
                    Change::Update { patch, .. } => {
                        let (latest,): (Option<i64>,) = sqlx::query_as(MAX_VERSION)
                            .bind(id)
                            .fetch_one(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                        let mut row = patch(&current)?;
                        row.version = latest.unwrap_or(0) + 1;
                        row.updated_at = now;
                        Self::insert_version(&mut *tx, &row)
                            .await
                            .map_err(db_error(context()))?;
                        Self::set_current(&mut *tx, &row)
                            .await
                            .map_err(db_error(context()))?;
                        Changed::Done(Box::new(row))
                    }
                    Change::SetLatest { version, .. } => {
                        let versions: Vec<AssistantTuple> = sqlx::query_as(SELECT_VERSIONS)
                            .bind(id)
                            .fetch_all(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                        let found = versions
                            .into_iter()
                            .map(assistant_row)
                            .find(|v| v.version == version);
                        let Some(mut row) = found else {
                            return Ok(Changed::NoVersion);
                        };
                        row.created_at = current.created_at;
                        row.updated_at = now;
                        Self::set_current(&mut *tx, &row)
                            .await
                            .map_err(db_error(context()))?;
                        Changed::Done(Box::new(row))
                    }
                    Change::Delete { .. } => {
                        for statement in [DELETE_VERSIONS, DELETE_ASSISTANT] {
                            sqlx::query(statement)
                                .bind(id)
                                .execute(&mut *tx)
                                .await
                                .map_err(db_error(context()))?;
                        }
                        Changed::Done(Box::new(current))
                    }
                };
                tx.commit().await.map_err(db_error(context()))?;
                Ok(changed)
            }
        }
    };
}
