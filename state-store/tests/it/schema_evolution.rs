//! Schema evolution against a checked-in database written by version 1 of
//! a state (`tests/fixtures/profile_v1.db`, see `support/profile_v1.rs`):
//! version 2 renames a field (`#[state(alias)]`), changes a field's type
//! (`#[state(migrate)]`) and adds one (its default), and reads the old
//! snapshot and every kind of old step; version-1 code refuses what
//! version 2 wrote. The store's own tables, written at store schema
//! version 1, are upgraded to the current version on open (SQLite and
//! PostgreSQL), and a newer store schema is refused. (From version 2 to
//! 3, the items' tables: `tests/items.rs`.)

use crate::support;
use crate::support::profile_v1;
use crate::support::states::Chat;
use serde_json::{Value, json};
use state_core::{AgentState, Messages, State};
use state_store::{Store, StoreError};
use std::path::{Path, PathBuf};

/// Version 1 stored the score as text; version 2 stores a number.
fn upgrade(from: u32, data: &mut Value) -> Result<(), String> {
    if from < 2
        && let Some(score) = data.get_mut("score")
    {
        let text = score.as_str().ok_or("score: expected text")?;
        let number: i64 = text
            .parse()
            .map_err(|e| format!("score {text:?} is not a number: {e}"))?;
        *score = json!(number);
    }
    Ok(())
}

/// Version 2 of the state.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(version = 2, migrate = upgrade)]
pub struct Profile {
    #[reducer(add_messages)]
    pub messages: Messages,
    #[state(alias = "user_name")]
    pub name: String,
    pub score: i64,
    #[reducer(append)]
    pub tags: Vec<String>,
    #[scope(turn)]
    pub mood: Option<String>,
    /// New in version 2.
    #[default(3)]
    pub level: u32,
}

/// A private copy of the fixture (the checked-in file stays as it is).
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.db");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile_v1.db");
    std::fs::copy(fixture, &path).unwrap();
    (dir, path)
}

#[tokio::test]
async fn version_two_reads_what_version_one_wrote() {
    let (_dir, path) = fixture_copy();
    let store = Store::sqlite(&path).await.unwrap();
    let t = store.thread::<Profile>("ada").await.unwrap();
    assert_eq!(t.seq(), 5);
    let s = t.state();
    assert_eq!(
        s.name, "Ada Lovelace",
        "renamed field read under its old name"
    );
    assert_eq!(s.score, 9, "the set step's text went through the migration");
    assert_eq!(s.tags, ["math", "engines"]);
    assert_eq!(s.mood, None, "begin_turn reset it");
    assert_eq!(s.level, 3, "a field added since takes its default");
    let ids: Vec<_> = s.messages.iter().filter_map(|m| m.id()).collect();
    assert_eq!(ids, ["m1", "m2"]);

    // Time travel before the snapshot replays version-1 steps from scratch.
    let first: Profile = store.state_at("ada", 1).await.unwrap();
    assert_eq!((first.name.as_str(), first.score), ("ada", 7));
    assert_eq!(first.mood.as_deref(), Some("curious"));
}

#[tokio::test]
async fn new_steps_are_written_as_version_two_and_old_code_refuses_them() {
    let (_dir, path) = fixture_copy();
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Profile>("ada").await.unwrap();
    t.apply(Profile::delta().score(10).level(4u32))
        .await
        .unwrap();
    let again = store.thread::<Profile>("ada").await.unwrap();
    assert_eq!(again.state(), t.state());
    let versions: Vec<u32> = store
        .history("ada", ..)
        .await
        .unwrap()
        .iter()
        .map(|s| s.state_version)
        .collect();
    assert_eq!(versions, [1, 1, 1, 1, 1, 2]);

    // The version-1 program stops at the first version-2 row, whole.
    let err = store
        .thread::<profile_v1::Profile>("ada")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 2,
                known: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "thread \"ada\", step 6 (state Profile): written by version 2, but this program knows versions up to 1; upgrade it"
    );
    // Its older steps are still readable by it.
    let old: profile_v1::Profile = store.state_at("ada", 5).await.unwrap();
    assert_eq!(old.score, "9");
}

