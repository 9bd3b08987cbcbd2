//! Long-term memory items (`Store::put_item` and the rest), on every
//! backend: put, get, update, delete; namespace rules; prefix search,
//! every filter operator, pages; namespace listings; labels holding LIKE's
//! wildcards; search by meaning with a deterministic embedding; two
//! handles on one database; corrupt rows; the SQL schema's upgrade from
//! version 2; the same answers from all three backends.

use crate::on_every_backend;
use crate::support;
use crate::support::backends::TestStore;
use crate::support::states::Chat;
use serde_json::{Value, json};
use state_core::State;
use state_store::{IndexConfig, Item, SearchItem, Store, StoreError};
use std::collections::BTreeSet;

/// A deterministic embedding: each word (lowercase letters and digits)
/// adds 1 to one of 256 dimensions, picked by its FNV-1a hash. Texts that
/// share words point the same way.
fn bag_of_words(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0; 256];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut hash: u32 = 0x811c_9dc5;
        for byte in word.to_lowercase().bytes() {
            hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
        }
        vector[(hash % 256) as usize] += 1.0;
    }
    vector
}

/// The index the semantic scenarios use: the `text` field, bag of words.
/// A text holding "FAIL" makes the model fail.
fn index() -> IndexConfig {
    IndexConfig::new(256, |texts: Vec<String>| async move {
        if texts.iter().any(|t| t.contains("FAIL")) {
            return Err("the model is down".to_owned());
        }
        Ok(texts.iter().map(|t| bag_of_words(t)).collect())
    })
    .fields(["text"])
}

/// A listing's namespaces, labels joined by `/`.
async fn listed(listing: state_store::ListNamespaces<'_>) -> Vec<String> {
    listing
        .await
        .unwrap()
        .into_iter()
        .map(|ns| ns.join("/"))
        .collect()
}

fn keys(found: &[SearchItem]) -> Vec<String> {
    found.iter().map(|i| i.key.clone()).collect()
}

fn sorted_keys(found: &[SearchItem]) -> BTreeSet<String> {
    found.iter().map(|i| i.key.clone()).collect()
}

async fn get(store: &Store, namespace: &[&str], key: &str) -> Item {
    store
        .get_item(namespace, key)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("item {key:?} in {namespace:?}"))
}

async fn put_get_update_keeps_created_at(ts: TestStore) {
    let store = &ts.store;
    store
        .put_item(
            &["users", "u-7"],
            "prefs",
            json!({"theme": "dark", "n": 1.5}),
        )
        .await
        .unwrap();
    let first = get(store, &["users", "u-7"], "prefs").await;
    assert_eq!(first.namespace, ["users", "u-7"], "{}", ts.name);
    assert_eq!(first.key, "prefs");
    assert_eq!(first.value, json!({"theme": "dark", "n": 1.5}));
    assert_eq!(first.created_at, first.updated_at);
    assert!(
        store
            .get_item(&["users", "u-7"], "other")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.get_item(&["users"], "prefs").await.unwrap().is_none());

    std::thread::sleep(std::time::Duration::from_millis(2));
    store
        .put_item(&["users", "u-7"], "prefs", json!({"theme": "light"}))
        .await
        .unwrap();
    let second = get(store, &["users", "u-7"], "prefs").await;
    assert_eq!(
        second.value,
        json!({"theme": "light"}),
        "replaced, not merged"
    );
    assert_eq!(second.created_at, first.created_at, "{}", ts.name);
    assert!(second.updated_at > first.updated_at);

    // LangGraph's `Item.dict()` shape, its keys in its order.
    let text = serde_json::to_string(&second).unwrap();
    assert!(
        text.starts_with(
            r#"{"namespace":["users","u-7"],"key":"prefs","value":{"theme":"light"},"created_at":""#
        ),
        "{text}"
    );
    assert!(text.contains(r#"","updated_at":""#), "{text}");
    let shape: Value = serde_json::from_str(&text).unwrap();
    let created = shape["created_at"].as_str().unwrap();
    assert!(
        created.len() >= 25 && created.ends_with("+00:00") && created.as_bytes()[10] == b'T',
        "{created}"
    );
    let back: Item = serde_json::from_value(shape).unwrap();
    assert_eq!(back, second);
    // An item whose value is a string holding JSON stays a string.
    store
        .put_item(
            &["users", "u-7"],
            "raw",
            json!({"s": "{\"a\": 1}", "u": "é\u{1F600}\n"}),
        )
        .await
        .unwrap();
    let raw = get(store, &["users", "u-7"], "raw").await;
    assert_eq!(raw.value, json!({"s": "{\"a\": 1}", "u": "é\u{1F600}\n"}));
}

async fn delete_removes_the_item_and_only_it(ts: TestStore) {
    let store = &ts.store;
    for ns in [["a", "x"], ["a", "y"]] {
        store
            .put_item(&ns, "k", json!({"ns": ns[1]}))
            .await
            .unwrap();
    }
    assert!(
        store.delete_item(&["a", "x"], "k").await.unwrap(),
        "{}",
        ts.name
    );
    assert!(store.get_item(&["a", "x"], "k").await.unwrap().is_none());
    assert!(!store.delete_item(&["a", "x"], "k").await.unwrap());
    assert!(!store.delete_item(&["nowhere"], "k").await.unwrap());
    let left = store.search_items(&["a"]).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].namespace, ["a", "y"]);
    assert_eq!(
        store.list_namespaces(..).await.unwrap(),
        [["a", "y"]],
        "a namespace without items is not listed"
    );
    // Put again after a delete: a new item, created now.
    store
        .put_item(&["a", "x"], "k", json!({"again": true}))
        .await
        .unwrap();
    let again = get(store, &["a", "x"], "k").await;
    assert_eq!(again.created_at, again.updated_at);
}

