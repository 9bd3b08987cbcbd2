//! What a server people expose must hold, over real HTTP: thread ids are
//! data whatever they hold, the token guards every path (and only ours),
//! page sizes and bodies are bounded, and the router mounts in an app.

use crate::support;
use crate::support::{Notes, encode, get, get_with_token, request, serve, thread_with_steps};
use axum::Router;
use axum::routing::get as get_route;
use serde_json::{Value, json};
use state_server::Server;
use state_store::Store;

/// Ids that mean something to a file system, a URL, a shell or SQL: each
/// is a thread like any other.
const HOSTILE: &[&str] = &[
    "a/b",
    "..",
    "../../etc/passwd",
    "/",
    ".",
    "a\\b",
    "x\"y'z`",
    "'; DROP TABLE state_store_threads; --",
    "?limit=1&after=2",
    "#fragment",
    "%2F",
    "%00",
    " spaced out ",
    "tab\tand\nnewline",
    "ünïcødé 🦀 漢字",
    "<script>alert(1)</script>",
    "{thread_id}",
    "a:b:c",
];

#[tokio::test]
async fn hostile_ids_are_data() {
    let store = Store::memory();
    for id in HOSTILE {
        thread_with_steps(&store, id, 2).await;
    }
    let addr = serve(state_server::router::<Notes>(store.clone())).await;

    for id in HOSTILE {
        let path = format!("/threads/{}", encode(id));
        let history = get(addr, &format!("{path}/history")).await;
        assert_eq!(history.status, 200, "{id:?}: {:?}", history.json());
        let seqs: Vec<Value> = history
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["seq"].clone())
            .collect();
        assert_eq!(seqs, [json!(1), json!(2)], "{id:?}");
        let state = get(addr, &format!("{path}/state")).await;
        assert_eq!(
            state.json(),
            json!({"seq": 2, "values": {"log": ["1", "2"], "title": ""}}),
            "{id:?}"
        );
        let at = get(addr, &format!("{path}/state?seq=1")).await;
        assert_eq!(at.json()["values"]["log"], json!(["1"]), "{id:?}");
    }

    // Listed with their ids exactly; the cursor carries them through the
    // pages intact.
    let (listed, pages) = support::all_pages(addr, "/threads", "limit=1").await;
    assert_eq!(pages, HOSTILE.len());
    let mut ids: Vec<&str> = listed.iter().map(|t| t["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let mut expected = HOSTILE.to_vec();
    expected.sort_unstable();
    assert_eq!(ids, expected);

    // The same ids, unknown: 404 naming them, and nothing is created.
    let empty = Store::memory();
    let addr = serve(state_server::router::<Notes>(empty.clone())).await;
    for id in HOSTILE {
        let path = format!("/threads/{}", encode(id));
        for tail in ["/history", "/state", "/state?seq=0"] {
            let message = get(addr, &format!("{path}{tail}"))
                .await
                .error(404, "thread_not_found");
            assert!(message.starts_with("thread \""), "{id:?}: {message}");
        }
    }
    assert!(empty.threads().await.unwrap().is_empty());
}

#[tokio::test]
async fn unencoded_dot_segments_are_not_resolved() {
    // `..` written as is reaches the router as a segment: it is thread "..",
    // not a way up the path.
    let store = Store::memory();
    thread_with_steps(&store, "..", 1).await;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    let raw = get(addr, "/threads/../history").await;
    let encoded = get(addr, "/threads/%2E%2E/history").await;
    assert_eq!(raw.status, 200);
    assert_eq!(raw.json(), encoded.json());
    // `/threads/..` is not `/`: an unknown route, not an escape.
    assert_eq!(get(addr, "/threads/../../threads").await.status, 404);
}

#[tokio::test]
async fn ids_the_store_cannot_hold_are_400() {
    let store = Store::memory();
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    let long_ascii = "x".repeat(10 * 1024);
    let long_unicode = "é".repeat(5 * 1024);
    let cases: [(&str, String, &str); 3] = [
        ("NUL", "a\0b".to_owned(), "NUL"),
        ("10 KB", long_ascii, "at most 512 bytes"),
        ("10 KB of é", long_unicode, "at most 512 bytes"),
    ];
    for (name, id, says) in cases {
        for tail in ["/history", "/state", "/state?seq=1"] {
            let response = get(addr, &format!("/threads/{}{tail}", encode(&id))).await;
            let message = response.error(400, "invalid_thread_id");
            assert!(message.contains(says), "{name}: {message}");
            // The message shows the id shortened.
            assert!(message.len() < 200, "{name}: {message}");
        }
    }
    // Not UTF-8 once decoded: the path cannot name a thread.
    for bad in ["%FF", "a%C3", "%ED%A0%80"] {
        let message = get(addr, &format!("/threads/{bad}/history"))
            .await
            .error(400, "bad_path");
        assert!(!message.is_empty());
    }
    // An empty id never reaches a handler.
    for path in ["/threads//history", "/threads//state"] {
        let response = get(addr, path).await;
        assert!(
            matches!(response.status, 400 | 404),
            "{path}: {}",
            response.status
        );
    }
    assert!(store.threads().await.unwrap().is_empty());
}

/// Every path of the router, and what it answers with the right token.
const GUARDED: &[(&str, &str, u16)] = &[
    ("GET", "/threads", 200),
    ("GET", "/threads?limit=1", 200),
    ("GET", "/threads/t/history", 200),
    ("GET", "/threads/t/history?after=1&limit=1", 200),
    ("GET", "/threads/t/state", 200),
    ("GET", "/threads/t/state?seq=1", 200),
    ("GET", "/threads/ghost/state", 404),
    ("GET", "/threads/ghost/history", 404),
    ("GET", "/threads/t/history?limit=0", 400),
    ("HEAD", "/threads", 200),
    ("PUT", "/threads", 405),
    ("DELETE", "/threads/t/state", 405),
    // The Agent Server API's paths, behind the same token.
    ("POST", "/threads/search", 200),
    ("GET", "/assistants/search", 405),
];

#[tokio::test]
async fn the_token_guards_every_path() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 2).await;
    let typed = Server::new(store.clone())
        .token("s3cret-T0ken")
        .router::<Notes>();
    let untyped = Server::new(store.clone())
        .token("s3cret-T0ken")
        .untyped_router();
    for (router, is_typed) in [(typed, true), (untyped, false)] {
        let addr = serve(router).await;
        for &(method, path, status) in GUARDED {
            // Without a state type, every state is a 501.
            let expected = if !is_typed && path.contains("/state") && method == "GET" {
                501
            } else {
                status
            };
            let send = |headers: &'static [(&'static str, &'static str)]| {
                request(addr, method, path, headers, b"")
            };
            for headers in [
                &[][..],
                &[("Authorization", "Bearer wrong")][..],
                &[("Authorization", "Bearer s3cret-t0ken")][..],
                &[("Authorization", "Bearer s3cret-T0ken2")][..],
                &[("Authorization", "Basic s3cret-T0ken")][..],
                &[("Authorization", "s3cret-T0ken")][..],
                &[("X-Token", "s3cret-T0ken")][..],
            ] {
                let response = send(headers).await;
                assert_eq!(response.status, 401, "{method} {path} {headers:?}");
                assert!(
                    response
                        .header("www-authenticate")
                        .unwrap()
                        .starts_with("Bearer"),
                    "{method} {path}"
                );
                if method != "HEAD" {
                    response.error(401, "unauthorized");
                }
                // Refused before its body was read: the connection ends.
                assert_eq!(
                    response.header("connection"),
                    Some("close"),
                    "{method} {path}"
                );
            }
            let ok = send(&[("Authorization", "Bearer s3cret-T0ken")]).await;
            assert_eq!(ok.status, expected, "{method} {path}");
            if expected == 405 {
                let message = ok.error(405, "method_not_allowed");
                assert!(message.starts_with(method), "{message}");
                let allow = ok.header("allow").expect("Allow");
                assert!(!allow.is_empty() && !allow.contains(method), "{allow}");
            }
            let lower = send(&[("authorization", "bearer s3cret-T0ken")]).await;
            assert_eq!(lower.status, expected, "{method} {path}");
        }
        let response = get(addr, "/threads").await;
        assert_eq!(
            response.error(401, "unauthorized"),
            "this server requires a bearer token: send `Authorization: Bearer <token>`"
        );
    }
}

