//! Crons on every backend: every field round-trips; owners see only their
//! own; an update changes what it sets and nothing else; search filters
//! (assistant, thread, enabled, metadata containment, owner), orders
//! (nulls last ascending, ties by id) and pages; the due crons are the
//! enabled ones whose next run has come, soonest first; advancing a next
//! run is a compare-and-set, once among racing stores on one database; a
//! payload or metadata that is not an object is refused with nothing
//! written. On SQLite, a corrupt row is an error naming the cron and the
//! column; on SQLite and PostgreSQL, a database at schema version 7 gets
//! the crons' table when opened.

use crate::on_every_backend;
use crate::support;
use crate::support::backends::TestStore;
use serde_json::json;
use state_core::State;
use state_store::{CronPatch, CronRecord, CronSearch, CronSort, NewCron, Store, StoreError};

/// The ids of `crons`, in order.
fn ids(crons: &[CronRecord]) -> Vec<&str> {
    crons.iter().map(|c| c.cron_id.as_str()).collect()
}

async fn create_and_get(ts: TestStore) {
    let store = &ts.store;
    let new = NewCron::new("c1", "a1", "0 9 * * 1-5")
        .thread("t1")
        .timezone("Europe/Paris")
        .end_time(1_800_000_000_000_000)
        .payload(json!({"input": {"ping": true}, "config": {"tags": ["x"]}}))
        .metadata(json!({"team": "support", "n": 2}))
        .enabled(false)
        .on_run_completed("keep")
        .next_run_at(1_700_000_000_000_000)
        .owner("ada");
    let made = store.create_cron(new.clone()).await.unwrap();
    assert_eq!(made.cron_id, "c1");
    assert_eq!(made.assistant_id, "a1");
    assert_eq!(made.thread_id.as_deref(), Some("t1"));
    assert_eq!(made.schedule, "0 9 * * 1-5");
    assert_eq!(made.timezone.as_deref(), Some("Europe/Paris"));
    assert_eq!(made.end_time, Some(1_800_000_000_000_000));
    assert_eq!(
        made.payload,
        json!({"input": {"ping": true}, "config": {"tags": ["x"]}})
    );
    assert_eq!(made.metadata, json!({"team": "support", "n": 2}));
    assert!(!made.enabled);
    assert_eq!(made.on_run_completed.as_deref(), Some("keep"));
    assert_eq!(made.next_run_at, Some(1_700_000_000_000_000));
    assert_eq!(made.owner.as_deref(), Some("ada"));
    assert_eq!(made.created_at, made.updated_at);
    assert!(made.created_at > 1_600_000_000_000_000, "now, in micros");
    assert_eq!(
        store.cron("c1", None).await.unwrap(),
        Some(made.clone()),
        "{}",
        ts.name
    );
    assert_eq!(store.cron("c1", Some("ada")).await.unwrap(), Some(made));

    // The defaults: enabled, empty objects, every option unset.
    let plain = store
        .create_cron(NewCron::new("c2", "a1", "@hourly"))
        .await
        .unwrap();
    assert!(plain.enabled);
    assert_eq!((&plain.payload, &plain.metadata), (&json!({}), &json!({})));
    assert_eq!(
        (
            &plain.thread_id,
            &plain.timezone,
            plain.end_time,
            &plain.on_run_completed
        ),
        (&None, &None, None, &None)
    );
    assert_eq!((plain.next_run_at, &plain.owner), (None, &None));
    assert_eq!(store.cron("c2", None).await.unwrap(), Some(plain));

    // An id taken is refused, naming it; the one there is left.
    let again = store.create_cron(NewCron::new("c1", "a2", "@daily")).await;
    assert!(
        matches!(&again, Err(StoreError::CronExists { cron }) if cron == "c1"),
        "{again:?}"
    );
    assert!(again.unwrap_err().to_string().contains("\"c1\""));
    assert_eq!(
        store.cron("c1", None).await.unwrap().unwrap().assistant_id,
        "a1"
    );

    assert_eq!(store.cron("nope", None).await.unwrap(), None);
    // Ids the store cannot keep are refused.
    for bad in ["", "a\0b"] {
        assert!(matches!(
            store.cron(bad, None).await,
            Err(StoreError::InvalidThreadId { .. })
        ));
        assert!(matches!(
            store.create_cron(NewCron::new(bad, "a1", "@hourly")).await,
            Err(StoreError::InvalidThreadId { .. })
        ));
        assert!(
            store
                .create_cron(NewCron::new("c9", "a1", "@hourly").thread(bad))
                .await
                .is_err()
        );
    }
    assert_eq!(store.count_crons(&CronSearch::default()).await.unwrap(), 2);
}