#[tokio::test]
async fn replaying_old_steps_one_by_one_migrates_them_as_loading_does() {
    let (_dir, path) = fixture_copy();
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<Profile>("ada").await.unwrap();
    t.apply(Profile::delta().score(10).level(4u32))
        .await
        .unwrap();
    let history = store.history("ada", ..).await.unwrap();
    assert_eq!(history.len(), 6);
    assert!(history[..5].iter().all(|s| s.state_version == 1));

    // Version 2 replays the version-1 steps (renamed field, changed type,
    // the set step included) and its own.
    let mut state = Profile::default();
    for step in &history {
        step.replay_onto("ada", &mut state).unwrap();
        let loaded: Profile = store.state_at("ada", step.seq).await.unwrap();
        assert_eq!(state, loaded, "after step {}", step.seq);
    }
    assert_eq!(&state, t.state());

    // A migration that fails is the same error as loading's, state intact.
    let mut bad = history[3].clone();
    bad.body = json!({"key": "score", "value": "nine"});
    let before: Profile = store.state_at("ada", 3).await.unwrap();
    let mut at_3 = before.clone();
    let err = bad.replay_onto("ada", &mut at_3).unwrap_err();
    assert!(matches!(err, StoreError::Migration { seq: 4, .. }), "{err}");
    assert_eq!(at_3, before);

    // Version 1 replays its own steps and refuses version 2's, whole and
    // with loading's words.
    let mut old = profile_v1::Profile::default();
    for step in &history[..5] {
        step.replay_onto("ada", &mut old).unwrap();
    }
    assert_eq!(
        old,
        store
            .state_at::<profile_v1::Profile>("ada", 5)
            .await
            .unwrap()
    );
    let kept = old.clone();
    let err = history[5].replay_onto("ada", &mut old).unwrap_err();
    let loading = store
        .thread::<profile_v1::Profile>("ada")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 2,
                known: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.to_string(), loading.to_string());
    assert_eq!(old, kept);
}