#[tokio::test]
async fn the_token_is_never_shown() {
    let server = Server::new(Store::memory()).token("s3cret-T0ken");
    let debug = format!("{server:?}");
    assert!(!debug.contains("s3cret"), "{debug}");
    assert!(debug.contains("<redacted>"), "{debug}");
    let addr = serve(server.router::<Notes>()).await;
    let response = get_with_token(addr, "/threads", "wrong").await;
    let text =
        String::from_utf8_lossy(&response.body).into_owned() + &format!("{:?}", response.headers);
    assert!(!text.contains("s3cret"), "{text}");
}

#[tokio::test]
async fn a_mounted_router_guards_only_its_own_paths() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 2).await;
    let server = Server::new(store.clone()).token("tok");
    let app = Router::new()
        .route("/health", get_route(|| async { "ok" }))
        .nest("/agent", server.router::<Notes>())
        .nest("/users/{id}/agent", server.router::<Notes>())
        .merge(server.untyped_router())
        .fallback(|| async { (axum::http::StatusCode::NOT_FOUND, "app's own 404") });
    let addr = serve(app).await;

    // The app's routes and 404s are its own: no token asked.
    let health = get(addr, "/health").await;
    assert_eq!((health.status, health.body.as_slice()), (200, &b"ok"[..]));
    let missing = get(addr, "/elsewhere").await;
    assert_eq!(
        (missing.status, missing.body.as_slice()),
        (404, &b"app's own 404"[..])
    );
    // Ours ask for it, wherever they are mounted.
    for path in [
        "/agent/threads",
        "/agent/threads/t/state",
        "/users/42/agent/threads/t/history",
        "/threads",
        "/threads/t/history",
    ] {
        assert_eq!(get(addr, path).await.status, 401, "{path}");
        assert_eq!(
            get_with_token(addr, path, "tok").await.status,
            200,
            "{path}"
        );
    }
    // Under a prefix that captures `{id}` too, the thread id is ours.
    let state = get_with_token(addr, "/users/42/agent/threads/t/state", "tok").await;
    assert_eq!(state.json()["values"]["log"], json!(["1", "2"]));
    let state = get_with_token(addr, "/agent/threads/t/state?seq=0", "tok").await;
    assert_eq!(state.json()["seq"], 0);
    // The merged untyped routes answer 501 for the state.
    get_with_token(addr, "/threads/t/state", "tok")
        .await
        .error(501, "no_state_type");
    // A link is relative (a query only): it holds wherever the router is
    // mounted.
    let page = get_with_token(addr, "/agent/threads/t/history?limit=1", "tok").await;
    let next = page.next_query().unwrap();
    assert_eq!(next, "after=1&limit=1");
    let page = get_with_token(addr, &format!("/agent/threads/t/history?{next}"), "tok").await;
    assert_eq!(page.json()[0]["seq"], 2);
    assert_eq!(page.header("link"), None);
}