async fn owners_see_only_their_own(ts: TestStore) {
    let store = &ts.store;
    store
        .create_cron(NewCron::new("ada-1", "a1", "@hourly").owner("ada"))
        .await
        .unwrap();
    store
        .create_cron(NewCron::new("bo-1", "a1", "@hourly").owner("bo"))
        .await
        .unwrap();
    store
        .create_cron(NewCron::new("none-1", "a1", "@hourly"))
        .await
        .unwrap();

    assert!(store.cron("ada-1", Some("ada")).await.unwrap().is_some());
    assert!(store.cron("ada-1", Some("bo")).await.unwrap().is_none());
    assert!(store.cron("none-1", Some("bo")).await.unwrap().is_none());
    assert!(store.cron("ada-1", None).await.unwrap().is_some());

    // Another owner's cron is neither changed nor deleted.
    let patch = CronPatch::default().schedule("@daily");
    assert_eq!(
        store
            .update_cron("ada-1", patch.clone(), Some("bo"))
            .await
            .unwrap(),
        None
    );
    assert!(!store.delete_cron("ada-1", Some("bo")).await.unwrap());
    let kept = store.cron("ada-1", None).await.unwrap().unwrap();
    assert_eq!(kept.schedule, "@hourly");
    assert_eq!(kept.created_at, kept.updated_at, "not touched");
    let changed = store
        .update_cron("ada-1", patch, Some("ada"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.schedule, "@daily");

    let mine = store
        .search_crons(&CronSearch::default().owner("bo"))
        .await
        .unwrap();
    assert_eq!(ids(&mine), ["bo-1"]);
    assert_eq!(
        store
            .count_crons(&CronSearch::default().owner("ada"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.count_crons(&CronSearch::default()).await.unwrap(), 3);
    assert!(store.delete_cron("bo-1", Some("bo")).await.unwrap());
    assert!(store.delete_cron("none-1", None).await.unwrap());
    assert_eq!(store.count_crons(&CronSearch::default()).await.unwrap(), 1);
}

/// What a patch should do to the record.
type Expect = Box<dyn Fn(&mut CronRecord)>;

async fn updates_change_what_they_set(ts: TestStore) {
    let store = &ts.store;
    let made = store
        .create_cron(
            NewCron::new("c1", "a1", "@hourly")
                .thread("t1")
                .timezone("UTC")
                .end_time(500)
                .payload(json!({"input": 1}))
                .metadata(json!({"a": 1}))
                .on_run_completed("delete")
                .next_run_at(100)
                .owner("ada"),
        )
        .await
        .unwrap();
    let update = |patch: CronPatch| async move {
        store
            .update_cron("c1", patch, None)
            .await
            .unwrap()
            .expect("the cron")
    };
    let mut last = made.clone();
    let mut expect = made.clone();
    let patches: Vec<(CronPatch, Expect)> = vec![
        (
            CronPatch::default().schedule("@daily"),
            Box::new(|c| c.schedule = "@daily".into()),
        ),
        (
            CronPatch::default().timezone(Some("Asia/Tokyo".into())),
            Box::new(|c| c.timezone = Some("Asia/Tokyo".into())),
        ),
        (
            CronPatch::default().timezone(None),
            Box::new(|c| c.timezone = None),
        ),
        (
            CronPatch::default().end_time(Some(900)),
            Box::new(|c| c.end_time = Some(900)),
        ),
        (
            CronPatch::default().end_time(None),
            Box::new(|c| c.end_time = None),
        ),
        (
            CronPatch::default().payload(json!({"input": 2, "stream_mode": "values"})),
            Box::new(|c| c.payload = json!({"input": 2, "stream_mode": "values"})),
        ),
        (
            CronPatch::default().metadata(json!({"b": 2})),
            Box::new(|c| c.metadata = json!({"b": 2})),
        ),
        (
            CronPatch::default().enabled(false),
            Box::new(|c| c.enabled = false),
        ),
        (
            CronPatch::default().enabled(true),
            Box::new(|c| c.enabled = true),
        ),
        (
            CronPatch::default().on_run_completed(Some("keep".into())),
            Box::new(|c| c.on_run_completed = Some("keep".into())),
        ),
        (
            CronPatch::default().on_run_completed(None),
            Box::new(|c| c.on_run_completed = None),
        ),
        (
            CronPatch::default().next_run_at(Some(200)),
            Box::new(|c| c.next_run_at = Some(200)),
        ),
        (
            CronPatch::default().next_run_at(None),
            Box::new(|c| c.next_run_at = None),
        ),
        // Nothing set: only the update time moves.
        (CronPatch::default(), Box::new(|_| {})),
    ];
    for (patch, change) in patches {
        let changed = update(patch.clone()).await;
        change(&mut expect);
        assert!(changed.updated_at > last.updated_at, "{patch:?}");
        expect.updated_at = changed.updated_at;
        assert_eq!(changed, expect, "{} {patch:?}", ts.name);
        assert_eq!(store.cron("c1", None).await.unwrap(), Some(changed.clone()));
        last = changed;
    }
    assert_eq!(last.created_at, made.created_at);
    assert_eq!(
        (
            last.assistant_id.as_str(),
            last.thread_id.as_deref(),
            last.owner.as_deref()
        ),
        ("a1", Some("t1"), Some("ada")),
        "never changed"
    );

    // Many fields at once.
    let both = update(
        CronPatch::default()
            .schedule("*/5 * * * *")
            .timezone(Some("UTC".into()))
            .next_run_at(Some(7))
            .enabled(false),
    )
    .await;
    assert_eq!(
        (
            both.schedule.as_str(),
            both.timezone.as_deref(),
            both.next_run_at,
            both.enabled
        ),
        ("*/5 * * * *", Some("UTC"), Some(7), false)
    );

    assert_eq!(
        store
            .update_cron("missing", CronPatch::default().enabled(false), None)
            .await
            .unwrap(),
        None
    );
}

async fn deleted(ts: TestStore) {
    let store = &ts.store;
    for id in ["c1", "c2"] {
        store
            .create_cron(NewCron::new(id, "a1", "@hourly").next_run_at(10))
            .await
            .unwrap();
    }
    assert!(store.delete_cron("c1", None).await.unwrap());
    assert!(!store.delete_cron("c1", None).await.unwrap());
    assert!(!store.delete_cron("never", None).await.unwrap());
    assert_eq!(store.cron("c1", None).await.unwrap(), None);
    assert_eq!(
        store
            .update_cron("c1", CronPatch::default().enabled(false), None)
            .await
            .unwrap(),
        None
    );
    assert!(!store.advance_cron("c1", 10, Some(20)).await.unwrap());
    assert_eq!(ids(&store.due_crons(100, 10).await.unwrap()), ["c2"]);
    // The id can be taken again.
    store
        .create_cron(NewCron::new("c1", "a2", "@daily"))
        .await
        .unwrap();
    assert_eq!(
        store.cron("c1", None).await.unwrap().unwrap().assistant_id,
        "a2"
    );
}

async fn search_filters(ts: TestStore) {
    let store = &ts.store;
    let crons = [
        NewCron::new("c1", "a1", "@hourly")
            .thread("t1")
            .metadata(json!({"team": "x", "tier": 1}))
            .owner("ada"),
        NewCron::new("c2", "a1", "@hourly")
            .metadata(json!({"team": "y", "nested": {"k": [1, 2]}}))
            .enabled(false),
        NewCron::new("c3", "a2", "@hourly")
            .thread("t1")
            .metadata(json!({"team": "x"}))
            .owner("bo"),
        NewCron::new("c4", "a2", "@hourly")
            .thread("t2")
            .enabled(false)
            .owner("ada"),
    ];
    for new in crons {
        store.create_cron(new).await.unwrap();
    }
    let sorted = |search: CronSearch| async move {
        let found = store
            .search_crons(&search.clone().sort(CronSort::CronId, false))
            .await
            .unwrap();
        let count = store.count_crons(&search).await.unwrap();
        assert_eq!(count, found.len() as u64, "count agrees with search");
        found.into_iter().map(|c| c.cron_id).collect::<Vec<_>>()
    };
    assert_eq!(
        sorted(CronSearch::default()).await,
        ["c1", "c2", "c3", "c4"]
    );
    assert_eq!(
        sorted(CronSearch::default().assistant_id("a1")).await,
        ["c1", "c2"]
    );
    assert_eq!(
        sorted(CronSearch::default().thread_id("t1")).await,
        ["c1", "c3"]
    );
    assert_eq!(
        sorted(CronSearch::default().enabled(true)).await,
        ["c1", "c3"]
    );
    assert_eq!(
        sorted(CronSearch::default().enabled(false)).await,
        ["c2", "c4"]
    );
    assert_eq!(
        sorted(CronSearch::default().metadata(json!({"team": "x"}))).await,
        ["c1", "c3"]
    );
    assert_eq!(
        sorted(CronSearch::default().metadata(json!({"team": "x", "tier": 1}))).await,
        ["c1"]
    );
    assert_eq!(
        sorted(CronSearch::default().metadata(json!({"nested": {"k": [1, 2]}}))).await,
        ["c2"]
    );
    assert!(
        sorted(CronSearch::default().metadata(json!({"team": "z"})))
            .await
            .is_empty()
    );
    assert_eq!(
        sorted(CronSearch::default().metadata(json!({})))
            .await
            .len(),
        4,
        "an empty filter holds for all"
    );
    assert_eq!(
        sorted(CronSearch::default().owner("ada")).await,
        ["c1", "c4"]
    );
    assert_eq!(
        sorted(
            CronSearch::default()
                .assistant_id("a2")
                .thread_id("t1")
                .enabled(true)
                .metadata(json!({"team": "x"}))
                .owner("bo")
        )
        .await,
        ["c3"]
    );
    assert!(
        sorted(CronSearch::default().assistant_id("a2").owner("nobody"))
            .await
            .is_empty()
    );
    // A filter that is not an object is refused.
    let refused = store
        .search_crons(&CronSearch::default().metadata(json!(["team"])))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::InvalidRun { reason, .. }) if reason.contains("metadata")),
        "{refused:?}"
    );
    assert!(
        store
            .count_crons(&CronSearch::default().metadata(json!("x")))
            .await
            .is_err()
    );
}