#[tokio::test]
async fn a_migration_that_fails_names_the_row() {
    let (_dir, path) = fixture_copy();
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE state_store_steps SET body = '{\"key\":\"score\",\"value\":\"nine\"}' WHERE seq = 4")
        .execute(&raw)
        .await
        .unwrap();
    let store = Store::sqlite(&path).await.unwrap();
    let err = store.thread::<Profile>("ada").await.unwrap_err();
    assert!(matches!(err, StoreError::Migration { seq: 4, .. }), "{err}");
    assert!(
        err.to_string().starts_with(
            "thread \"ada\", step 4: cannot migrate stored data: migrating from version 1 to 2: score \"nine\" is not a number"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_field_under_both_names_is_refused() {
    let (_dir, path) = fixture_copy();
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query(
        "UPDATE state_store_steps SET body = '{\"user_name\":\"a\",\"name\":\"b\"}' WHERE seq = 5",
    )
    .execute(&raw)
    .await
    .unwrap();
    let store = Store::sqlite(&path).await.unwrap();
    let err = store.thread::<Profile>("ada").await.unwrap_err();
    assert!(
        err.to_string().contains(
            "field \"name\" is stored under both its name and its former name \"user_name\""
        ),
        "{err}"
    );
}

/// The store schema version recorded in the SQLite file at `path`, and how
/// many version rows there are.
async fn sqlite_schema_version(path: &Path) -> (i64, i64) {
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let version = sqlx::query_as("SELECT MAX(version), COUNT(*) FROM state_store_schema")
        .fetch_one(&raw)
        .await
        .unwrap();
    raw.close().await;
    version
}

async fn pg_schema_version(raw: &sqlx::PgPool) -> (i64, i64) {
    sqlx::query_as("SELECT MAX(version), COUNT(*) FROM state_store_schema")
        .fetch_one(raw)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_store_schema_version_one_database_is_upgraded_to_ten() {
    let (_dir, path) = fixture_copy();
    assert_eq!(sqlite_schema_version(&path).await, (1, 1));

    let store = Store::sqlite(&path).await.unwrap();
    assert_eq!(sqlite_schema_version(&path).await, (10, 1));
    // Readable as before, and a pending step can be written to it.
    let mut t = store.thread::<Profile>("ada").await.unwrap();
    assert_eq!(t.seq(), 5);
    assert_eq!(t.state().name, "Ada Lovelace");
    let before = t.state().clone();
    t.log_pending(json!({"interrupts": [{"value": "ok?"}]}))
        .await
        .unwrap();
    let again = store.thread::<Profile>("ada").await.unwrap();
    assert_eq!((again.seq(), again.state()), (6, &before));
    assert_eq!(store.history("ada", ..).await.unwrap().len(), 6);
    // Every later version's tables are there: the crons' (version 8).
    let cron = state_store::NewCron::new("c1", "a1", "@hourly").next_run_at(5);
    store.create_cron(cron).await.unwrap();
    assert_eq!(store.due_crons(5, 10).await.unwrap().len(), 1);

    // Opening it again changes nothing more.
    Store::sqlite(&path).await.unwrap();
    assert_eq!(sqlite_schema_version(&path).await, (10, 1));
}

#[tokio::test]
async fn workers_opening_a_version_one_database_at_once_upgrade_it_once() {
    let (_dir, path) = fixture_copy();
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let path = path.clone();
            tokio::spawn(async move { Store::sqlite(&path).await.map(|_| ()) })
        })
        .collect();
    for open in opens {
        open.await.unwrap().unwrap();
    }
    assert_eq!(sqlite_schema_version(&path).await, (10, 1));
    let store = Store::sqlite(&path).await.unwrap();
    assert_eq!(store.thread::<Profile>("ada").await.unwrap().seq(), 5);
}

/// Switching a file to WAL takes a lock SQLite does not wait for: stores
/// opening an application's database (in SQLite's default journal mode)
/// at once, as workers started together do, each wait their turn instead
/// of failing with "database is locked".
#[tokio::test]
async fn stores_opening_a_file_not_yet_in_wal_mode_at_once_each_succeed() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let path = dir.path().join(format!("app-{round}.db"));
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let app = sqlx::SqlitePool::connect_with(options).await.unwrap();
        sqlx::query("CREATE TABLE app_users (name TEXT)")
            .execute(&app)
            .await
            .unwrap();
        app.close().await;
        let (a, b, c) = tokio::join!(
            Store::sqlite(&path),
            Store::sqlite(&path),
            Store::sqlite(&path)
        );
        for (worker, opened) in [a, b, c].into_iter().enumerate() {
            if let Err(error) = opened {
                panic!("round {round}, worker {worker}: {error}");
            }
        }
        let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&raw)
            .await
            .unwrap();
        assert_eq!(mode, "wal", "round {round}");
        raw.close().await;
    }
}

#[tokio::test]
async fn a_newer_store_schema_is_refused() {
    let (_dir, path) = fixture_copy();
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE state_store_schema SET version = 11")
        .execute(&raw)
        .await
        .unwrap();
    raw.close().await;
    let err = Store::sqlite(&path).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 11,
                known: 10,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the database's state-store tables: written by version 11, but this program knows versions up to 10; upgrade it"
    );
    assert_eq!(
        sqlite_schema_version(&path).await,
        (11, 1),
        "left as it was"
    );
}

#[tokio::test]
async fn postgres_store_schema_one_is_upgraded_and_eleven_refused() {
    let db = support::postgres::shared().fresh_database("schema");
    // A new database is created at version 10.
    Store::postgres(&db.url).await.unwrap();
    let raw = sqlx::PgPool::connect(&db.url).await.unwrap();
    assert_eq!(pg_schema_version(&raw).await, (10, 1));

    // Version 1 had the same log tables (and version 3's item tables are
    // created if missing): this is a version-1 database, with a thread in
    // it.
    let store = Store::postgres(&db.url).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().transcript(vec!["one".into()]))
        .await
        .unwrap();
    sqlx::query("UPDATE state_store_schema SET version = 1")
        .execute(&raw)
        .await
        .unwrap();
    // Many workers open it at once: each succeeds, the upgrade is recorded
    // once.
    let stores = support::postgres::open_at_once(&db.url, 8).await;
    assert_eq!(pg_schema_version(&raw).await, (10, 1));
    let t = stores[0].thread::<Chat>("t").await.unwrap();
    assert_eq!(t.state().transcript, ["one"]);

    sqlx::query("UPDATE state_store_schema SET version = 11")
        .execute(&raw)
        .await
        .unwrap();
    let err = Store::postgres(&db.url).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 11,
                known: 10,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(pg_schema_version(&raw).await, (11, 1), "left as it was");
}

