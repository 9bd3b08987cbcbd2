//! Every path over real HTTP on loopback, on every backend (memory, a
//! SQLite file, PostgreSQL): `/threads` newest first and paged to the end,
//! `/history` paged by seq, `/state` now and at any step, and the errors
//! each answers for bad input.

use crate::on_every_backend;
use crate::support::backends::TestStore;
use crate::support::{Notes, all_pages, get, serve, thread_with_steps};
use serde_json::{Value, json};
use state_core::State;
use std::collections::HashSet;
use std::time::Duration;

/// An RFC 3339 UTC time with milliseconds: `2025-01-31T09:05:03.042Z`.
fn assert_time(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("{value} is not a string"));
    let bytes = text.as_bytes();
    assert_eq!(bytes.len(), 24, "{text}");
    for (i, b) in bytes.iter().enumerate() {
        let expected_digit = !matches!(i, 4 | 7 | 10 | 13 | 16 | 19 | 23);
        assert_eq!(b.is_ascii_digit(), expected_digit, "{text}");
    }
    assert!(text.starts_with("20") && text.ends_with('Z'), "{text}");
    assert_eq!(&text[10..11], "T", "{text}");
}

async fn threads_newest_first_paged_to_the_end(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;

    // An empty store lists nothing.
    let empty = get(addr, "/threads").await;
    assert_eq!(empty.status, 200);
    assert_eq!(empty.json(), json!([]));
    assert_eq!(empty.header("link"), None);
    assert_eq!(empty.header("content-type"), Some("application/json"));

    for id in ["a", "b", "c", "d", "e", "f", "g"] {
        thread_with_steps(store, id, 1).await;
    }
    // "c" moves to the front: its update is the newest.
    tokio::time::sleep(Duration::from_millis(5)).await;
    thread_with_steps(store, "c", 2).await; // steps 2 and 3 of "c"
    let forked = store.fork::<Notes>("c", 2, "c-fork").await.unwrap();
    drop(forked);

    let one = get(addr, "/threads?limit=1000").await;
    assert_eq!(one.status, 200);
    assert_eq!(one.header("link"), None);
    let all = one.json();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 8, "{all:?}");
    // Newest first: by updated_at, then by id, both descending.
    let key = |t: &Value| {
        (
            t["updated_at"].as_str().unwrap().to_owned(),
            t["id"].as_str().unwrap().to_owned(),
        )
    };
    for pair in all.windows(2) {
        assert!(
            key(&pair[0]) > key(&pair[1]),
            "{} before {}",
            pair[0],
            pair[1]
        );
    }
    let c = all.iter().find(|t| t["id"] == "c").unwrap();
    assert_eq!(c["seq"], 3);
    assert!(
        all.iter().position(|t| t["id"] == "c").unwrap() <= 1,
        "c (or its fork, made after) is listed first: {all:?}"
    );
    assert_eq!(c["forked_from"], Value::Null);
    assert_time(&c["created_at"]);
    assert_time(&c["updated_at"]);
    assert!(c["created_at"].as_str() < c["updated_at"].as_str());
    let fork = all.iter().find(|t| t["id"] == "c-fork").unwrap();
    assert_eq!(fork["seq"], 2);
    assert_eq!(fork["forked_from"], json!({"thread": "c", "seq": 2}));
    let fields: HashSet<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        HashSet::from(["id", "seq", "created_at", "updated_at", "forked_from"])
    );

    // Paged: every page size lists the same threads in the same order,
    // with no gap and no duplicate.
    for limit in [1, 2, 3, 7, 8, 9] {
        let (paged, pages) = all_pages(addr, "/threads", &format!("limit={limit}")).await;
        assert_eq!(&paged, all, "limit {limit}");
        assert_eq!(pages, 8usize.div_ceil(limit).max(1), "limit {limit}");
    }

    // A thread created while paging does not shift the later pages (the
    // cursor is a position in the order, not an offset).
    let first = get(addr, "/threads?limit=3").await;
    let seen: Vec<Value> = first.json().as_array().unwrap().clone();
    thread_with_steps(store, "new", 1).await;
    let (rest, _) = all_pages(addr, "/threads", &first.next_query().unwrap()).await;
    let mut listed = seen.clone();
    listed.extend(rest);
    assert_eq!(&listed, all);
}