async fn sorted_and_paged(ts: TestStore) {
    let store = &ts.store;
    // Made in this order (so created and updated in it); "B-…" sorts
    // before "a-…" bytewise, on every backend.
    let crons = [
        ("a-1", Some(10), Some("t2"), Some(300)),
        ("a-2", Some(10), None, None),
        ("B-3", Some(5), Some("t1"), Some(100)),
        ("a-4", None, Some("t1"), None),
        ("a-5", Some(20), None, Some(200)),
    ];
    for (id, next, thread, end) in crons {
        let mut new = NewCron::new(id, format!("asst-{id}"), "@hourly");
        if let Some(next) = next {
            new = new.next_run_at(next);
        }
        if let Some(thread) = thread {
            new = new.thread(thread);
        }
        if let Some(end) = end {
            new = new.end_time(end);
        }
        store.create_cron(new).await.unwrap();
    }
    let order = |by: CronSort, descending: bool| async move {
        let found = store
            .search_crons(&CronSearch::default().sort(by, descending).limit(100))
            .await
            .unwrap();
        found.into_iter().map(|c| c.cron_id).collect::<Vec<_>>()
    };
    let check = |by: CronSort, ascending: [&'static str; 5]| async move {
        assert_eq!(order(by, false).await, ascending, "{} {by:?} asc", ts.name);
        let mut descending = ascending.to_vec();
        descending.reverse();
        assert_eq!(order(by, true).await, descending, "{} {by:?} desc", ts.name);
    };
    check(CronSort::CreatedAt, ["a-1", "a-2", "B-3", "a-4", "a-5"]).await;
    check(CronSort::UpdatedAt, ["a-1", "a-2", "B-3", "a-4", "a-5"]).await;
    // Ties by id; no next run after every other.
    check(CronSort::NextRunDate, ["B-3", "a-1", "a-2", "a-5", "a-4"]).await;
    check(CronSort::CronId, ["B-3", "a-1", "a-2", "a-4", "a-5"]).await;
    check(CronSort::AssistantId, ["B-3", "a-1", "a-2", "a-4", "a-5"]).await;
    check(CronSort::ThreadId, ["B-3", "a-4", "a-1", "a-2", "a-5"]).await;
    check(CronSort::EndTime, ["B-3", "a-5", "a-1", "a-2", "a-4"]).await;

    // The default: newest first, 10 at most.
    let newest = store.search_crons(&CronSearch::default()).await.unwrap();
    assert_eq!(ids(&newest), ["a-5", "a-4", "B-3", "a-2", "a-1"]);

    // Pages of every size, in both directions, add up to the whole.
    for (by, descending) in [
        (CronSort::NextRunDate, false),
        (CronSort::NextRunDate, true),
        (CronSort::CreatedAt, false),
        (CronSort::CreatedAt, true),
    ] {
        let whole = order(by, descending).await;
        for limit in 1..=6 {
            let mut paged = Vec::new();
            let mut offset = 0;
            loop {
                let page = store
                    .search_crons(
                        &CronSearch::default()
                            .sort(by, descending)
                            .limit(limit)
                            .offset(offset),
                    )
                    .await
                    .unwrap();
                assert!(page.len() <= limit);
                if page.is_empty() {
                    break;
                }
                offset += page.len();
                paged.extend(page.into_iter().map(|c| c.cron_id));
            }
            assert_eq!(paged, whole, "{by:?} {descending} limit {limit}");
        }
    }
    let page = store
        .search_crons(
            &CronSearch::default()
                .sort(CronSort::NextRunDate, false)
                .limit(2)
                .offset(1),
        )
        .await
        .unwrap();
    assert_eq!(ids(&page), ["a-1", "a-2"]);
    assert!(
        store
            .search_crons(&CronSearch::default().limit(0))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_crons(&CronSearch::default().offset(5))
            .await
            .unwrap()
            .is_empty()
    );
    // A count ignores the page.
    assert_eq!(
        store
            .count_crons(&CronSearch::default().limit(1).offset(3))
            .await
            .unwrap(),
        5
    );
    // Paging after the metadata filter.
    store
        .update_cron("a-2", CronPatch::default().metadata(json!({"k": 1})), None)
        .await
        .unwrap();
    store
        .update_cron("a-5", CronPatch::default().metadata(json!({"k": 1})), None)
        .await
        .unwrap();
    let filtered = CronSearch::default()
        .metadata(json!({"k": 1}))
        .sort(CronSort::CronId, false);
    let second = store
        .search_crons(&filtered.clone().limit(1).offset(1))
        .await
        .unwrap();
    assert_eq!(ids(&second), ["a-5"]);
    assert_eq!(store.count_crons(&filtered).await.unwrap(), 2);
}