async fn namespaces_and_values_are_checked(ts: TestStore) {
    let store = &ts.store;
    let put_err = move |ns: Vec<&'static str>, key: &'static str, value: Value| async move {
        store.put_item(ns.as_slice(), key, value).await.unwrap_err()
    };
    let err = put_err(vec!["users", "u.7"], "prefs", json!({})).await;
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "invalid namespace [\"users\", \"u.7\"]: label \"u.7\" contains a period ('.'); labels are joined with '.' when stored, so none may contain one"
    );
    let err = put_err(vec![], "prefs", json!({})).await.to_string();
    assert_eq!(
        err,
        "invalid namespace []: an item's namespace needs at least one label, as [\"users\", \"u-7\"]"
    );
    let err = put_err(vec!["users", ""], "prefs", json!({}))
        .await
        .to_string();
    assert_eq!(
        err,
        "invalid namespace [\"users\", \"\"]: a label cannot be empty"
    );
    let err = put_err(vec!["langgraph", "x"], "prefs", json!({}))
        .await
        .to_string();
    assert!(
        err.contains("the root label \"langgraph\" is reserved"),
        "{err}"
    );
    let err = put_err(vec!["a\0"], "k", json!({})).await.to_string();
    assert!(err.contains("NUL"), "{err}");

    let err = put_err(vec!["users", "u-7"], "prefs", json!(["dark"])).await;
    assert!(matches!(err, StoreError::InvalidItem { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "item \"prefs\" in namespace [\"users\", \"u-7\"]: the value must be a JSON object (LangGraph stores a dict), got an array"
    );
    let err = put_err(vec!["users"], "prefs", json!("dark"))
        .await
        .to_string();
    assert!(err.ends_with("got a string"), "{err}");
    let err = put_err(vec!["users"], "k\0", json!({})).await.to_string();
    assert!(
        err.contains("a key cannot contain a NUL character"),
        "{err}"
    );
    let err = put_err(vec!["users"], "k", json!({"a": ["x\0y"]}))
        .await
        .to_string();
    assert!(err.contains("NUL character (\\u0000)"), "{err}");

    // Reads check labels too, as LangGraph does; `langgraph` is only
    // reserved for writes, and an empty namespace holds nothing.
    let err = store
        .get_item(&["users", "u.7"], "prefs")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
    assert!(store.delete_item(&[""], "k").await.is_err());
    assert!(store.get_item(&["langgraph"], "k").await.unwrap().is_none());
    assert!(store.get_item(&[], "k").await.unwrap().is_none());
    assert!(store.search_items(&["a.b"]).await.is_err());
    assert!(
        store
            .list_namespaces(&["a"])
            .suffix(&["b.c"])
            .await
            .is_err()
    );
    assert!(store.list_namespaces(&[""]).await.is_err());

    // Nothing was written.
    assert!(
        store.search_items(..).await.unwrap().is_empty(),
        "{}",
        ts.name
    );
}

async fn prefix_search_matches_whole_labels(ts: TestStore) {
    let store = &ts.store;
    let items: [(&[&str], &str); 7] = [
        (&["users"], "root"),
        (&["users", "u-1"], "one"),
        (&["users", "u-2", "deep"], "deep"),
        (&["users_x"], "underscore"),
        (&["usersX", "u-1"], "longer"),
        (&["user"], "shorter"),
        (&["users-"], "dash"),
    ];
    for (ns, key) in items {
        store.put_item(ns, key, json!({"key": key})).await.unwrap();
    }
    let under = move |prefix: &'static [&'static str]| async move {
        keys(&store.search_items(prefix).limit(100).await.unwrap())
    };
    // Newest first.
    assert_eq!(
        under(&["users"]).await,
        ["deep", "one", "root"],
        "{}",
        ts.name
    );
    assert_eq!(under(&["users", "u-1"]).await, ["one"]);
    assert_eq!(under(&["users", "u-2"]).await, ["deep"]);
    assert_eq!(under(&["users", "u"]).await, Vec::<String>::new());
    assert_eq!(under(&["user"]).await, ["shorter"]);
    assert_eq!(
        keys(&store.search_items(..).limit(100).await.unwrap()),
        [
            "dash",
            "shorter",
            "longer",
            "underscore",
            "deep",
            "one",
            "root"
        ]
    );
    assert_eq!(store.search_items(&[]).await.unwrap().len(), 7);
    // A search with no item under it.
    assert!(store.search_items(&["nobody"]).await.unwrap().is_empty());
}