async fn history_paged_by_seq(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    thread_with_steps(store, "t", 23).await;
    let mut t = store.thread::<Notes>("t").await.unwrap();
    t.with_metadata(json!({"nodes": ["writer"]}))
        .apply(Notes::delta().title("draft"))
        .await
        .unwrap();
    t.begin_turn().await.unwrap();
    t.set("title", json!("final")).await.unwrap(); // step 26

    let whole = get(addr, "/threads/t/history").await;
    assert_eq!(whole.status, 200);
    assert_eq!(whole.header("link"), None);
    let steps = whole.json();
    let steps = steps.as_array().unwrap();
    let seqs: Vec<u64> = steps.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=26).collect::<Vec<_>>());
    let first = &steps[0];
    assert_eq!(first["kind"], "apply");
    assert_eq!(first["body"], json!({"log": ["1"]}));
    assert_eq!(first["metadata"], json!({}));
    assert_eq!(first["state_version"], Notes::schema().version());
    assert_time(&first["time"]);
    let fields: HashSet<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        HashSet::from(["seq", "kind", "metadata", "body", "time", "state_version"])
    );
    assert_eq!(steps[23]["metadata"], json!({"nodes": ["writer"]}));
    assert_eq!(steps[23]["body"], json!({"title": "draft"}));
    assert_eq!(steps[24]["kind"], "begin_turn");
    assert_eq!(steps[24]["body"], Value::Null);
    assert_eq!(steps[25]["kind"], "set");
    assert_eq!(steps[25]["body"], json!({"key": "title", "value": "final"}));

    // Paged by seq, to the end, with no gap or duplicate.
    for limit in [1, 5, 10, 25, 26, 27] {
        let (paged, pages) = all_pages(addr, "/threads/t/history", &format!("limit={limit}")).await;
        assert_eq!(&paged, steps, "limit {limit}");
        assert_eq!(pages, 26usize.div_ceil(limit), "limit {limit}");
    }
    let page = get(addr, "/threads/t/history?after=20&limit=3").await;
    let seqs: Vec<u64> = page
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [21, 22, 23]);
    assert_eq!(page.next_query().as_deref(), Some("after=23&limit=3"));
    // Past the end: an empty page, no next one (and no time cap: a page
    // may start anywhere).
    for after in ["26", "27", "18446744073709551615"] {
        let page = get(addr, &format!("/threads/t/history?after={after}")).await;
        assert_eq!(page.status, 200);
        assert_eq!(page.json(), json!([]));
        assert_eq!(page.header("link"), None);
    }
    // A thread with no step yet has an empty history.
    store.thread::<Notes>("empty").await.unwrap();
    let page = get(addr, "/threads/empty/history").await;
    assert_eq!((page.status, page.json()), (200, json!([])));

    // Compacted away: the first pages are empty, the links lead on to the
    // steps that remain.
    let mut c = store.thread::<Notes>("c").await.unwrap();
    for k in 1..=30 {
        c.apply(Notes::delta().log(vec![k.to_string()]))
            .await
            .unwrap();
        if k == 20 {
            c.compact().await.unwrap();
        }
    }
    let (paged, pages) = all_pages(addr, "/threads/c/history", "limit=10").await;
    let seqs: Vec<u64> = paged.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (21..=30).collect::<Vec<_>>());
    assert_eq!(pages, 3);
}