async fn due_and_next(ts: TestStore) {
    let store = &ts.store;
    assert_eq!(store.next_cron_due().await.unwrap(), None);
    assert!(store.due_crons(i64::MAX, 10).await.unwrap().is_empty());
    let crons = [
        ("c1", Some(30), true),
        ("c2", Some(10), true),
        ("c3", Some(20), true),
        ("c4", Some(5), false),
        ("c5", None, true),
        ("c6", Some(50), true),
        ("c0", Some(20), true),
    ];
    for (id, next, enabled) in crons {
        let mut new = NewCron::new(id, "a1", "@hourly").enabled(enabled);
        if let Some(next) = next {
            new = new.next_run_at(next);
        }
        store.create_cron(new).await.unwrap();
    }
    // Disabled and without a next run: never due; soonest first, ties by id.
    assert_eq!(
        ids(&store.due_crons(40, 10).await.unwrap()),
        ["c2", "c0", "c3", "c1"]
    );
    assert_eq!(ids(&store.due_crons(40, 2).await.unwrap()), ["c2", "c0"]);
    assert!(store.due_crons(40, 0).await.unwrap().is_empty());
    assert_eq!(
        ids(&store.due_crons(20, 10).await.unwrap()),
        ["c2", "c0", "c3"],
        "at the time itself"
    );
    assert!(store.due_crons(9, 10).await.unwrap().is_empty());
    assert_eq!(
        store.due_crons(i64::MAX, usize::MAX).await.unwrap().len(),
        5
    );
    assert_eq!(store.next_cron_due().await.unwrap(), Some(10));

    store
        .update_cron("c2", CronPatch::default().enabled(false), None)
        .await
        .unwrap();
    assert_eq!(store.next_cron_due().await.unwrap(), Some(20));
    store
        .update_cron("c4", CronPatch::default().enabled(true), None)
        .await
        .unwrap();
    assert_eq!(store.next_cron_due().await.unwrap(), Some(5));
    assert_eq!(
        ids(&store.due_crons(20, 10).await.unwrap()),
        ["c4", "c0", "c3"]
    );
    for id in ["c0", "c1", "c3", "c4", "c6"] {
        store.delete_cron(id, None).await.unwrap();
    }
    assert_eq!(store.next_cron_due().await.unwrap(), None, "c5 has none");
}

