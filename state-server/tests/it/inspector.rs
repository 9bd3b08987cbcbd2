//! The inspector's pages over real HTTP on loopback, without a browser:
//! the HTML as the server renders it (snapshots of the thread list and of
//! a thread with a step of every kind), the thread list's order, filter
//! and pages, the window of steps, the state and difference at any step,
//! errors as pages, the token kept as a cookie, forking behind
//! `allow_writes`, a router nested under a prefix, and the untyped router.
//! (`inspector_browser.rs` drives the same pages in headless Chromium.)

use crate::support;
use crate::support::desk::{Desk, DeskDelta, QUESTION, desk_thread};
use crate::support::{Response, get, post_form, request, serve, thread_with_steps};
use state_core::{Message, State};
use state_server::Server;
use state_store::Store;
use std::net::SocketAddr;

fn text(response: &Response) -> String {
    String::from_utf8(response.body.clone()).expect("UTF-8 HTML")
}

/// `GET target`: a 200 HTML page, as text.
async fn page(addr: SocketAddr, target: &str) -> String {
    let response = get(addr, target).await;
    let body = text(&response);
    assert_eq!(response.status, 200, "{target}: {body}");
    assert_eq!(
        response.header("content-type"),
        Some("text/html; charset=utf-8"),
        "{target}"
    );
    body
}

/// The values of attribute `name` in `html`, in order.
fn attributes(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    html.match_indices(&needle)
        .map(|(at, _)| {
            let rest = &html[at + needle.len()..];
            rest[..rest.find('"').expect("a closing quote")].to_owned()
        })
        .collect()
}

/// `html` with one element per line, times and the given ids replaced by
/// placeholders: what the snapshots pin.
fn normalized(html: &str, ids: &[(&str, &str)]) -> String {
    let mut out = html.replace("><", ">\n<");
    for (id, placeholder) in ids {
        out = out.replace(id, placeholder);
    }
    // 2026-11-26T02:52:34.471Z and 2026-11-26 02:52:34.471
    let bytes = out.as_bytes();
    let mut result = String::with_capacity(out.len());
    let mut i = 0;
    while i < bytes.len() {
        let candidate = bytes.get(i..i + 23);
        let is_time = candidate.is_some_and(|c| {
            c.iter().enumerate().all(|(k, b)| match k {
                4 | 7 => *b == b'-',
                10 => *b == b'T' || *b == b' ',
                13 | 16 => *b == b':',
                19 => *b == b'.',
                _ => b.is_ascii_digit(),
            })
        });
        if is_time {
            result.push_str("<TIME>");
            i += 23;
        } else {
            let ch = out[i..].chars().next().expect("a character");
            result.push(ch);
            i += ch.len_utf8();
        }
    }
    result
}

/// The id of the interrupt pending at the end of `thread`.
async fn interrupt_id(store: &Store, thread: &str) -> String {
    let head = store.thread_info(thread).await.unwrap().seq;
    let step = store.history(thread, head..=head).await.unwrap().remove(0);
    step.body["interrupts"][0]["id"]
        .as_str()
        .expect("an interrupt id")
        .to_owned()
}