async fn state_now_and_after_any_step(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    thread_with_steps(store, "t", 5).await;

    let now = get(addr, "/threads/t/state").await;
    assert_eq!(now.status, 200);
    assert_eq!(
        now.json(),
        json!({"seq": 5, "values": {"log": ["1", "2", "3", "4", "5"], "title": ""}})
    );
    // Time travel: after each step, through the reducers.
    for seq in 0..=5u64 {
        let at = get(addr, &format!("/threads/t/state?seq={seq}")).await;
        assert_eq!(at.status, 200);
        let log: Vec<String> = (1..=seq).map(|k| k.to_string()).collect();
        assert_eq!(
            at.json(),
            json!({"seq": seq, "values": {"log": log, "title": ""}})
        );
    }
    // The same as the store's own answer.
    let stored = store.state_at::<Notes>("t", 3).await.unwrap();
    let at = get(addr, "/threads/t/state?seq=3").await;
    assert_eq!(at.json()["values"], stored.to_json().unwrap());

    // A step the thread never reached.
    let message = get(addr, "/threads/t/state?seq=6")
        .await
        .error(404, "no_such_step");
    assert_eq!(message, "thread \"t\" has no step 6: its last step is 5");
    get(addr, "/threads/t/state?seq=18446744073709551615")
        .await
        .error(404, "no_such_step");

    // A compacted step is gone; the snapshot and the steps after it are
    // there (and so is the initial state, step 0).
    let mut c = store.thread::<Notes>("c").await.unwrap();
    c.apply(Notes::delta().log(vec!["one".into()]))
        .await
        .unwrap();
    c.apply(Notes::delta().log(vec!["two".into()]))
        .await
        .unwrap();
    c.compact().await.unwrap();
    c.apply(Notes::delta().log(vec!["three".into()]))
        .await
        .unwrap();
    let message = get(addr, "/threads/c/state?seq=1")
        .await
        .error(404, "no_such_step");
    assert!(message.contains("compacted"), "{message}");
    let at = get(addr, "/threads/c/state?seq=2").await;
    assert_eq!(at.json()["values"]["log"], json!(["one", "two"]));
    let now = get(addr, "/threads/c/state").await;
    assert_eq!(
        now.json(),
        json!({"seq": 3, "values": {"log": ["one", "two", "three"], "title": ""}})
    );
    let initial = get(addr, "/threads/c/state?seq=0").await;
    assert_eq!(
        initial.json(),
        json!({"seq": 0, "values": {"log": [], "title": ""}})
    );
}

async fn unknown_threads_are_404_and_never_created(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    for path in [
        "/threads/ghost/state",
        "/threads/ghost/state?seq=0",
        "/threads/ghost/state?seq=3",
        "/threads/ghost/history",
        "/threads/ghost/history?after=5&limit=2",
    ] {
        let message = get(addr, path).await.error(404, "thread_not_found");
        assert_eq!(message, "thread \"ghost\" does not exist", "{path}");
    }
    assert!(
        store.thread_info("ghost").await.is_err(),
        "a GET created the thread"
    );
    assert_eq!(get(addr, "/threads").await.json(), json!([]));
}

async fn bad_queries_are_400_with_a_reason(ts: TestStore) {
    let store = &ts.store;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    thread_with_steps(store, "t", 2).await;
    let cases = [
        ("/threads/t/history?after=x", "after"),
        ("/threads/t/history?after=-1", "after"),
        ("/threads/t/history?after=", "after"),
        ("/threads/t/history?after=1&after=2", "duplicate"),
        ("/threads/t/history?afterr=1", "afterr"),
        (
            "/threads/t/history?limit=0",
            "limit must be between 1 and 1000, got 0",
        ),
        (
            "/threads/t/history?limit=1001",
            "limit must be between 1 and 1000, got 1001",
        ),
        ("/threads/t/history?limit=99999999999999999999", "limit"),
        ("/threads/t/history?limit=1.5", "limit"),
        ("/threads/t/state?seq=abc", "seq"),
        ("/threads/t/state?seq=1&limit=2", "limit"),
        ("/threads?limit=0", "limit must be between 1 and 1000"),
        (
            "/threads?limit=5000",
            "limit must be between 1 and 1000, got 5000",
        ),
        (
            "/threads?before=yesterday",
            "before must be <updated_at in milliseconds>:<thread id>",
        ),
        ("/threads?before=12", "before must be"),
        ("/threads?page=2", "page"),
    ];
    for (path, says) in cases {
        let message = get(addr, path).await.error(400, "bad_query");
        assert!(message.contains(says), "{path}: {message}");
    }
    // The largest page is allowed.
    assert_eq!(get(addr, "/threads/t/history?limit=1000").await.status, 200);
    assert_eq!(get(addr, "/threads?limit=1000").await.status, 200);
}

on_every_backend!(
    threads_newest_first_paged_to_the_end,
    history_paged_by_seq,
    state_now_and_after_any_step,
    unknown_threads_are_404_and_never_created,
    bad_queries_are_400_with_a_reason,
);