/// Sets a SQLite store of the current version back to version 8: its
/// threads and thread records rowid tables again, and version 8's status
/// indexes in place of version 9's.
const SQLITE_BACK_TO_EIGHT: [&str; 13] = [
    "CREATE TABLE threads_v8 (thread_id TEXT PRIMARY KEY, head BIGINT NOT NULL, \
     created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, parent_thread TEXT, \
     parent_seq BIGINT, rewinds BIGINT NOT NULL DEFAULT 0, rewound_to BIGINT NOT NULL DEFAULT 0)",
    "INSERT INTO threads_v8 SELECT * FROM state_store_threads",
    "DROP TABLE state_store_threads",
    "ALTER TABLE threads_v8 RENAME TO state_store_threads",
    "CREATE TABLE records_v8 (thread_id TEXT PRIMARY KEY, metadata TEXT NOT NULL, \
     status TEXT NOT NULL, owner TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)",
    "INSERT INTO records_v8 SELECT * FROM state_store_thread_records",
    "DROP TABLE state_store_thread_records",
    "ALTER TABLE records_v8 RENAME TO state_store_thread_records",
    "CREATE INDEX state_store_thread_records_by_status ON state_store_thread_records (status)",
    "DROP INDEX state_store_runs_pending",
    "DROP INDEX state_store_runs_leases",
    "CREATE INDEX state_store_runs_due ON state_store_runs (status, available_at)",
    "UPDATE state_store_schema SET version = 8",
];

/// The names of the store's indexes on runs and thread records, and the
/// SQL of its threads' and records' tables (SQLite's schema table).
async fn sqlite_layout(raw: &sqlx::SqlitePool) -> (Vec<String>, Vec<String>) {
    let indexes = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL \
         AND tbl_name IN ('state_store_runs', 'state_store_thread_records') ORDER BY name",
    )
    .fetch_all(raw)
    .await
    .unwrap();
    let tables = sqlx::query_scalar(
        "SELECT sql FROM sqlite_master WHERE type = 'table' \
         AND name IN ('state_store_threads', 'state_store_thread_records') ORDER BY name",
    )
    .fetch_all(raw)
    .await
    .unwrap();
    (indexes, tables)
}

const INDEXES_NOW: [&str; 5] = [
    "state_store_runs_by_thread",
    "state_store_runs_leases",
    "state_store_runs_one_running",
    "state_store_runs_pending",
    "state_store_thread_records_unsettled",
];

/// A store's runs and thread records as a version-8 program left them:
/// thread `t` with a step and a record, run `r1` claimed on it, `r2`
/// pending after it, and thread `idle`'s record.
async fn version_eight_rows(store: &Store) {
    use state_store::{IfExists, NewRun};
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().transcript(vec!["one".into()]))
        .await
        .unwrap();
    for (id, kind) in [("t", "busy"), ("idle", "idle")] {
        store
            .create_thread_record(id, json!({ "kind": kind }), None, IfExists::Raise)
            .await
            .unwrap();
    }
    for run in ["r1", "r2"] {
        store
            .create_run(NewRun::new(run, "agent").thread("t"))
            .await
            .unwrap();
    }
    let claim = store
        .claim_run("w1", std::time::Duration::from_secs(60))
        .await
        .unwrap()
        .expect("r1 is claimed");
    assert_eq!(claim.run().run_id, "r1");
}