async fn advanced_once(ts: TestStore) {
    let store = &ts.store;
    let made = store
        .create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(10))
        .await
        .unwrap();
    assert!(!store.advance_cron("c1", 11, Some(20)).await.unwrap());
    assert!(store.advance_cron("c1", 10, Some(20)).await.unwrap());
    assert!(
        !store.advance_cron("c1", 10, Some(20)).await.unwrap(),
        "the second advance from the old value"
    );
    let now = store.cron("c1", None).await.unwrap().unwrap();
    assert_eq!(now.next_run_at, Some(20));
    assert!(now.updated_at > made.updated_at);
    assert!(store.advance_cron("c1", 20, None).await.unwrap());
    assert_eq!(
        store.cron("c1", None).await.unwrap().unwrap().next_run_at,
        None
    );
    assert!(
        !store.advance_cron("c1", 20, Some(30)).await.unwrap(),
        "no next run: nothing to advance from"
    );
    assert!(!store.advance_cron("other", 20, Some(30)).await.unwrap());
    assert!(store.advance_cron("", 1, None).await.is_err());

    // Schedulers on two stores of one database fire the same tick: one
    // advances it.
    store
        .create_cron(NewCron::new("race", "a1", "@hourly").next_run_at(100))
        .await
        .unwrap();
    let other = ts.another_worker().await;
    let racers: Vec<_> = (0..8)
        .map(|n| {
            let store = if n % 2 == 0 {
                ts.store.clone()
            } else {
                other.clone()
            };
            tokio::spawn(async move { store.advance_cron("race", 100, Some(200)).await })
        })
        .collect();
    let mut advanced = 0;
    for racer in racers {
        if racer.await.unwrap().unwrap() {
            advanced += 1;
        }
    }
    assert_eq!(advanced, 1, "{}", ts.name);
    assert_eq!(
        other.cron("race", None).await.unwrap().unwrap().next_run_at,
        Some(200)
    );
}

