//! Writes `tests/fixtures/profile_v1.db`: a thread of the version-1
//! `Profile` state, with a snapshot and steps of every kind after it, for
//! the schema-evolution tests. Run it only to remake the checked-in file:
//! `cargo run -p state-store --example write_fixture_v1`.

#[path = "../tests/it/support/profile_v1.rs"]
mod profile_v1;

use profile_v1::Profile;
use serde_json::json;
use state_core::{Message, State};
use state_store::{SnapshotPolicy, Store};
use std::num::NonZeroU64;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile_v1.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store = Store::sqlite(&path)
        .await?
        .with_snapshot_policy(SnapshotPolicy::every(NonZeroU64::new(3).unwrap()));
    let mut t = store.thread::<Profile>("ada").await?;
    t.apply(
        Profile::delta()
            .messages(vec![Message::human("hello").with_id("m1")])
            .user_name("ada")
            .score("7")
            .mood("curious"),
    )
    .await?;
    t.apply_all([
        Profile::delta().tags(vec!["math".to_string()]),
        Profile::delta().tags(vec!["engines".to_string()]),
    ])
    .await?;
    t.begin_turn().await?; // step 3: a snapshot is written here
    t.set("score", json!("9")).await?;
    t.apply(
        Profile::delta()
            .messages(vec![Message::ai("hi ada").with_id("m2")])
            .user_name("Ada Lovelace"),
    )
    .await?;
    println!(
        "wrote {} (thread \"ada\", {} steps)",
        path.display(),
        t.seq()
    );
    // Fold the WAL into the file: the fixture is the one file.
    drop(t);
    drop(store);
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display())).await?;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&raw)
        .await?;
    raw.close().await;
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