async fn every_filter_operator(ts: TestStore) {
    let store = &ts.store;
    let rows = [
        (
            "a",
            json!({"kind": "pref", "n": 1, "tag": "x", "on": true, "meta": {"lang": "en", "v": 2}}),
        ),
        (
            "b",
            json!({"kind": "pref", "n": 2.5, "tag": "y", "on": false, "meta": {"lang": "fr"}}),
        ),
        (
            "c",
            json!({"kind": "note", "n": 3, "tag": null, "list": [1, 2]}),
        ),
        ("d", json!({"kind": "note", "n": "3", "on": 1})),
        ("e", json!({"kind": "pref", "n": 10, "list": [1, 2, 3]})),
        ("f", json!({"kind": "Pref", "n": -4, "it's": "q\"uote"})),
    ];
    for (key, value) in rows {
        store.put_item(&["f", key], key, value).await.unwrap();
    }
    let matching = move |filter: Value| async move {
        let found = store
            .search_items(&["f"])
            .filter(filter.clone())
            .limit(100)
            .await;
        sorted_keys(&found.unwrap_or_else(|e| panic!("{filter}: {e}")))
    };
    let set = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<BTreeSet<_>>();

    assert_eq!(
        matching(json!({"kind": "pref"})).await,
        set(&["a", "b", "e"]),
        "{}",
        ts.name
    );
    assert_eq!(
        matching(json!({"kind": "pref", "tag": "x"})).await,
        set(&["a"])
    );
    assert_eq!(
        matching(json!({"n": 3})).await,
        set(&["c"]),
        "a string \"3\" is not 3"
    );
    assert_eq!(matching(json!({"n": 2.5})).await, set(&["b"]));
    assert_eq!(matching(json!({"n": 1.0})).await, set(&["a"]), "1 == 1.0");
    assert_eq!(
        matching(json!({"on": true})).await,
        set(&["a"]),
        "true is not 1"
    );
    assert_eq!(matching(json!({"on": false})).await, set(&["b"]));
    assert_eq!(
        matching(json!({"tag": null})).await,
        set(&["c", "d", "e", "f"]),
        "null or missing"
    );
    assert_eq!(matching(json!({"n": {"$eq": 10}})).await, set(&["e"]));
    assert_eq!(
        matching(json!({"kind": {"$ne": "pref"}})).await,
        set(&["c", "d", "f"])
    );
    assert_eq!(
        matching(json!({"tag": {"$ne": "x"}})).await,
        set(&["b", "c", "d", "e", "f"]),
        "missing is not \"x\""
    );
    assert_eq!(matching(json!({"n": {"$gt": 2.5}})).await, set(&["c", "e"]));
    assert_eq!(
        matching(json!({"n": {"$gte": 2.5}})).await,
        set(&["b", "c", "e"])
    );
    assert_eq!(matching(json!({"n": {"$lt": 2.5}})).await, set(&["a", "f"]));
    assert_eq!(matching(json!({"n": {"$lte": 1}})).await, set(&["a", "f"]));
    assert_eq!(
        matching(json!({"n": {"$gt": 0, "$lt": 5}})).await,
        set(&["a", "b", "c"])
    );
    assert_eq!(matching(json!({"n": {"$gt": 1e300}})).await, set(&[]));
    assert_eq!(
        matching(json!({"kind": {"$gt": "note"}})).await,
        set(&["a", "b", "e"]),
        "bytewise: \"Pref\" < \"note\""
    );
    assert_eq!(
        matching(json!({"kind": {"$lt": "note"}})).await,
        set(&["f"])
    );
    assert_eq!(
        matching(json!({"kind": {"$gte": "note", "$lte": "note"}})).await,
        set(&["c", "d"])
    );
    assert_eq!(
        matching(json!({"n": {"$gt": "2"}})).await,
        set(&["d"]),
        "strings order with strings only"
    );
    assert_eq!(
        matching(json!({"on": {"$gt": false}})).await,
        set(&[]),
        "booleans have no order"
    );
    assert_eq!(
        matching(json!({"meta": {"lang": "en"}})).await,
        set(&["a"]),
        "nested, partial"
    );
    assert_eq!(
        matching(json!({"meta": {"v": {"$gte": 2}}})).await,
        set(&["a"])
    );
    assert_eq!(
        matching(json!({"meta": {"$eq": {"lang": "fr"}}})).await,
        set(&["b"]),
        "$eq: whole"
    );
    assert_eq!(matching(json!({"list": [1, 2]})).await, set(&["c"]));
    assert_eq!(
        matching(json!({"it's": "q\"uote"})).await,
        set(&["f"]),
        "a field SQLite's paths cannot quote"
    );
    assert_eq!(matching(json!({})).await.len(), 6);

    let err = store
        .search_items(&["f"])
        .filter(json!({"n": {"$in": [1]}}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "search filter on field \"n\": unknown operator \"$in\"; the operators are $eq, $ne, $gt, $gte, $lt and $lte"
    );
    assert!(
        store
            .search_items(&["f"])
            .filter(json!("pref"))
            .await
            .is_err()
    );
}

async fn limit_and_offset_page_through_results(ts: TestStore) {
    let store = &ts.store;
    for i in 0..25 {
        let ns = ["pages", if i % 2 == 0 { "even" } else { "odd" }];
        store
            .put_item(
                &ns,
                &format!("k{i:02}"),
                json!({"i": i, "third": i % 3 == 0}),
            )
            .await
            .unwrap();
    }
    let all = keys(&store.search_items(&["pages"]).limit(100).await.unwrap());
    let newest_first: Vec<String> = (0..25).rev().map(|i| format!("k{i:02}")).collect();
    assert_eq!(all, newest_first, "{}", ts.name);
    assert_eq!(
        store.search_items(&["pages"]).await.unwrap().len(),
        10,
        "LangGraph's default"
    );
    let mut paged = Vec::new();
    for page in 0..3 {
        paged.extend(keys(
            &store
                .search_items(&["pages"])
                .limit(10)
                .offset(page * 10)
                .await
                .unwrap(),
        ));
    }
    assert_eq!(paged, newest_first);
    assert!(
        store
            .search_items(&["pages"])
            .offset(25)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_items(&["pages"])
            .limit(0)
            .await
            .unwrap()
            .is_empty()
    );
    // Filtered pages: the backends read past rows the filter refuses.
    let thirds: Vec<String> = (0..25)
        .rev()
        .filter(|i| i % 3 == 0)
        .map(|i| format!("k{i:02}"))
        .collect();
    let page = store
        .search_items(&["pages"])
        .filter(json!({"third": true}))
        .limit(3)
        .offset(2)
        .await
        .unwrap();
    assert_eq!(keys(&page), thirds[2..5]);
    let last = store
        .search_items(&["pages"])
        .filter(json!({"third": true, "i": {"$lt": 10}}))
        .limit(10)
        .offset(3)
        .await
        .unwrap();
    assert_eq!(keys(&last), ["k00"]);

    // Past the first read: matches among the oldest of 60 rows, by a
    // condition SQL checks and by one only Rust does.
    for i in 0..60 {
        let value = json!({"i": i, "nested": {"odd": i % 2 == 1}});
        store
            .put_item(&["stream"], &format!("s{i:02}"), value)
            .await
            .unwrap();
    }
    let oldest = store
        .search_items(&["stream"])
        .filter(json!({"i": {"$lt": 3}}))
        .await
        .unwrap();
    assert_eq!(keys(&oldest), ["s02", "s01", "s00"]);
    let odd = store
        .search_items(&["stream"])
        .filter(json!({"nested": {"odd": true}}))
        .limit(5)
        .offset(25)
        .await
        .unwrap();
    assert_eq!(keys(&odd), ["s09", "s07", "s05", "s03", "s01"]);
}

async fn list_namespaces_with_prefix_suffix_depth_and_pages(ts: TestStore) {
    let store = &ts.store;
    let namespaces: [&[&str]; 8] = [
        &["a", "b", "c"],
        &["a", "b", "d", "e"],
        &["a", "b", "d", "i"],
        &["a", "b", "f"],
        &["a", "c", "f"],
        &["a-b"],
        &["a", "b"],
        &["x", "y", "f"],
    ];
    for ns in namespaces {
        store.put_item(ns, "k", json!({})).await.unwrap();
        store.put_item(ns, "k2", json!({})).await.unwrap();
    }
    // LangGraph's own example.
    assert_eq!(
        listed(store.list_namespaces(&["a", "b"]).max_depth(3)).await,
        ["a/b", "a/b/c", "a/b/d", "a/b/f"],
        "{}",
        ts.name
    );
    // Label by label: ["a", ...] before ["a-b"].
    assert_eq!(
        listed(store.list_namespaces(..)).await,
        [
            "a/b", "a/b/c", "a/b/d/e", "a/b/d/i", "a/b/f", "a/c/f", "a-b", "x/y/f"
        ]
    );
    assert_eq!(
        listed(store.list_namespaces(&["a"]).suffix(&["f"])).await,
        ["a/b/f", "a/c/f"]
    );
    assert_eq!(
        listed(store.list_namespaces(..).suffix(&["f"])).await,
        ["a/b/f", "a/c/f", "x/y/f"]
    );
    assert_eq!(
        listed(store.list_namespaces(&["a", "*", "f"])).await,
        ["a/b/f", "a/c/f"]
    );
    assert_eq!(
        listed(store.list_namespaces(&["*", "b"])).await,
        ["a/b", "a/b/c", "a/b/d/e", "a/b/d/i", "a/b/f"]
    );
    assert_eq!(
        listed(store.list_namespaces(..).suffix(&["d", "*"])).await,
        ["a/b/d/e", "a/b/d/i"]
    );
    assert_eq!(
        listed(store.list_namespaces(..).max_depth(1)).await,
        ["a", "a-b", "x"]
    );
    assert_eq!(
        listed(store.list_namespaces(..).max_depth(2).limit(2).offset(1)).await,
        ["a/c", "a-b"]
    );
    assert_eq!(
        listed(store.list_namespaces(&["a", "b", "c", "d"])).await,
        Vec::<String>::new()
    );
    assert_eq!(
        listed(store.list_namespaces(&["a"]).limit(3)).await.len(),
        3
    );
    assert!(
        listed(store.list_namespaces(..).offset(100))
            .await
            .is_empty()
    );
}

async fn like_wildcards_in_labels_are_plain_characters(ts: TestStore) {
    let store = &ts.store;
    for label in ["a_c", "abc", "a%c", "aXYc", "a\\c", "a_cd"] {
        store
            .put_item(&[label, "in"], "k", json!({"label": label}))
            .await
            .unwrap();
    }
    for label in ["a_c", "a%c", "a\\c"] {
        let found = store.search_items(&[label]).await.unwrap();
        assert_eq!(found.len(), 1, "{} {label}", ts.name);
        assert_eq!(found[0].value["label"], label);
        assert_eq!(
            store.list_namespaces(&[label]).await.unwrap(),
            [[label, "in"]],
            "{label}"
        );
    }
    let ending = store
        .list_namespaces(..)
        .suffix(&["in"])
        .max_depth(1)
        .await
        .unwrap();
    assert_eq!(ending.len(), 6);
    assert!(store.search_items(&["a%"]).await.unwrap().is_empty());
    assert!(store.search_items(&["a_"]).await.unwrap().is_empty());
    assert!(store.get_item(&["a_c", "in"], "_").await.unwrap().is_none());
    assert!(store.get_item(&["a_c", "%"], "k").await.unwrap().is_none());
}

async fn semantic_search_ranks_by_meaning(ts: TestStore) {
    let store = ts.store.clone().with_index(index());
    let notes = [
        (
            "cats",
            json!({"text": "my cat sleeps on the warm sofa all day", "kind": "pet"}),
        ),
        (
            "dogs",
            json!({"text": "the dog runs in the park and fetches sticks", "kind": "pet"}),
        ),
        (
            "rust",
            json!({"text": "rust programs borrow check their references", "kind": "code"}),
        ),
        (
            "tea",
            json!({"text": "green tea tastes best warm", "kind": "food"}),
        ),
    ];
    for (key, value) in &notes {
        store
            .put_item(&["notes"], key, value.clone())
            .await
            .unwrap();
    }
    let found = store
        .search_items(&["notes"])
        .query("cat sleeps on the sofa")
        .await
        .unwrap();
    assert_eq!(found.len(), 4, "{}", ts.name);
    assert_eq!(found[0].key, "cats", "{found:?}");
    let scores: Vec<f64> = found.iter().map(|i| i.score.expect("a score")).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(scores[0] > scores[1]);
    assert_eq!(
        store
            .search_items(&["notes"])
            .query("borrow check references")
            .limit(1)
            .await
            .unwrap()[0]
            .key,
        "rust"
    );
    let dogs = store
        .search_items(&["notes"])
        .query("a dog in the park")
        .await
        .unwrap();
    assert_eq!(dogs[0].key, "dogs");

    // The filter applies first; offset and limit page the ranking.
    let pets = store
        .search_items(&["notes"])
        .query("warm tea")
        .filter(json!({"kind": "pet"}))
        .await
        .unwrap();
    assert_eq!(
        sorted_keys(&pets),
        BTreeSet::from(["cats", "dogs"].map(String::from))
    );
    assert_eq!(pets[0].key, "cats", "shares \"warm\"");
    let second = store
        .search_items(&["notes"])
        .query("cat sleeps on the sofa")
        .offset(1)
        .limit(2)
        .await
        .unwrap();
    assert_eq!(keys(&second), keys(&found)[1..3]);

    // An item put without an index follows the ranked ones, unscored; an
    // update re-embeds; another field list embeds other texts.
    store
        .put_item(&["notes"], "secret", json!({"text": "cat cat cat"}))
        .no_index()
        .await
        .unwrap();
    store
        .put_item(
            &["notes"],
            "tea",
            json!({"text": "my cat sleeps all day", "kind": "food"}),
        )
        .await
        .unwrap();
    store
        .put_item(
            &["notes"],
            "tagged",
            json!({"text": "nothing here", "tags": ["stock", "market", "cat sleeps"]}),
        )
        .index_fields(["tags[*]"])
        .await
        .unwrap();
    let found = store
        .search_items(&["notes"])
        .query("cat sleeps")
        .limit(10)
        .await
        .unwrap();
    assert_eq!(found.len(), 6);
    assert_eq!(found.last().unwrap().key, "secret");
    assert_eq!(found.last().unwrap().score, None);
    let top: BTreeSet<String> = keys(&found[..3]).into_iter().collect();
    assert_eq!(
        top,
        BTreeSet::from(["cats", "tea", "tagged"].map(String::from)),
        "{found:?}"
    );
    let tagged = found.iter().find(|i| i.key == "tagged").unwrap();
    assert!(
        (tagged.score.unwrap() - 1.0).abs() < 1e-6,
        "the best of its vectors: {tagged:?}"
    );

    // Without a query: newest first, no scores.
    let plain = store.search_items(&["notes"]).await.unwrap();
    assert_eq!(plain[0].key, "tagged");
    assert!(plain.iter().all(|i| i.score.is_none()));

    // A failing model: nothing written, the error says what and why.
    let err = store
        .put_item(&["notes"], "bad", json!({"text": "FAIL"}))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Embedding { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "embedding item \"bad\" in namespace [\"notes\"]: the embedding function failed"
    );
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "the model is down"
    );
    assert!(store.get_item(&["notes"], "bad").await.unwrap().is_none());

    // A store without an index refuses a query rather than ignore it.
    let err = ts
        .store
        .search_items(&["notes"])
        .query("cat")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has no index"), "{err}");
    // Deleting an item deletes its vectors.
    assert!(store.delete_item(&["notes"], "cats").await.unwrap());
    store
        .put_item(&["notes"], "cats", json!({"text": "stock market"}))
        .no_index()
        .await
        .unwrap();
    let found = store
        .search_items(&["notes"])
        .query("my cat sleeps on the warm sofa")
        .await
        .unwrap();
    assert_eq!(found.iter().find(|i| i.key == "cats").unwrap().score, None);
}