async fn not_objects_refused(ts: TestStore) {
    let store = &ts.store;
    for (field, new) in [
        (
            "payload",
            NewCron::new("c1", "a1", "@hourly").payload(json!([1])),
        ),
        (
            "payload",
            NewCron::new("c1", "a1", "@hourly").payload(json!(null)),
        ),
        (
            "metadata",
            NewCron::new("c1", "a1", "@hourly").metadata(json!("x")),
        ),
        (
            "metadata",
            NewCron::new("c1", "a1", "@hourly").metadata(json!(3)),
        ),
    ] {
        let refused = store.create_cron(new).await;
        let text = refused
            .as_ref()
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(
            matches!(&refused, Err(StoreError::InvalidRun { .. }))
                && text.contains(field)
                && text.contains("\"c1\""),
            "{refused:?}"
        );
    }
    assert_eq!(
        store.cron("c1", None).await.unwrap(),
        None,
        "nothing written"
    );
    assert_eq!(store.count_crons(&CronSearch::default()).await.unwrap(), 0);

    let made = store
        .create_cron(NewCron::new("c1", "a1", "@hourly").payload(json!({"a": 1})))
        .await
        .unwrap();
    for (field, patch) in [
        ("payload", CronPatch::default().payload(json!("x"))),
        (
            "metadata",
            CronPatch::default().schedule("@daily").metadata(json!([])),
        ),
    ] {
        let refused = store.update_cron("c1", patch, None).await;
        assert!(
            matches!(&refused, Err(StoreError::InvalidRun { reason, .. }) if reason.contains(field)),
            "{refused:?}"
        );
    }
    assert_eq!(
        store.cron("c1", None).await.unwrap(),
        Some(made),
        "nothing written"
    );
}