/// What a version-8 store's rows are after the upgrade: the log, the
/// records and the runs as they were, and the queue going on from there.
async fn rows_kept_after_the_upgrade(store: &Store) {
    use state_store::{RunStatus, ThreadStatus};
    let t = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(
        (t.seq(), t.state().transcript.clone()),
        (1, vec!["one".into()])
    );
    let busy = store.thread_record("t", None).await.unwrap().unwrap();
    assert_eq!(busy.status, ThreadStatus::Busy);
    let idle = store.thread_record("idle", None).await.unwrap().unwrap();
    assert_eq!(
        (idle.status, idle.metadata),
        (ThreadStatus::Idle, json!({"kind": "idle"}))
    );
    let r1 = store.get_run("r1", None).await.unwrap().unwrap();
    assert_eq!(r1.status, RunStatus::Running);
    // `r2` waits for `r1`, still running on its thread.
    assert!(
        store
            .claim_run("w2", std::time::Duration::from_secs(60))
            .await
            .unwrap()
            .is_none()
    );
    // A new thread's run is claimed by the new index.
    store
        .create_run(
            state_store::NewRun::new("r3", "agent")
                .thread("new")
                .if_not_exists(state_store::IfNotExists::Create),
        )
        .await
        .unwrap();
    let claim = store
        .claim_run("w2", std::time::Duration::from_secs(60))
        .await
        .unwrap()
        .expect("r3 is claimed");
    assert_eq!(claim.run().run_id, "r3");
}

#[tokio::test]
async fn a_version_eight_sqlite_database_gets_leaner_tables_with_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = Store::sqlite(&path).await.unwrap();
    version_eight_rows(&store).await;
    drop(store);
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let mut tx = raw.begin().await.unwrap();
    for sql in SQLITE_BACK_TO_EIGHT {
        sqlx::query(sql).execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    let (indexes, tables) = sqlite_layout(&raw).await;
    assert!(indexes.contains(&"state_store_runs_due".to_owned()));
    assert!(tables.iter().all(|sql| !sql.contains("WITHOUT ROWID")));

    let store = Store::sqlite(&path).await.unwrap();
    let (indexes, tables) = sqlite_layout(&raw).await;
    assert_eq!(indexes, INDEXES_NOW);
    assert_eq!(tables.len(), 2);
    assert!(
        tables.iter().all(|sql| sql.ends_with("WITHOUT ROWID")),
        "{tables:?}"
    );
    assert_eq!(
        sqlx::query_as::<_, (i64, i64)>("SELECT MAX(version), COUNT(*) FROM state_store_schema")
            .fetch_one(&raw)
            .await
            .unwrap(),
        (10, 1)
    );
    // A claim's search for due runs reads the new index.
    let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(
        "EXPLAIN QUERY PLAN SELECT run_id FROM state_store_runs \
         WHERE status = 'pending' AND available_at <= 5",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    assert!(
        plan.iter()
            .any(|(_, _, _, detail)| detail.contains("state_store_runs_pending")),
        "{plan:?}"
    );
    rows_kept_after_the_upgrade(&store).await;
    raw.close().await;
}

#[tokio::test]
async fn a_version_eight_postgres_database_gets_the_partial_indexes_with_its_rows() {
    let db = support::postgres::shared().fresh_database("leaner");
    let store = Store::postgres(&db.url).await.unwrap();
    version_eight_rows(&store).await;
    drop(store);
    let raw = sqlx::PgPool::connect(&db.url).await.unwrap();
    for sql in [
        "DROP INDEX state_store_runs_pending",
        "DROP INDEX state_store_runs_leases",
        "DROP INDEX state_store_thread_records_unsettled",
        "CREATE INDEX state_store_runs_due ON state_store_runs (status, available_at)",
        "CREATE INDEX state_store_thread_records_by_status ON state_store_thread_records (status)",
        "UPDATE state_store_schema SET version = 8",
    ] {
        sqlx::query(sql).execute(&raw).await.unwrap();
    }
    // Workers opening it at once: each succeeds, the upgrade made once.
    let stores = support::postgres::open_at_once(&db.url, 4).await;
    assert_eq!(pg_schema_version(&raw).await, (10, 1));
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT indexname FROM pg_indexes WHERE tablename IN \
         ('state_store_runs', 'state_store_thread_records') \
         AND indexname NOT LIKE '%_pkey' ORDER BY indexname",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    assert_eq!(indexes, INDEXES_NOW);
    rows_kept_after_the_upgrade(&stores[0]).await;
}