async fn two_workers_share_items(ts: TestStore) {
    let one = ts.store.clone().with_index(index());
    let two = ts.another_worker().await.with_index(index());
    one.put_item(
        &["users", "u-1"],
        "prefs",
        json!({"theme": "dark", "text": "dark mode"}),
    )
    .await
    .unwrap();
    let seen = get(&two, &["users", "u-1"], "prefs").await;
    assert_eq!(seen.value["theme"], "dark", "{}", ts.name);
    std::thread::sleep(std::time::Duration::from_millis(2));
    two.put_item(
        &["users", "u-1"],
        "prefs",
        json!({"theme": "light", "text": "light mode"}),
    )
    .await
    .unwrap();
    let updated = get(&one, &["users", "u-1"], "prefs").await;
    assert_eq!(updated.value["theme"], "light");
    assert_eq!(updated.created_at, seen.created_at);
    two.put_item(
        &["users", "u-2"],
        "prefs",
        json!({"theme": "dark", "text": "dark mode"}),
    )
    .await
    .unwrap();
    assert_eq!(
        one.list_namespaces(&["users"]).await.unwrap(),
        [["users", "u-1"], ["users", "u-2"]]
    );
    let found = one.search_items(&["users"]).query("light").await.unwrap();
    assert_eq!(found[0].namespace, ["users", "u-1"]);
    assert!(two.delete_item(&["users", "u-1"], "prefs").await.unwrap());
    assert!(
        one.get_item(&["users", "u-1"], "prefs")
            .await
            .unwrap()
            .is_none()
    );
}