#[tokio::test]
async fn the_thread_list_is_newest_first_with_its_columns() {
    let store = Store::memory();
    thread_with_steps(&store, "older", 2).await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    thread_with_steps(&store, "newer", 3).await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store
        .fork::<support::Notes>("newer", 2, "forked")
        .await
        .unwrap();
    let addr = serve(Server::new(store.clone()).router::<support::Notes>()).await;
    let html = page(addr, "/").await;
    assert_eq!(
        attributes(&html, "data-thread"),
        ["forked", "newer", "older"]
    );
    assert!(
        html.contains(r#"<a href="/inspect/newer">newer</a>"#),
        "{html}"
    );
    assert!(html.contains(r#"<td class="num">3</td>"#), "{html}");
    assert!(
        html.contains(r#"<a href="/inspect/newer?seq=2">newer</a> at step 2"#),
        "{html}"
    );
    insta::assert_snapshot!("thread_list", normalized(&html, &[]));
}

#[tokio::test]
async fn the_thread_list_filters_and_pages() {
    let store = Store::memory();
    for k in 0..25 {
        thread_with_steps(&store, &format!("user-{k:02}"), 1).await;
    }
    thread_with_steps(&store, "Other", 1).await;
    let addr = serve(Server::new(store.clone()).untyped_router()).await;

    // Pages of 10, following the "next" link, list every thread once.
    let mut target = "/?limit=10".to_owned();
    let mut seen = Vec::new();
    loop {
        let html = page(addr, &target).await;
        let rows = attributes(&html, "data-thread");
        assert!(rows.len() <= 10, "{target}");
        seen.extend(rows);
        let next = html
            .split("rel=\"next\" href=\"")
            .nth(1)
            .map(|rest| rest[..rest.find('"').unwrap()].replace("&amp;", "&"));
        match next {
            Some(next) => target = next,
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!((seen.len(), sorted.len()), (26, 26), "{seen:?}");

    // The filter: a part of the id, in any case; kept across pages.
    let html = page(addr, "/?q=USER-1&limit=5").await;
    let rows = attributes(&html, "data-thread");
    assert_eq!(rows.len(), 5, "{html}");
    assert!(rows.iter().all(|id| id.starts_with("user-1")), "{rows:?}");
    assert!(
        html.contains("q=USER-1"),
        "the next page keeps the filter: {html}"
    );
    assert!(html.contains(r#"value="USER-1""#), "{html}");
    let html = page(addr, "/?q=nobody").await;
    assert!(html.contains("No thread matches."), "{html}");

    // Bad queries are error pages that say why.
    let response = get(addr, "/?limit=0").await;
    assert_eq!(response.status, 400);
    assert!(text(&response).contains("limit must be between 1 and"));
    let response = get(addr, "/?before=yesterday").await;
    assert_eq!(response.status, 400);
    assert!(text(&response).contains("before must be"));
    let response = get(addr, "/?colour=red").await;
    assert_eq!(response.status, 400);
    assert!(text(&response).contains("colour"), "{}", text(&response));
}

#[tokio::test]
async fn a_thread_shows_every_step_with_what_it_wrote() {
    let ts = support::backends::TestStore::sqlite().await;
    let store = ts.store.clone();
    desk_thread(&store, "trip").await;
    let addr = serve(Server::new(store.clone()).router::<Desk>()).await;
    let html = page(addr, "/inspect/trip").await;

    assert_eq!(
        attributes(&html, "data-seq")
            .iter()
            .filter(|s| s.parse::<u64>().is_ok())
            .count(),
        // Eight steps, the state panel, and the head count.
        10,
        "{html}"
    );
    assert_eq!(
        attributes(&html, "data-kind"),
        [
            "begin_turn",
            "apply",
            "superstep",
            "superstep",
            "set",
            "begin_turn",
            "superstep",
            "pending"
        ]
    );
    for kind in ["turn reset", "apply", "superstep", "set", "interrupt"] {
        assert!(html.contains(&format!(">{kind}</span>")), "{kind}: {html}");
    }
    // Nodes, and what each wrote, the way its reducer takes it.
    for node in ["agent", "scorer", "tools", "logger", "input", "plan"] {
        assert!(
            html.contains(&format!(r#"data-node="{node}""#)),
            "{node}: {html}"
        );
    }
    assert!(html.contains("Turn-scoped fields back to their defaults: <code>next</code>."));
    assert!(html.contains(r#"<div class="bubble user">"#), "{html}");
    assert!(
        html.contains("Find &lt;b&gt;flights&lt;/b&gt; to Oslo"),
        "escaped: {html}"
    );
    assert!(!html.contains("<b>flights"), "{html}");
    assert!(html.contains(r#"<div class="bubble assistant">"#));
    assert!(html.contains("search_flights"));
    assert!(html.contains(r#"<div class="bubble tool">"#));
    assert!(html.contains("answers <code>c1</code>"));
    assert!(html.contains("added 1 message"));
    assert!(html.contains("appended 1 item"));
    assert!(html.contains("merged 1 key"));
    assert!(html.contains("set (no reducer)"));
    // The question waiting for an answer, at the top and in its step.
    assert_eq!(html.matches(QUESTION).count(), 2, "{html}");
    assert!(html.contains("Waiting for an answer"));
    // The state after the last step, field by field, and what it changed.
    assert!(html.contains("State after step 8"));
    assert!(html.contains("Changes from step 7 to step 8"));
    assert!(
        html.contains("No field differs."),
        "a pause changes nothing"
    );

    let id = interrupt_id(&store, "trip").await;
    insta::assert_snapshot!("thread_page", normalized(&html, &[(&id, "<INTERRUPT-ID>")]));
}

#[tokio::test]
async fn any_step_shows_its_state_and_the_difference_from_another() {
    let store = Store::memory();
    desk_thread(&store, "trip").await;
    let addr = serve(Server::new(store.clone()).router::<Desk>()).await;

    let html = page(addr, "/inspect/trip?seq=3").await;
    assert!(
        html.contains(r#"<section id="state" data-seq="3""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<li class="step selected" id="step-3""#),
        "{html}"
    );
    assert!(html.contains("Changes from step 2 to step 3"));
    // Step 3 added the assistant's message and a score, logged "scored".
    let diff = &html[html.find(r#"<section id="diff""#).unwrap()..];
    assert!(diff.contains(r#"data-field="messages""#), "{diff}");
    assert!(diff.contains(r#"data-field="scores""#), "{diff}");
    assert!(diff.contains(r#"data-field="log""#), "{diff}");
    assert!(!diff.contains(r#"data-field="title""#), "{diff}");

    // Against any other step: 0 is the empty state before the first.
    let html = page(addr, "/inspect/trip?seq=5&compare=0").await;
    let diff = &html[html.find(r#"<section id="diff""#).unwrap()..];
    assert!(diff.contains("Changes from step 0 to step 5"));
    assert!(diff.contains("Trip to Oslo"), "{diff}");
    assert!(diff.contains("+3 at the end"), "three messages: {diff}");

    // The script's request: the state side alone.
    let panel = page(addr, "/inspect/trip?seq=2&part=panel").await;
    assert!(
        panel.starts_with(r#"<section id="state" data-seq="2""#),
        "{panel}"
    );
    assert!(!panel.contains("<html"), "{panel}");

    // The same state as the JSON route gives.
    let state = get(addr, "/threads/trip/state?seq=5").await.json();
    assert_eq!(state["values"]["title"], "Trip to Oslo");
}

#[tokio::test]
async fn errors_are_pages_that_say_what_is_wrong() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 3).await;
    let addr = serve(Server::new(store.clone()).router::<support::Notes>()).await;
    for (target, status, words) in [
        ("/inspect/nobody", 404, "thread \"nobody\" does not exist"),
        ("/inspect/t?seq=4", 404, "has 3 steps: there is no step 4"),
        ("/inspect/t?compare=9", 404, "there is no step 9"),
        ("/inspect/t?seq=x", 400, "seq"),
        ("/inspect/t?part=all", 400, "part must be panel"),
        ("/inspect/%FF", 400, "UTF-8"),
    ] {
        let response = get(addr, target).await;
        let html = text(&response);
        assert_eq!(response.status, status, "{target}: {html}");
        assert!(html.contains("<!DOCTYPE html>"), "{target}: {html}");
        assert!(
            html.contains(&words.replace('"', "&quot;")),
            "{target}: {html}"
        );
    }
    // Edges that are no errors: the empty state, a window before the
    // first step, a live point past the end, a thread with no steps yet.
    for target in [
        "/inspect/t?seq=0",
        "/inspect/t?upto=0",
        "/inspect/t?seq=1&upto=18446744073709551615",
        "/inspect/t/live?after=18446744073709551615",
    ] {
        let response = get(addr, target).await;
        assert_eq!(response.status, 200, "{target}: {}", text(&response));
    }
    let html = page(addr, "/inspect/t?seq=0").await;
    assert!(html.contains("State after step 0"), "{html}");
    store.thread::<support::Notes>("empty").await.unwrap();
    let html = page(addr, "/inspect/empty").await;
    assert!(html.contains("0 steps"), "{html}");
    assert_eq!(attributes(&html, "data-kind").len(), 0);
    // Nothing was created by looking.
    assert_eq!(store.threads().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_long_thread_shows_a_window_of_steps() {
    let store = Store::memory();
    thread_with_steps(&store, "long", 120).await;
    let addr = serve(Server::new(store.clone()).router::<support::Notes>()).await;

    let seqs = |html: &str| -> Vec<u64> {
        html.match_indices(r#"<li class="step"#)
            .map(|(at, _)| {
                let rest = &html[at..];
                let seq = &rest[rest.find("data-seq=\"").unwrap() + 10..];
                seq[..seq.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    };
    let html = page(addr, "/inspect/long").await;
    assert_eq!(seqs(&html), (71..=120).collect::<Vec<_>>());
    assert!(
        html.contains(r#"rel="prev" href="/inspect/long?seq=120&amp;upto=70""#),
        "{html}"
    );
    assert!(!html.contains(r#"rel="next""#));
    assert!(html.contains(r#"data-following="true""#));

    // An early step: a window around it, links both ways, not following.
    let html = page(addr, "/inspect/long?seq=10").await;
    assert_eq!(seqs(&html), (1..=50).collect::<Vec<_>>());
    assert!(html.contains(r#"<li class="step selected" id="step-10""#));
    assert!(
        html.contains(r#"rel="next" href="/inspect/long?seq=10&amp;upto=100""#),
        "{html}"
    );
    assert!(html.contains(r#"data-following="false""#));
    let html = page(addr, "/inspect/long?seq=10&upto=100").await;
    assert_eq!(seqs(&html), (51..=100).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_live_fragment_has_the_steps_after_a_point() {
    let store = Store::memory();
    desk_thread(&store, "trip").await;
    let addr = serve(Server::new(store.clone()).router::<Desk>()).await;
    let html = page(addr, "/inspect/trip/live?after=6").await;
    assert!(
        html.starts_with(r#"<ol id="new-steps" data-head="8" data-after="8">"#),
        "{html}"
    );
    assert_eq!(attributes(&html, "data-kind"), ["superstep", "pending"]);
    assert!(html.contains(QUESTION));
    let html = page(addr, "/inspect/trip/live?after=8").await;
    assert!(
        html.starts_with(r#"<ol id="new-steps" data-head="8" data-after="0"></ol>"#),
        "{html}"
    );
    assert_eq!(get(addr, "/inspect/trip/live").await.status, 400);
}

#[tokio::test]
async fn a_messages_state_of_any_length_makes_a_bounded_page() {
    let store = Store::memory();
    let mut thread = store.thread::<Desk>("big").await.unwrap();
    for k in 0..2000 {
        thread
            .apply(Desk::delta().messages(vec![Message::human(format!("message {k}"))]))
            .await
            .unwrap();
    }
    drop(thread);
    let addr = serve(Server::new(store.clone()).router::<Desk>()).await;
    let html = page(addr, "/inspect/big").await;
    // 50 steps, the last 50 messages of the state, one added in the diff.
    assert_eq!(
        html.matches(r#"<div class="bubble user">"#).count(),
        50 + 50 + 1
    );
    assert!(html.contains("1950 earlier messages not shown"), "{html}");
    assert!(html.contains("message 1999"));
    assert!(!html.contains("message 1949<"), "{html}");
    assert!(html.len() < 200_000, "{} bytes", html.len());
}

#[tokio::test]
async fn pages_carry_a_strict_content_security_policy_and_their_assets() {
    let store = Store::memory();
    let addr = serve(Server::new(store).untyped_router()).await;
    let response = get(addr, "/").await;
    let csp = response.header("content-security-policy").expect("a CSP");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(response.header("referrer-policy"), Some("same-origin"));
    let html = text(&response);
    assert!(!html.contains("<script>"), "no inline script: {html}");
    assert!(!html.contains(" style="), "no inline style: {html}");

    let script = get(addr, "/inspector.js").await;
    assert_eq!(script.status, 200);
    assert_eq!(
        script.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(text(&script).contains("EventSource"));
    let style = get(addr, "/inspector.css").await;
    assert_eq!(
        style.header("content-type"),
        Some("text/css; charset=utf-8")
    );
    assert!(text(&style).contains("prefers-color-scheme"));
}

#[tokio::test]
async fn a_token_opens_the_pages_once_then_rides_in_a_cookie() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 2).await;
    let addr = serve(
        Server::new(store.clone())
            .token("s3cret")
            .router::<support::Notes>(),
    )
    .await;
    assert_eq!(get(addr, "/").await.status, 401);
    assert_eq!(get(addr, "/?access_token=wrong").await.status, 401);
    let opened = get(addr, "/?access_token=s3cret").await;
    assert_eq!(opened.status, 200);
    let cookie = opened
        .header("set-cookie")
        .expect("the token kept as a cookie");
    // Named for the port: two servers on one host keep a cookie each.
    let named = format!("state_server_token_{}=s3cret;", addr.port());
    assert!(cookie.starts_with(&named), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );

    let with = |cookie: &'static str| [("Cookie", cookie)];
    for target in [
        "/inspect/t",
        "/inspect/t/live?after=0",
        "/threads/t/state",
        "/inspector.js",
    ] {
        let response = request(addr, "GET", target, &with("state_server_token=s3cret"), b"").await;
        assert_eq!(response.status, 200, "{target}");
        assert!(response.header("set-cookie").is_none(), "{target}");
        let response = request(addr, "GET", target, &with("state_server_token=nope"), b"").await;
        assert_eq!(response.status, 401, "{target}");
    }
    // The JSON routes take no token in the query.
    assert_eq!(get(addr, "/threads?access_token=s3cret").await.status, 401);
    // The cookie the answer set opens the pages; another port's does not.
    let own = format!("state_server_token_{}=s3cret", addr.port());
    let response = request(addr, "GET", "/inspect/t", &[("Cookie", own.as_str())], b"").await;
    assert_eq!(response.status, 200);
    let other = format!("state_server_token_{}=s3cret", addr.port().wrapping_add(1));
    let response = request(
        addr,
        "GET",
        "/inspect/t",
        &[("Cookie", other.as_str())],
        b"",
    )
    .await;
    assert_eq!(response.status, 401);
}

#[tokio::test]
async fn a_browser_posting_from_another_site_is_refused_by_sec_fetch_site() {
    let store = Store::memory();
    desk_thread(&store, "trip").await;
    let addr = serve(
        Server::new(store.clone())
            .allow_writes(true)
            .router::<Desk>(),
    )
    .await;
    let form = "seq=3&to=copy";
    for (site, status) in [
        ("cross-site", 403),
        ("same-site", 403),
        ("same-origin", 303),
    ] {
        let headers = [
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Sec-Fetch-Site", site),
        ];
        let response = request(
            addr,
            "POST",
            "/inspect/trip/fork",
            &headers,
            form.as_bytes(),
        )
        .await;
        assert_eq!(response.status, status, "{site}: {}", text(&response));
    }
    assert_eq!(store.threads().await.unwrap().len(), 2);
}

#[tokio::test]
async fn forking_from_the_page_needs_writes_allowed() {
    let store = Store::memory();
    desk_thread(&store, "trip").await;

    // Read-only by default: no form, and a post is refused.
    let addr = serve(Server::new(store.clone()).router::<Desk>()).await;
    assert!(!page(addr, "/inspect/trip").await.contains("Fork at step"));
    let response = post_form(addr, "/inspect/trip/fork", "seq=3&to=copy", None).await;
    assert_eq!(response.status, 403);
    assert!(text(&response).contains("--allow-writes"));
    assert!(store.thread_info("copy").await.is_err());

    let addr = serve(
        Server::new(store.clone())
            .allow_writes(true)
            .router::<Desk>(),
    )
    .await;
    assert!(
        page(addr, "/inspect/trip?seq=3")
            .await
            .contains("Fork at step 3")
    );
    let origin = format!("http://{addr}");
    let response = post_form(addr, "/inspect/trip/fork", "seq=3&to=copy", Some(&origin)).await;
    assert_eq!(response.status, 303, "{}", text(&response));
    assert_eq!(response.header("location"), Some("/inspect/copy"));
    let info = store.thread_info("copy").await.unwrap();
    assert_eq!(
        (info.seq, info.forked_from),
        (3, Some(("trip".to_owned(), 3)))
    );
    let copy = store.thread::<Desk>("copy").await.unwrap();
    assert_eq!(
        copy.state(),
        &store.state_at::<Desk>("trip", 3).await.unwrap()
    );

    // Refused, with nothing written: another site, a taken id, a step
    // past the end, a bad form.
    for (form, origin, status, words) in [
        (
            "seq=3&to=evil",
            Some("http://evil.example"),
            403,
            "own pages",
        ),
        ("seq=3&to=copy", Some(origin.as_str()), 409, "exists"),
        ("seq=99&to=later", None, 404, "99"),
        ("seq=x&to=bad", None, 400, "seq"),
    ] {
        let response = post_form(addr, "/inspect/trip/fork", form, origin).await;
        assert_eq!(response.status, status, "{form}: {}", text(&response));
        assert!(
            text(&response).contains(words),
            "{form}: {}",
            text(&response)
        );
    }
    assert_eq!(store.threads().await.unwrap().len(), 2);

    // The fork is a copy of the log: its page shows the steps before it.
    let html = page(addr, "/inspect/copy").await;
    assert_eq!(
        attributes(&html, "data-kind"),
        ["begin_turn", "apply", "superstep"]
    );
    assert!(
        html.contains(r#"forked from <a href="/inspect/trip?seq=3">trip</a> at step 3"#),
        "{html}"
    );

    // The untyped router forks as well: no state type is needed.
    let addr = serve(
        Server::new(store.clone())
            .allow_writes(true)
            .untyped_router(),
    )
    .await;
    assert!(
        page(addr, "/inspect/trip?seq=8")
            .await
            .contains("Fork at step 8")
    );
    let response = post_form(addr, "/inspect/trip/fork", "seq=8&to=other", None).await;
    assert_eq!(response.status, 303, "{}", text(&response));
    assert_eq!(store.thread_info("other").await.unwrap().seq, 8);
}

#[tokio::test]
async fn a_nested_router_links_under_its_prefix() {
    let store = Store::memory();
    thread_with_steps(&store, "t", 2).await;
    let app = axum::Router::new().nest("/agent", state_server::router::<support::Notes>(store));
    let addr = serve(app).await;
    let html = page(addr, "/agent").await;
    assert!(html.contains(r#"href="/agent/inspector.css""#), "{html}");
    assert!(
        html.contains(r#"<a href="/agent/inspect/t">t</a>"#),
        "{html}"
    );
    let html = page(addr, "/agent/inspect/t").await;
    assert!(
        html.contains(r#"data-stream="/agent/threads/t/stream""#),
        "{html}"
    );
    assert!(html.contains(r#"href="/agent/inspect/t?seq=1""#), "{html}");
    assert_eq!(get(addr, "/agent/inspector.js").await.status, 200);
}

#[tokio::test]
async fn the_untyped_router_shows_the_writes_but_no_state() {
    let store = Store::memory();
    desk_thread(&store, "trip").await;
    let addr = serve(Server::new(store).untyped_router()).await;
    let html = page(addr, "/inspect/trip").await;
    assert_eq!(attributes(&html, "data-kind").len(), 8);
    assert!(
        html.contains(r#"<div class="bubble assistant">"#),
        "messages by their shape"
    );
    assert!(html.contains(QUESTION));
    assert!(
        html.contains("does not know the threads' state type"),
        "{html}"
    );
    assert!(!html.contains(r#"<section id="diff""#));
}

#[tokio::test]
async fn ids_and_values_are_escaped_everywhere() {
    let store = Store::memory();
    let id = "a\"b<c>&d";
    let mut thread = store.thread::<Desk>(id).await.unwrap();
    thread
        .apply(
            Desk::delta()
                .title("<img src=x onerror=alert(1)>")
                .log(vec!["</li><script>x</script>".into()]),
        )
        .await
        .unwrap();
    drop(thread);
    let addr = serve(Server::new(store).router::<Desk>()).await;
    for target in ["/", "/inspect/a%22b%3Cc%3E%26d"] {
        let html = page(addr, target).await;
        assert!(!html.contains("<img"), "{target}: {html}");
        assert!(!html.contains("<script>x"), "{target}: {html}");
        assert!(!html.contains("a\"b<c>"), "{target}: {html}");
        assert!(html.contains("a&quot;b&lt;c&gt;&amp;d"), "{target}: {html}");
    }
}

#[tokio::test]
async fn a_pending_interrupt_is_answered_from_the_page() {
    use futures::StreamExt;
    let store = Store::memory();
    desk_thread(&store, "trip").await;
    let id = interrupt_id(&store, "trip").await;
    let form = format!("interrupt={id}&answer=yes");

    // Without writes allowed, or without the graph: no form, refused.
    let addr = serve(
        Server::new(store.clone())
            .graph(support::desk::graph(&store))
            .router::<Desk>(),
    )
    .await;
    assert!(
        !page(addr, "/inspect/trip")
            .await
            .contains("Answer and resume")
    );
    assert_eq!(
        post_form(addr, "/inspect/trip/answer", &form, None)
            .await
            .status,
        403
    );
    let addr = serve(
        Server::new(store.clone())
            .allow_writes(true)
            .router::<Desk>(),
    )
    .await;
    assert!(
        !page(addr, "/inspect/trip")
            .await
            .contains("Answer and resume")
    );
    let response = post_form(addr, "/inspect/trip/answer", &form, None).await;
    assert_eq!(response.status, 501);
    assert!(text(&response).contains("Server::graph"));

    let addr = serve(
        Server::new(store.clone())
            .allow_writes(true)
            .graph(support::desk::graph(&store))
            .router::<Desk>(),
    )
    .await;
    let html = page(addr, "/inspect/trip").await;
    assert!(html.contains("Answer and resume"), "{html}");
    assert!(
        html.contains(&format!(r#"name="interrupt" value="{id}""#)),
        "{html}"
    );

    // Refused, nothing resumed: another site, an unknown id.
    let response = post_form(
        addr,
        "/inspect/trip/answer",
        &form,
        Some("http://evil.example"),
    )
    .await;
    assert_eq!(response.status, 403);
    let response = post_form(
        addr,
        "/inspect/trip/answer",
        "interrupt=nope&answer=yes",
        None,
    )
    .await;
    assert_eq!(response.status, 409, "{}", text(&response));
    assert_eq!(store.thread_info("trip").await.unwrap().seq, 8);

    // The answer resumes the run; the page comes back at once.
    let mut steps = store.watch("trip", 8);
    let response = post_form(
        addr,
        "/inspect/trip/answer",
        &form,
        Some(&format!("http://{addr}")),
    )
    .await;
    assert_eq!(response.status, 303, "{}", text(&response));
    assert_eq!(response.header("location"), Some("/inspect/trip"));
    let resumed = tokio::time::timeout(std::time::Duration::from_secs(10), steps.next())
        .await
        .expect("the run goes on")
        .expect("a step")
        .expect("readable");
    assert_eq!(resumed.seq, 9);
    assert_eq!(resumed.nodes(), ["approve"]);
    let state = store.state_at::<Desk>("trip", 9).await.unwrap();
    assert_eq!(state.log.last().map(String::as_str), Some("approved: yes"));
    // Answered: the same answer again is a conflict, and no form is left.
    let response = post_form(addr, "/inspect/trip/answer", &form, None).await;
    assert_eq!(response.status, 409);
    assert!(
        !page(addr, "/inspect/trip")
            .await
            .contains("Answer and resume")
    );
}

#[test]
fn a_graph_of_another_state_type_is_refused_when_the_router_is_made() {
    let store = Store::memory();
    let server = Server::new(store.clone()).graph(support::desk::graph(&store));
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        server.router::<support::Notes>()
    }))
    .expect_err("a graph of Desk on a router of Notes");
    let message = refused
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("Server::graph runs"), "{message}");
    assert!(message.contains("Desk"), "{message}");
}

/// A subgraph's steps show under their namespace, what each of its nodes
/// wrote, and the paused run's question.
#[tokio::test]
async fn a_subgraphs_steps_show_under_their_namespace() {
    use serde_json::json;
    use state_graph::{Ctx, END, NodeError, START, StateGraph};
    let store = Store::memory();
    let mut crew = StateGraph::<Desk>::new();
    crew.add_node("draft", |_: &Desk| {
        Desk::delta().log(vec!["drafted".into()])
    });
    crew.add_node(
        "check",
        |_: &Desk, ctx: &Ctx| -> Result<DeskDelta, NodeError> {
            ctx.interrupt(json!(QUESTION))?;
            Ok(Desk::delta())
        },
    );
    crew.add_edge(START, "draft")
        .add_edge("draft", "check")
        .add_edge("check", END);
    let mut g = StateGraph::<Desk>::new();
    g.add_subgraph("crew", crew.compile().unwrap());
    g.add_edge(START, "crew").add_edge("crew", END);
    let app = g.compile().unwrap().with_store(store.clone());
    let out = app.invoke_thread("team", Desk::delta()).await.unwrap();
    assert!(out.is_interrupted());
    let addr = serve(Server::new(store).router::<Desk>()).await;
    let html = page(addr, "/inspect/team").await;
    assert_eq!(
        attributes(&html, "data-kind"),
        ["begin_turn", "subgraph", "pending"],
        "{html}"
    );
    assert!(html.contains(">subgraph</span>"), "{html}");
    assert!(html.contains("Inside subgraph <code>crew:"), "{html}");
    assert!(html.contains(r#"data-node="draft""#), "{html}");
    assert!(html.contains("drafted"), "{html}");
}

/// A subgraph alone in its parent's superstep: the parent's step shows
/// what each of the subgraph's supersteps wrote, in order.
#[tokio::test]
async fn a_subgraphs_supersteps_show_in_its_parents_step() {
    use state_graph::{END, START, StateGraph};
    let store = Store::memory();
    let mut crew = StateGraph::<Desk>::new();
    crew.add_node("draft", |_: &Desk| {
        Desk::delta().log(vec!["drafted".into()])
    });
    crew.add_node("polish", |_: &Desk| {
        Desk::delta().log(vec!["polished".into()])
    });
    crew.add_edge(START, "draft")
        .add_edge("draft", "polish")
        .add_edge("polish", END);
    let mut g = StateGraph::<Desk>::new();
    g.add_subgraph("crew", crew.compile().unwrap());
    g.add_edge(START, "crew").add_edge("crew", END);
    let app = g.compile().unwrap().with_store(store.clone());
    app.invoke_thread("team", Desk::delta()).await.unwrap();
    let addr = serve(Server::new(store).router::<Desk>()).await;
    let html = page(addr, "/inspect/team").await;
    assert_eq!(
        attributes(&html, "data-kind"),
        ["begin_turn", "subgraph", "subgraph", "superstep"],
        "{html}"
    );
    let superstep = &html[html.rfind(r#"data-kind="superstep""#).unwrap()..];
    let first = superstep.find("subgraph step 1").expect("its first step");
    let second = superstep.find("subgraph step 2").expect("its second step");
    let drafted = superstep.find("drafted").expect("the first write");
    let polished = superstep.find("polished").expect("the second write");
    assert!(
        first < drafted && drafted < second && second < polished,
        "{superstep}"
    );
    assert!(superstep.contains(r#"data-node="crew""#), "{superstep}");
}

#[tokio::test]
async fn a_branch_back_to_an_earlier_step_shows_the_state_it_went_back_to() {
    let store = Store::memory();
    let mut t = store.thread::<Desk>("desk").await.unwrap();
    t.apply(Desk::delta().log(vec!["kept".into()]))
        .await
        .unwrap();
    t.apply(Desk::delta().log(vec!["dropped".into()]))
        .await
        .unwrap();
    t.branch(1).await.unwrap();
    let addr = serve(Server::new(store).router::<Desk>()).await;
    let html = page(addr, "/inspect/desk").await;
    assert_eq!(
        attributes(&html, "data-kind"),
        ["apply", "apply", "branch"],
        "{html}"
    );
    assert!(html.contains(">branch</span>"), "{html}");
    assert!(
        html.contains("Back to the state after step 1, as a new branch"),
        "{html}"
    );
    // The state is set back, not taken through the reducers.
    assert!(html.contains("set (no reducer)"), "{html}");
}

/// The tool-loop graph of `agent_sdk.rs` (`agent`, `tools`, and `hitl`,
/// `fail`, `slow`) served on `store`, the inspector with writes allowed
/// or not.
async fn agent_server(store: &Store, allow_writes: bool) -> SocketAddr {
    serve(
        crate::agent_sdk::server(store.clone())
            .allow_writes(allow_writes)
            .router::<crate::agent_sdk::Chat>(),
    )
    .await
}

/// A JSON request to the Agent Server API.
async fn api(addr: SocketAddr, method: &str, target: &str, body: serde_json::Value) -> Response {
    let body = body.to_string();
    request(
        addr,
        method,
        target,
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    )
    .await
}

/// A thread made through the API, with one run of the tool loop waited
/// for: its steps are the input, `agent`, `tools`, `agent`.
async fn agent_thread(addr: SocketAddr) -> String {
    let created = api(addr, "POST", "/threads", serde_json::json!({})).await;
    assert_eq!(created.status, 200, "{}", text(&created));
    let thread = created.json()["thread_id"].as_str().unwrap().to_owned();
    let input = serde_json::json!({
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": "hi"}]},
    });
    let waited = api(addr, "POST", &format!("/threads/{thread}/runs/wait"), input).await;
    assert_eq!(waited.status, 200, "{}", text(&waited));
    thread
}

/// The seq of the step of `thread` that ran exactly `nodes`.
async fn step_that_ran(store: &Store, thread: &str, nodes: &[&str]) -> u64 {
    let history = store.history(thread, 1..=u64::MAX).await.unwrap();
    let step = history
        .iter()
        .find(|step| step.nodes() == nodes)
        .unwrap_or_else(|| {
            let all: Vec<_> = history.iter().map(|s| s.nodes()).collect();
            panic!("no step ran {nodes:?}: {all:?}")
        });
    step.seq
}

/// The nodes marked on the page's graph.
fn marked(html: &str) -> Vec<String> {
    html.match_indices("class=\"gnode")
        .filter_map(|(at, _)| {
            let tag = &html[at..at + html[at..].find('>').unwrap()];
            tag.contains(" active\"")
                .then(|| attributes(tag, "data-node").remove(0))
        })
        .collect()
}

#[tokio::test]
async fn an_agent_threads_page_draws_its_graph_with_the_selected_steps_nodes() {
    let store = Store::memory();
    let addr = agent_server(&store, false).await;
    let thread = agent_thread(addr).await;
    let tools = step_that_ran(&store, &thread, &["tools"]).await;
    let head = store.thread_info(&thread).await.unwrap().seq;

    // The last step (the agent's answer) is selected: `agent` is marked.
    let html = page(addr, &format!("/inspect/{thread}")).await;
    assert!(html.contains(r#"<section id="graph""#), "{html}");
    assert_eq!(marked(&html), ["agent"]);
    assert!(html.contains(&format!(r#"data-seq="{head}" data-nodes="agent""#)));
    // Every node, and the edges as LangGraph draws them: the router's
    // two targets dashed, the others solid.
    let svg = &html[html.find("<svg").unwrap()..html.find("</svg>").unwrap()];
    assert_eq!(
        attributes(svg, "data-node"),
        ["__start__", "agent", "tools", "__end__"]
    );
    assert_eq!(html.matches(r#"class="edge conditional""#).count(), 2);
    assert_eq!(html.matches(r#"class="edge""#).count(), 2);
    assert!(html.contains(r#"class="edge conditional" data-from="agent" data-to="tools""#));
    // The Mermaid text, as `draw_mermaid` writes it.
    assert!(html.contains("\tagent -.-&gt; tools;\n"), "{html}");
    assert!(html.contains("\ttools --&gt; agent;\n"));
    // Another step selected: its nodes, on the page and in the part the
    // script swaps in.
    for target in [
        format!("/inspect/{thread}?seq={tools}"),
        format!("/inspect/{thread}?seq={tools}&part=panel"),
    ] {
        let html = page(addr, &target).await;
        assert_eq!(marked(&html), ["tools"], "{target}");
        assert!(html.contains(&format!("Step {tools} ran ")), "{target}");
    }
    // A run's input is `__start__`'s.
    let html = page(addr, &format!("/inspect/{thread}?seq=1&part=panel")).await;
    assert_eq!(marked(&html), ["__start__"]);
    // Step 0 ran nothing.
    let html = page(addr, &format!("/inspect/{thread}?seq=0&part=panel")).await;
    assert!(marked(&html).is_empty());
    // The page follows the thread through the inspector's own stream (the
    // thread's /stream is the Agent Server's).
    assert!(html.contains("ran no node"));
    let html = page(addr, &format!("/inspect/{thread}")).await;
    assert!(html.contains(&format!(r#"data-stream="/inspect/{thread}/events""#)));
}

#[tokio::test]
async fn an_agent_threads_runs_are_listed_newest_first_with_their_status() {
    let store = Store::memory();
    let addr = agent_server(&store, false).await;
    let thread = agent_thread(addr).await;
    // A second run, that fails.
    let failed = api(
        addr,
        "POST",
        &format!("/threads/{thread}/runs/wait"),
        serde_json::json!({"assistant_id": "fail", "input": {}}),
    )
    .await;
    assert_eq!(failed.status, 200, "{}", text(&failed));
    let runs = store
        .list_runs(Some(&thread), state_store::RunFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 2);

    let html = page(addr, &format!("/inspect/{thread}")).await;
    assert_eq!(
        attributes(&html, "data-run"),
        [runs[0].run_id.clone(), runs[1].run_id.clone()]
    );
    assert_eq!(attributes(&html, "data-status"), ["error", "success"]);
    assert!(html.contains(r#"<section id="runs" data-active="false""#));
    assert!(html.contains(r#"<td>fail</td>"#) && html.contains(r#"<td>agent</td>"#));
    // The live fragment carries them too (the script swaps them in).
    let live = page(addr, &format!("/inspect/{thread}/live?after=0")).await;
    assert_eq!(attributes(&live, "data-status"), ["error", "success"]);

    // Read-only: no run form, and its route refuses.
    assert!(!html.contains("run-form"));
    assert!(!page(addr, "/").await.contains("run-form"));
    let refused = post_form(
        addr,
        &format!("/inspect/{thread}/run"),
        "assistant=agent&input=",
        None,
    )
    .await;
    assert_eq!(refused.status, 403, "{}", text(&refused));
}

#[tokio::test]
async fn a_thread_written_outside_the_api_shows_no_graph_or_runs() {
    let store = Store::memory();
    desk_thread(&store, "trip").await;
    let addr = serve(
        crate::agent_sdk::server(store.clone())
            .allow_writes(true)
            .router::<Desk>(),
    )
    .await;
    let html = page(addr, "/inspect/trip").await;
    for absent in [r#"id="graph""#, r#"id="runs""#, r#"id="run-form""#, "<svg"] {
        assert!(!html.contains(absent), "{absent}");
    }
    assert!(html.contains(r#"data-stream="/threads/trip/stream""#));
    let live = page(addr, "/inspect/trip/live?after=0").await;
    assert!(!live.contains(r#"id="runs""#));
}

#[tokio::test]
async fn the_run_form_starts_a_run_and_streams_it() {
    let store = Store::memory();
    let addr = agent_server(&store, true).await;
    let thread = agent_thread(addr).await;
    let html = page(addr, &format!("/inspect/{thread}")).await;
    let form_tag = |html: &str| {
        let at = html.find(r#"id="run-form""#).expect("a run form");
        let start = html[..at].rfind('<').unwrap();
        html[start..start + html[start..].find('>').unwrap() + 1].to_owned()
    };
    assert_eq!(
        form_tag(&html),
        format!(r#"<form class="run" id="run-form" method="post" action="/inspect/{thread}/run">"#)
    );
    assert!(
        html.contains(r#"<option value="agent" selected>agent</option>"#),
        "{html}"
    );
    // The thread list's form starts a run on a new thread.
    let home = page(addr, "/").await;
    assert_eq!(
        form_tag(&home),
        r#"<form class="run" id="run-form" method="post" action="/inspect">"#
    );

    // The script's request: the run's events, as they come.
    let input = support::encode(r#"{"messages": [{"role": "user", "content": "again"}]}"#);
    let form = format!("assistant=agent&input={input}");
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "text/event-stream"),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    let target = format!("/inspect/{thread}/run");
    let streamed = request(addr, "POST", &target, &headers, form.as_bytes()).await;
    let body = text(&streamed);
    assert_eq!(streamed.status, 200, "{body}");
    assert_eq!(
        streamed.header("x-thread-page"),
        Some(format!("/inspect/{thread}").as_str())
    );
    let run_url = streamed
        .header("x-run-url")
        .expect("the run's URL")
        .to_owned();
    assert!(body.contains("event: metadata"), "{body}");
    assert!(
        body.contains("event: values") && body.contains("event: updates"),
        "{body}"
    );
    assert!(body.contains("echo:again"), "{body}");
    let run = support::get(addr, &run_url).await;
    assert_eq!(run.json()["status"], "success", "{}", text(&run));

    // A plain form (no script): the run is started, and the thread's page
    // follows it.
    let posted = post_form(addr, &target, &form, Some(&format!("http://{addr}"))).await;
    assert_eq!(posted.status, 303, "{}", text(&posted));
    assert_eq!(
        posted.header("location"),
        Some(target.trim_end_matches("/run"))
    );

    // Errors: input that is not JSON, an unknown assistant (the API's
    // 422), each as JSON to the script and as a page to a form.
    let bad = request(
        addr,
        "POST",
        &target,
        &headers,
        b"assistant=agent&input=%7Bnope",
    )
    .await;
    let detail = bad.error(422, "invalid_body");
    assert!(detail.starts_with("input: not JSON"), "{detail}");
    let unknown = request(addr, "POST", &target, &headers, b"assistant=nobody&input=").await;
    let detail = unknown.error(422, "invalid_body");
    assert!(detail.contains("Invalid assistant: 'nobody'"), "{detail}");
    let page_error = post_form(addr, &target, "assistant=agent&input=%7Bnope", None).await;
    assert_eq!(page_error.status, 422);
    assert!(text(&page_error).contains("input: not JSON"));

    // Another site's post is refused before anything is read or run.
    let runs_before = store
        .list_runs(Some(&thread), state_store::RunFilter::default())
        .await
        .unwrap()
        .len();
    for origin in [
        ("Sec-Fetch-Site", "cross-site"),
        ("Origin", "http://evil.example"),
    ] {
        let headers = [
            ("Content-Type", "application/x-www-form-urlencoded"),
            origin,
        ];
        let refused = request(addr, "POST", &target, &headers, form.as_bytes()).await;
        assert_eq!(refused.status, 403, "{origin:?}");
        assert!(
            text(&refused).contains("this server&#39;s own pages")
                || text(&refused).contains("this server's own pages"),
            "{}",
            text(&refused)
        );
    }
    let runs_after = store
        .list_runs(Some(&thread), state_store::RunFilter::default())
        .await
        .unwrap()
        .len();
    assert_eq!(runs_after, runs_before);

    // From the thread list: a new thread, then its page.
    let posted = post_form(addr, "/inspect", &form, None).await;
    assert_eq!(posted.status, 303, "{}", text(&posted));
    let page_url = posted.header("location").unwrap().to_owned();
    let new_thread = page_url.strip_prefix("/inspect/").unwrap().to_owned();
    assert_ne!(new_thread, thread);
    let record = store
        .thread_record(&new_thread, None)
        .await
        .unwrap()
        .expect("a record");
    assert_eq!(record.metadata["graph_id"], "agent");
}

#[tokio::test]
async fn the_inspectors_event_stream_announces_each_step() {
    let store = Store::memory();
    let addr = agent_server(&store, false).await;
    let thread = agent_thread(addr).await;
    let head = store.thread_info(&thread).await.unwrap().seq;
    let mut events = support::stream(addr, &format!("/inspect/{thread}/events?after=1")).await;
    let got = events.events((head - 1) as usize).await;
    assert!(got.iter().all(|event| event.event == "step"));
    let seqs: Vec<u64> = got.iter().map(support::SseEvent::seq).collect();
    assert_eq!(seqs, (2..=head).collect::<Vec<_>>());
    // Resumed where the browser was.
    let mut resumed = support::open_stream(
        addr,
        &format!("/inspect/{thread}/events?after=0"),
        &[("Last-Event-ID", &head.to_string())],
    )
    .await
    .unwrap_or_else(|r| panic!("{}", text(&r)));
    resumed
        .assert_quiet(std::time::Duration::from_millis(300))
        .await;
    let bad = support::open_stream(
        addr,
        &format!("/inspect/{thread}/events"),
        &[("Last-Event-ID", "x")],
    )
    .await;
    assert_eq!(bad.err().map(|r| r.status), Some(400));
}