on_every_backend!(
    create_and_get,
    owners_see_only_their_own,
    updates_change_what_they_set,
    deleted,
    search_filters,
    sorted_and_paged,
    due_and_next,
    advanced_once,
    not_objects_refused
);

/// A SQLite store with crons "c1" and "c2" due, and a raw pool on its file.
async fn sqlite_with_crons(dir: &std::path::Path) -> (Store, sqlx::SqlitePool) {
    let path = dir.join("store.db");
    let store = Store::sqlite(&path).await.unwrap();
    for id in ["c1", "c2"] {
        store
            .create_cron(NewCron::new(id, "a1", "@hourly").next_run_at(10))
            .await
            .unwrap();
    }
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    (store, raw)
}

#[tokio::test]
async fn a_corrupt_row_is_an_error_naming_the_cron_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let (store, raw) = sqlite_with_crons(dir.path()).await;
    for (column, sql) in [
        (
            "payload",
            "UPDATE state_store_crons SET payload = '{\"input\": ' WHERE cron_id = 'c2'",
        ),
        (
            "payload",
            "UPDATE state_store_crons SET payload = '[1, 2]' WHERE cron_id = 'c2'",
        ),
        (
            "metadata",
            "UPDATE state_store_crons SET payload = '{}', metadata = 'nope' WHERE cron_id = 'c2'",
        ),
        (
            "enabled",
            "UPDATE state_store_crons SET metadata = '{}', enabled = 7 WHERE cron_id = 'c2'",
        ),
    ] {
        sqlx::query(sql).execute(&raw).await.unwrap();
        let err = store.cron("c2", None).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::CorruptRun { what, column: found, .. }
                if what == "cron \"c2\"" && *found == column),
            "{err:?}"
        );
        assert!(err.to_string().contains("cron \"c2\""), "{err}");
        // Every read that decodes it says so; the other cron reads.
        assert!(
            store
                .search_crons(&CronSearch::default().sort(CronSort::CronId, true))
                .await
                .is_err()
        );
        assert!(store.count_crons(&CronSearch::default()).await.is_err());
        match column {
            // Only a row with `enabled = 1` is due: this one is not read.
            "enabled" => assert_eq!(ids(&store.due_crons(10, 10).await.unwrap()), ["c1"]),
            _ => assert!(store.due_crons(10, 10).await.is_err()),
        }
        assert!(store.cron("c1", None).await.unwrap().is_some());
        assert_eq!(
            ids(&store
                .search_crons(&CronSearch::default().sort(CronSort::CronId, false).limit(1))
                .await
                .unwrap()),
            ["c1"],
            "a page before it"
        );
    }
    // It can still be deleted.
    assert!(store.delete_cron("c2", None).await.unwrap());
    assert_eq!(store.due_crons(10, 10).await.unwrap().len(), 1);
}