on_every_backend!(
    put_get_update_keeps_created_at,
    delete_removes_the_item_and_only_it,
    namespaces_and_values_are_checked,
    prefix_search_matches_whole_labels,
    every_filter_operator,
    limit_and_offset_page_through_results,
    list_namespaces_with_prefix_suffix_depth_and_pages,
    like_wildcards_in_labels_are_plain_characters,
    semantic_search_ranks_by_meaning,
    two_workers_share_items,
);

/// What a search returned, without the times (which differ by backend).
fn comparable(found: Vec<SearchItem>) -> Vec<(Vec<String>, String, Value, Option<f64>)> {
    found
        .into_iter()
        .map(|i| (i.namespace, i.key, i.value, i.score))
        .collect()
}

/// One script of puts, searches and listings on each backend: the same
/// answers, order and scores included.
#[tokio::test]
async fn every_backend_gives_the_same_answers() {
    let mut answers = Vec::new();
    for ts in [
        TestStore::memory(),
        TestStore::sqlite().await,
        TestStore::postgres().await,
    ] {
        let store = ts.store.clone().with_index(index());
        let words = ["cat", "dog", "tea", "rust", "sofa", "park", "warm", "code"];
        for i in 0..60_usize {
            let ns = ["docs", ["en", "fr", "de"][i % 3], ["x", "y"][i % 2]];
            let text = format!(
                "{} {} {}",
                words[i % 8],
                words[(i * 3) % 8],
                words[(i * 5 + 1) % 8]
            );
            let tag = ["a", "b", "c", "d"][i % 4];
            let value =
                json!({"text": text, "i": i, "even": i % 2 == 0, "tag": tag, "f": i as f64 / 7.0});
            store.put_item(&ns, &format!("k{i}"), value).await.unwrap();
        }
        let filters = [
            json!(null),
            json!({"tag": "b"}),
            json!({"i": {"$gte": 13, "$lt": 47}, "even": false}),
            json!({"f": {"$gt": 2.0}, "tag": {"$ne": "a"}}),
            json!({"tag": {"$lte": "b"}}),
        ];
        let mut got = Vec::new();
        for filter in &filters {
            for (prefix, query) in [
                (vec!["docs"], None),
                (vec!["docs", "fr"], None),
                (vec!["docs"], Some("warm cat on the sofa")),
                (vec![], Some("rust code")),
            ] {
                let mut search = store
                    .search_items(prefix.as_slice())
                    .filter(filter.clone())
                    .limit(7)
                    .offset(2);
                if let Some(query) = query {
                    search = search.query(query);
                }
                got.push(format!("{:?}", comparable(search.await.unwrap())));
            }
        }
        got.push(format!("{:?}", store.list_namespaces(..).await.unwrap()));
        got.push(format!(
            "{:?}",
            store
                .list_namespaces(&["docs"])
                .suffix(&["y"])
                .max_depth(2)
                .await
                .unwrap()
        ));
        answers.push((ts.name, got));
    }
    let (first, expected) = &answers[0];
    for (name, got) in &answers[1..] {
        for (i, (a, b)) in expected.iter().zip(got).enumerate() {
            assert_eq!(a, b, "answer {i}: {first} and {name} differ");
        }
    }
    assert!(
        expected.iter().all(|a| a != "[]"),
        "every search found something: {expected:?}"
    );
}

