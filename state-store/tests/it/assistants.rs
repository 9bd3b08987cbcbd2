//! Created assistants on every backend: created at version 1, each update
//! a new version, any version made current again, versions listed newest
//! first, deleted with their versions; owners see only their own; two
//! stores on one database see the same assistants, and concurrent updates
//! number their versions one after the other; an assistant's runs in
//! flight are cancelled together, the pending ones first, from another
//! store on the same database too.

use crate::on_every_backend;
use crate::support::backends::TestStore;
use serde_json::json;
use state_store::{
    AssistantPatch, CancelAction, IfExists, IfNotExists, LeaseState, NewAssistant, NewRun,
    RunStatus, StoreError,
};
use std::time::Duration;

async fn versions_and_latest(ts: TestStore) {
    let store = &ts.store;
    let new = NewAssistant::new("a1", "agent")
        .config(json!({"configurable": {"user": "ada"}}))
        .context(json!({"user": "ada"}))
        .metadata(json!({"team": "support"}))
        .name("one")
        .description("first");
    let made = store
        .create_assistant(new.clone(), IfExists::Raise)
        .await
        .unwrap();
    assert_eq!(made.version, 1);
    assert_eq!(made.created_at, made.updated_at);
    assert_eq!(made.context, json!({"user": "ada"}));
    assert_eq!(made.description.as_deref(), Some("first"));
    assert_eq!(
        store.assistant("a1", None).await.unwrap(),
        Some(made.clone())
    );
    let again = store.create_assistant(new.clone(), IfExists::Raise).await;
    assert!(
        matches!(&again, Err(StoreError::AssistantExists { assistant }) if assistant == "a1"),
        "{again:?}"
    );
    assert_eq!(
        store
            .create_assistant(new.name("other"), IfExists::DoNothing)
            .await
            .unwrap(),
        made,
        "do_nothing returns the one there"
    );

    let patch = AssistantPatch::default()
        .name("two")
        .context(json!({"user": "bo"}))
        .metadata(json!({"stage": "beta"}));
    let v2 = store
        .update_assistant("a1", patch, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v2.version, 2);
    assert_eq!(v2.name, "two");
    assert_eq!(v2.context, json!({"user": "bo"}));
    assert_eq!(v2.metadata, json!({"team": "support", "stage": "beta"}));
    assert_eq!(v2.description.as_deref(), Some("first"), "kept");
    assert_eq!(v2.config, made.config, "kept");
    assert_eq!(v2.created_at, made.created_at);
    assert!(v2.updated_at >= made.updated_at);
    let v3 = store
        .update_assistant("a1", AssistantPatch::default().graph_id("hitl"), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((v3.version, v3.graph_id.as_str()), (3, "hitl"));

    let versions = store.assistant_versions("a1", None).await.unwrap().unwrap();
    let listed: Vec<(u64, &str, &str)> = versions
        .iter()
        .map(|v| (v.version, v.name.as_str(), v.graph_id.as_str()))
        .collect();
    assert_eq!(
        listed,
        [(3, "two", "hitl"), (2, "two", "agent"), (1, "one", "agent")]
    );

    let back = store
        .set_assistant_version("a1", 1, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((back.version, back.name.as_str()), (1, "one"));
    assert_eq!(back.context, json!({"user": "ada"}));
    assert_eq!(back.created_at, made.created_at);
    assert_eq!(store.assistant("a1", None).await.unwrap(), Some(back));
    // A version made after going back is numbered past the highest.
    let v4 = store
        .update_assistant("a1", AssistantPatch::default().name("four"), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((v4.version, v4.graph_id.as_str()), (4, "agent"));
    let missing = store.set_assistant_version("a1", 9, None).await;
    assert!(
        matches!(
            missing,
            Err(StoreError::NoSuchAssistantVersion { version: 9, .. })
        ),
        "{missing:?}"
    );
    assert_eq!(
        store.assistant("a1", None).await.unwrap().unwrap().version,
        4
    );

    let bad = store
        .update_assistant("a1", AssistantPatch::default().context(json!([1])), None)
        .await;
    assert!(matches!(bad, Err(StoreError::InvalidRun { .. })), "{bad:?}");
    assert!(
        store
            .update_assistant("nope", AssistantPatch::default(), None)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .set_assistant_version("nope", 1, None)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .assistant_versions("nope", None)
            .await
            .unwrap()
            .is_none()
    );

    store
        .create_assistant(NewAssistant::new("a2", "agent"), IfExists::Raise)
        .await
        .unwrap();
    let all: Vec<String> = store
        .assistants(None)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.assistant_id)
        .collect();
    assert_eq!(all, ["a2", "a1"], "newest first");

    assert!(store.delete_assistant("a1", None).await.unwrap());
    assert!(!store.delete_assistant("a1", None).await.unwrap());
    assert!(store.assistant("a1", None).await.unwrap().is_none());
    assert!(
        store
            .assistant_versions("a1", None)
            .await
            .unwrap()
            .is_none()
    );
    // Made again, it starts over at version 1 (its versions went with it).
    let anew = store
        .create_assistant(NewAssistant::new("a1", "agent"), IfExists::Raise)
        .await
        .unwrap();
    assert_eq!(anew.version, 1);
    assert_eq!(
        store
            .assistant_versions("a1", None)
            .await
            .unwrap()
            .unwrap()
            .len(),
        1
    );
}

async fn owners_see_only_their_own(ts: TestStore) {
    let store = &ts.store;
    store
        .create_assistant(
            NewAssistant::new("mine", "agent").owner("ada"),
            IfExists::Raise,
        )
        .await
        .unwrap();
    store
        .create_assistant(
            NewAssistant::new("theirs", "agent").owner("bo"),
            IfExists::Raise,
        )
        .await
        .unwrap();
    let ada = Some("ada");
    assert!(store.assistant("mine", ada).await.unwrap().is_some());
    assert!(store.assistant("theirs", ada).await.unwrap().is_none());
    assert!(
        store.assistant("theirs", None).await.unwrap().is_some(),
        "no owner: any"
    );
    let seen: Vec<String> = store
        .assistants(ada)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.assistant_id)
        .collect();
    assert_eq!(seen, ["mine"]);
    let patch = AssistantPatch::default().name("taken");
    assert!(
        store
            .update_assistant("theirs", patch, ada)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .set_assistant_version("theirs", 1, ada)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .assistant_versions("theirs", ada)
            .await
            .unwrap()
            .is_none()
    );
    assert!(!store.delete_assistant("theirs", ada).await.unwrap());
    // Nothing of bo's changed.
    let theirs = store
        .assistant("theirs", Some("bo"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((theirs.version, theirs.name.as_str()), (1, "Untitled"));
    // Another owner's id is taken all the same: do_nothing does not
    // hand it over.
    let taken = store
        .create_assistant(
            NewAssistant::new("theirs", "agent").owner("ada"),
            IfExists::DoNothing,
        )
        .await;
    assert!(
        matches!(taken, Err(StoreError::AssistantExists { .. })),
        "{taken:?}"
    );
}

/// Two stores on one database (two processes' pools) share assistants;
/// updates racing from both number their versions 2..=17 without a gap
/// or a duplicate.
async fn shared_and_numbered_under_races(ts: TestStore) {
    let other = ts.another_worker().await;
    ts.store
        .create_assistant(NewAssistant::new("a1", "agent"), IfExists::Raise)
        .await
        .unwrap();
    assert!(other.assistant("a1", None).await.unwrap().is_some());
    let updates: Vec<_> = (0..16)
        .map(|i| {
            let store = if i % 2 == 0 {
                ts.store.clone()
            } else {
                other.clone()
            };
            tokio::spawn(async move {
                let patch = AssistantPatch::default().name(format!("n{i}"));
                store.update_assistant("a1", patch, None).await
            })
        })
        .collect();
    let mut numbers = Vec::new();
    for update in updates {
        numbers.push(update.await.unwrap().unwrap().unwrap().version);
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (2..=17).collect::<Vec<u64>>());
    let versions = other.assistant_versions("a1", None).await.unwrap().unwrap();
    assert_eq!(versions.len(), 17);
    assert_eq!(
        ts.store
            .assistant("a1", None)
            .await
            .unwrap()
            .unwrap()
            .version,
        17
    );
}

/// `cancel_assistant_runs`: the assistant's pending runs end at once
/// (interrupted), its running one is asked to stop (its worker's next
/// renewal says so), its finished runs and another assistant's are left;
/// a second call finds nothing. Asked through another store on the same
/// database, as a delete on another process would.
async fn its_runs_in_flight_cancelled(ts: TestStore) {
    let store = &ts.store;
    let lease = Duration::from_secs(30);
    let on = |run: &str, thread: &str, assistant: &str| {
        NewRun::new(run, assistant)
            .thread(thread)
            .if_not_exists(IfNotExists::Create)
    };
    store.create_run(on("done", "t0", "a1")).await.unwrap();
    let claim = store.claim_run("w1", lease).await.unwrap().unwrap();
    store
        .finish_run(&claim, RunStatus::Success, None)
        .await
        .unwrap();
    store.create_run(on("running", "t1", "a1")).await.unwrap();
    let running = store.claim_run("w1", lease).await.unwrap().unwrap();
    assert_eq!(running.run().run_id, "running");
    store.create_run(on("queued", "t1", "a1")).await.unwrap();
    store
        .create_run(on("later", "t2", "a1").after(lease))
        .await
        .unwrap();
    store.create_run(on("other", "t3", "a2")).await.unwrap();

    let other = ts.another_worker().await;
    let cancelled = other
        .cancel_assistant_runs("a1", CancelAction::Interrupt)
        .await
        .unwrap();
    let got: Vec<(&str, RunStatus)> = cancelled
        .iter()
        .map(|r| (r.run_id.as_str(), r.status))
        .collect();
    assert_eq!(
        got,
        [
            ("queued", RunStatus::Interrupted),
            ("later", RunStatus::Interrupted),
            ("running", RunStatus::Running),
        ],
        "the pending ones first, then the running one (asked to stop)"
    );
    assert_eq!(cancelled[2].cancel, Some(CancelAction::Interrupt));
    assert_eq!(
        store.renew_run(&running, lease).await.unwrap(),
        LeaseState::Cancel(CancelAction::Interrupt)
    );
    let status =
        |id: &'static str| async move { store.get_run(id, None).await.unwrap().unwrap().status };
    assert_eq!(status("done").await, RunStatus::Success);
    assert_eq!(status("other").await, RunStatus::Pending);
    store
        .finish_run(&running, RunStatus::Interrupted, None)
        .await
        .unwrap();
    assert!(
        store
            .cancel_assistant_runs("a1", CancelAction::Interrupt)
            .await
            .unwrap()
            .is_empty()
    );
}

on_every_backend!(
    versions_and_latest,
    owners_see_only_their_own,
    shared_and_numbered_under_races,
    its_runs_in_flight_cancelled
);