/// Sets the store at `raw` back to schema version 7: no crons' table.
const BACK_TO_SEVEN: [&str; 3] = [
    "DROP INDEX state_store_crons_due",
    "DROP TABLE state_store_crons",
    "UPDATE state_store_schema SET version = 7",
];

#[tokio::test]
async fn a_sqlite_database_at_version_seven_gets_the_crons_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = Store::sqlite(&path).await.unwrap();
    let mut t = store.thread::<support::states::Chat>("t").await.unwrap();
    t.apply(support::states::Chat::delta().transcript(vec!["one".into()]))
        .await
        .unwrap();
    drop(t);
    drop(store);
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    for sql in BACK_TO_SEVEN {
        sqlx::query(sql).execute(&raw).await.unwrap();
    }

    let store = Store::sqlite(&path).await.unwrap();
    let version: (i64,) = sqlx::query_as("SELECT version FROM state_store_schema")
        .fetch_one(&raw)
        .await
        .unwrap();
    assert_eq!(version, (10,));
    let index: (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'state_store_crons_due'",
    )
    .fetch_one(&raw)
    .await
    .unwrap();
    assert_eq!(index, (1,));
    store
        .create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(5))
        .await
        .unwrap();
    assert_eq!(ids(&store.due_crons(5, 1).await.unwrap()), ["c1"]);
    let t = store.thread::<support::states::Chat>("t").await.unwrap();
    assert_eq!(t.state().transcript, ["one"], "the log untouched");
}

#[tokio::test]
async fn a_postgres_database_at_version_seven_gets_the_crons_table() {
    let db = support::postgres::shared().fresh_database("crons");
    let store = Store::postgres(&db.url).await.unwrap();
    store
        .create_thread_record("t", json!({"a": 1}), None, state_store::IfExists::Raise)
        .await
        .unwrap();
    drop(store);
    let raw = sqlx::PgPool::connect(&db.url).await.unwrap();
    for sql in BACK_TO_SEVEN {
        sqlx::query(sql).execute(&raw).await.unwrap();
    }
    // Many workers open it at once: each succeeds, the upgrade is made once.
    let stores = support::postgres::open_at_once(&db.url, 4).await;
    let version: (i64, i64) =
        sqlx::query_as("SELECT MAX(version), COUNT(*) FROM state_store_schema")
            .fetch_one(&raw)
            .await
            .unwrap();
    assert_eq!(version, (10, 1));
    stores[0]
        .create_cron(NewCron::new("c1", "a1", "@hourly").next_run_at(5))
        .await
        .unwrap();
    assert_eq!(ids(&stores[1].due_crons(5, 1).await.unwrap()), ["c1"]);
    let record = stores[2].thread_record("t", None).await.unwrap().unwrap();
    assert_eq!(record.metadata, json!({"a": 1}), "older tables untouched");
}