/// A test store's database, for raw SQL.
struct Db {
    kind: &'static str,
    location: String,
}

impl Db {
    fn of(ts: &TestStore) -> Db {
        Db {
            kind: ts.name,
            location: ts.location.clone(),
        }
    }
}

/// Runs raw SQL on a database.
async fn raw_sql(db: &Db, statements: &[&str]) {
    match db.kind {
        "sqlite" => {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.location))
                .await
                .unwrap();
            for sql in statements {
                sqlx::query(sql).execute(&pool).await.unwrap();
            }
            pool.close().await;
        }
        "postgres" => {
            let pool = sqlx::PgPool::connect(&db.location).await.unwrap();
            for sql in statements {
                sqlx::query(sql).execute(&pool).await.unwrap();
            }
            pool.close().await;
        }
        other => panic!("no SQL for {other}"),
    }
}

async fn corrupt_rows_are_errors_that_name_them(ts: TestStore) {
    let db = Db::of(&ts);
    let store = ts.store.clone().with_index(index());
    store
        .put_item(&["users", "u-1"], "bad", json!({"text": "cat"}))
        .await
        .unwrap();
    store
        .put_item(&["users", "u-2"], "good", json!({"text": "dog"}))
        .await
        .unwrap();
    raw_sql(
        &db,
        &["UPDATE state_store_items SET value = '[1, 2]' WHERE key = 'bad'"],
    )
    .await;
    let err = store.get_item(&["users", "u-1"], "bad").await.unwrap_err();
    assert!(matches!(err, StoreError::CorruptItem { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "item \"bad\" in namespace [\"users\", \"u-1\"]: stored data is corrupt: the value is an array, not a JSON object"
    );
    let err = store.search_items(&["users"]).await.unwrap_err();
    assert!(
        err.to_string().starts_with("item \"bad\" in namespace"),
        "{err}"
    );
    let err = store
        .search_items(&["users"])
        .query("cat")
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("item \"bad\" in namespace"),
        "{err}"
    );
    // The rest still reads.
    assert_eq!(
        get(&store, &["users", "u-2"], "good").await.value["text"],
        "dog"
    );
    assert_eq!(
        store.search_items(&["users", "u-2"]).await.unwrap().len(),
        1
    );

    // Vectors that do not fit the index.
    store
        .put_item(&["users", "u-1"], "bad", json!({"text": "cat"}))
        .await
        .unwrap();
    let bytes = if ts.name == "sqlite" {
        "X'0102'"
    } else {
        "'\\x0102'::bytea"
    };
    raw_sql(
        &db,
        &[&format!(
            "UPDATE state_store_item_vectors SET vectors = {bytes} WHERE key = 'bad'"
        )],
    )
    .await;
    let err = store
        .search_items(&["users"])
        .query("cat")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "item \"bad\" in namespace [\"users\", \"u-1\"]: stored data is corrupt: its vectors are 2 bytes, not a whole number of 256-dimensional f32 vectors"
    );
    raw_sql(
        &db,
        &["UPDATE state_store_item_vectors SET dims = 3 WHERE key = 'bad'"],
    )
    .await;
    let err = store
        .search_items(&["users"])
        .query("cat")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("its vectors have 3 dimensions, the store's index 256"),
        "{err}"
    );
    assert_eq!(
        store.search_items(&["users"]).await.unwrap().len(),
        2,
        "without a query, vectors are not read"
    );
}