#[tokio::test]
async fn page_sizes_are_bounded() {
    let store = Store::memory();
    for k in 0..150 {
        store.thread::<Notes>(&format!("t{k:03}")).await.unwrap();
    }
    thread_with_steps(&store, "long", 150).await;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    // Default: 100 per page.
    let page = get(addr, "/threads").await;
    assert_eq!(page.json().as_array().unwrap().len(), 100);
    assert!(page.next_query().unwrap().ends_with("&limit=100"));
    let page = get(addr, "/threads/long/history").await;
    assert_eq!(page.json().as_array().unwrap().len(), 100);
    assert_eq!(page.next_query().as_deref(), Some("after=100&limit=100"));
    // At most 1000; more is a 400, never silently less.
    let page = get(addr, "/threads?limit=1000").await;
    assert_eq!(page.json().as_array().unwrap().len(), 151);
    get(addr, "/threads?limit=1001")
        .await
        .error(400, "bad_query");
    get(addr, "/threads/long/history?limit=1001")
        .await
        .error(400, "bad_query");

    // A smaller bound, set by the app.
    let addr = serve(
        Server::new(store.clone())
            .max_page_size(20)
            .router::<Notes>(),
    )
    .await;
    let page = get(addr, "/threads/long/history").await;
    assert_eq!(page.json().as_array().unwrap().len(), 20);
    assert_eq!(page.next_query().as_deref(), Some("after=20&limit=20"));
    let message = get(addr, "/threads?limit=21").await.error(400, "bad_query");
    assert_eq!(message, "limit must be between 1 and 20, got 21");
    let (all, pages) = support::all_pages(addr, "/threads/long/history", "limit=20").await;
    assert_eq!((all.len(), pages), (150, 8));
}

#[tokio::test]
async fn request_bodies_are_bounded() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 1).await;
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    // A small body on a GET is ignored; one over the limit is refused
    // before it is read.
    let small = request(addr, "GET", "/threads", &[], &[b'x'; 100]).await;
    assert_eq!(small.status, 200);
    let big = vec![b'x'; state_server::DEFAULT_BODY_LIMIT + 1];
    let message = request(addr, "GET", "/threads", &[], &big)
        .await
        .error(413, "body_too_large");
    assert_eq!(
        message,
        "the request body is 1048577 bytes; this server reads at most 1048576"
    );
    // A declared length alone is enough to refuse.
    let response = request(
        addr,
        "GET",
        "/threads/t/state",
        &[("Content-Length", "99999999999")],
        b"",
    )
    .await;
    assert_eq!(response.header("connection"), Some("close"));
    response.error(413, "body_too_large");

    let addr = serve(Server::new(store).body_limit(0).router::<Notes>()).await;
    let one = request(addr, "GET", "/threads", &[], b"x").await;
    one.error(413, "body_too_large");
    assert_eq!(get(addr, "/threads").await.status, 200);
}

#[tokio::test]
async fn answers_are_neither_sniffed_nor_cached() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 1).await;
    let addr = serve(Server::new(store).token("tok").router::<Notes>()).await;
    for response in [
        get_with_token(addr, "/threads", "tok").await,
        get_with_token(addr, "/threads/t/state", "tok").await,
        get_with_token(addr, "/threads/ghost/state", "tok").await,
        get(addr, "/threads").await,
    ] {
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(response.header("cache-control"), Some("no-store"));
        assert_eq!(response.header("content-type"), Some("application/json"));
    }
}

#[tokio::test]
#[should_panic(expected = "a bearer token must be non-empty visible ASCII")]
async fn an_empty_token_is_a_programming_error() {
    let _ = Server::new(Store::memory()).token("");
}