#[tokio::test]
async fn corrupt_rows_on_sqlite() {
    corrupt_rows_are_errors_that_name_them(TestStore::sqlite().await).await;
    // SQLite's TEXT holds anything: text that is not JSON, a namespace
    // with an empty label. A filtered search meets them too (one that
    // could match: the broken text holds `"kind":"pref"`, as this crate
    // writes it).
    let ts = TestStore::sqlite().await;
    let db = Db::of(&ts);
    ts.store
        .put_item(&["users"], "k", json!({"kind": "pref"}))
        .await
        .unwrap();
    raw_sql(
        &db,
        &[
            "UPDATE state_store_items SET value = '{\"kind\":\"pref\",' WHERE key = 'k'",
            "INSERT INTO state_store_items VALUES ('users..x', 'empty', '{}', 0, 0)",
        ],
    )
    .await;
    let err = ts
        .store
        .get_item(&["users"], "k")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "item \"k\" in namespace [\"users\"]: stored data is corrupt: the value is not JSON: "
        ),
        "{err}"
    );
    let err = ts
        .store
        .search_items(&["users"])
        .filter(json!({"kind": "pref"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("item \"k\" in namespace [\"users\"]"),
        "{err}"
    );
    raw_sql(&db, &["DELETE FROM state_store_items WHERE key = 'k'"]).await;
    let err = ts
        .store
        .search_items(&["users"])
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "item \"empty\" in namespace [\"users\", \"\", \"x\"]: stored data is corrupt: its namespace has an empty label"
    );
}

#[tokio::test]
async fn corrupt_rows_on_postgres() {
    corrupt_rows_are_errors_that_name_them(TestStore::postgres().await).await;
}

/// The store's tables as schema version 2 created them, with a thread of
/// two steps.
const VERSION_TWO: [&str; 7] = [
    "CREATE TABLE state_store_schema (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)",
    "CREATE TABLE state_store_threads (thread_id TEXT PRIMARY KEY, head BIGINT NOT NULL, \
     created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, parent_thread TEXT, parent_seq BIGINT)",
    "CREATE TABLE state_store_steps (thread_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, \
     body TEXT NOT NULL, metadata TEXT NOT NULL, state_version BIGINT NOT NULL, \
     recorded_at BIGINT NOT NULL, PRIMARY KEY (thread_id, seq))",
    "CREATE TABLE state_store_snapshots (thread_id TEXT NOT NULL, seq BIGINT NOT NULL, \
     state TEXT NOT NULL, state_version BIGINT NOT NULL, recorded_at BIGINT NOT NULL, \
     PRIMARY KEY (thread_id, seq))",
    "INSERT INTO state_store_schema (id, version) VALUES (1, 2)",
    "INSERT INTO state_store_threads VALUES ('t', 2, 1000, 2000, NULL, NULL)",
    "INSERT INTO state_store_steps VALUES ('t', 1, 'apply', '{\"transcript\": [\"one\"]}', '{}', 1, 1000), \
     ('t', 2, 'apply', '{\"transcript\": [\"two\"]}', '{}', 1, 2000)",
];

/// Opens a version-2 database with `open` and checks the upgrade: the
/// current version recorded once, the thread as it was, items usable; a newer
/// database refused.
async fn upgrade_from_version_two<F, Fut>(db: &Db, open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Store, StoreError>>,
{
    raw_sql(db, &VERSION_TWO).await;
    // Workers opening it at once: each succeeds.
    let (a, b) = tokio::join!(open(), open());
    let store = a.unwrap();
    b.unwrap();
    assert_eq!(schema_version(db).await, (10, 1), "{}", db.kind);
    // Version 4's run tables are there.
    store
        .create_run(state_store::NewRun::new("run-1", "agent"))
        .await
        .unwrap();
    let claim = store
        .claim_run("w", std::time::Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claim.run().run_id, "run-1");
    // Version 6's assistant tables too.
    store
        .create_assistant(
            state_store::NewAssistant::new("a1", "agent"),
            state_store::IfExists::Raise,
        )
        .await
        .unwrap();
    // And version 8's crons' table.
    store
        .create_cron(state_store::NewCron::new("c1", "a1", "@hourly").next_run_at(1))
        .await
        .unwrap();
    assert_eq!(store.due_crons(1, 10).await.unwrap().len(), 1);
    let mut t = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(t.seq(), 2);
    assert_eq!(t.state().transcript, ["one", "two"]);
    t.apply(Chat::delta().transcript(vec!["three".into()]))
        .await
        .unwrap();
    store
        .put_item(&["users"], "prefs", json!({"theme": "dark"}))
        .await
        .unwrap();
    let again = open().await.unwrap();
    assert_eq!(
        again
            .thread::<Chat>("t")
            .await
            .unwrap()
            .state()
            .transcript
            .len(),
        3
    );
    assert_eq!(
        get(&again, &["users"], "prefs").await.value["theme"],
        "dark"
    );
    assert_eq!(
        schema_version(db).await,
        (10, 1),
        "opening again changes nothing"
    );

    raw_sql(db, &["UPDATE state_store_schema SET version = 11"]).await;
    let err = open().await.unwrap_err();
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
}

async fn schema_version(db: &Db) -> (i64, i64) {
    const SQL: &str = "SELECT MAX(version), COUNT(*) FROM state_store_schema";
    if db.kind == "sqlite" {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.location))
            .await
            .unwrap();
        let version = sqlx::query_as(SQL).fetch_one(&pool).await.unwrap();
        pool.close().await;
        version
    } else {
        let pool = sqlx::PgPool::connect(&db.location).await.unwrap();
        let version = sqlx::query_as(SQL).fetch_one(&pool).await.unwrap();
        pool.close().await;
        version
    }
}

#[tokio::test]
async fn a_version_two_sqlite_database_is_upgraded_to_ten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    // An empty file for the raw connection.
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    sqlx::SqlitePool::connect_with(options)
        .await
        .unwrap()
        .close()
        .await;
    let db = Db {
        kind: "sqlite",
        location: path.display().to_string(),
    };
    upgrade_from_version_two(&db, || Store::sqlite(&path)).await;
}

#[tokio::test]
async fn a_version_two_postgres_database_is_upgraded_to_ten() {
    let fresh = support::postgres::shared().fresh_database("items_v2");
    let db = Db {
        kind: "postgres",
        location: fresh.url.clone(),
    };
    upgrade_from_version_two(&db, || Store::postgres(&fresh.url)).await;
}
