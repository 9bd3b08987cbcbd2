//! The inspector in a real headless Chromium (Debian's, installed by
//! `scripts/install/chromium.sh`), served over loopback from SQLite files: the
//! thread list and its filter, a thread's steps with their nodes and
//! writes, selecting a step (click and keyboard) to see its state, a step
//! committed while the page is open appearing without a reload, an
//! interrupt answered from the page, the event stream resuming with
//! `Last-Event-ID` after its connection is cut, the pages with JavaScript
//! off, a phone's width, and text contrast. Screenshots go to `target/test-artifacts/inspector/`.

use crate::browser::{Browser, Page};
use crate::support;
use crate::support::desk::{Desk, QUESTION, desk_thread, graph};
use crate::support::serve;
use serde_json::{Value, json};
use state_core::{Message, State};
use state_server::Server;
use state_store::Store;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How long a live update may take to show, at most: the event stream's
/// reconnection delay (Chromium waits about 3 s) plus a loaded machine.
const LIVE: Duration = Duration::from_secs(30);

/// A SQLite file with the desk threads "trip" and "trip-2" and two more.
async fn store(dir: &std::path::Path) -> Store {
    let store = Store::sqlite(dir.join("inspector.db")).await.unwrap();
    support::thread_with_steps(&store, "notes-a", 2).await;
    support::thread_with_steps(&store, "notes-b", 1).await;
    desk_thread(&store, "trip-2").await;
    desk_thread(&store, "trip").await;
    store
}

/// What each test starts from: the desk threads in a fresh SQLite file,
/// the inspector serving them (writes allowed, the desk graph) and a
/// browser (once the one before is gone: one runs at a time).
struct Setup {
    // Fields drop in order: the browser ends before the store and its
    // file go.
    browser: Browser,
    store: Store,
    dir: tempfile::TempDir,
    addr: SocketAddr,
}

impl Setup {
    async fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path()).await;
        let addr = serve(
            Server::new(store.clone())
                .allow_writes(true)
                .graph(graph(&store))
                .router::<Desk>(),
        )
        .await;
        Setup {
            browser: Browser::launch(),
            store,
            dir,
            addr,
        }
    }
}

fn texts(page: &Page<'_>, selector: &str) -> Vec<String> {
    let js = format!(
        "[...document.querySelectorAll({})].map(e => e.innerText.trim())",
        json!(selector)
    );
    match page.eval_json(&js) {
        Value::Array(items) => items
            .into_iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        other => panic!("{other}"),
    }
}

/// WCAG's contrast ratio of each element's text against the background it
/// sits on (the first opaque one up the tree), the lowest first.
const LOWEST_CONTRAST: &str = r#"(() => {
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (e) => {
    for (; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] === 1) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const ratios = [...document.querySelectorAll('body *')]
    .filter((e) => e.childNodes.length && [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()))
    // SVG text is painted by its fill, over a shape: not this check's.
    .filter((e) => !(e instanceof SVGElement) && e.offsetParent !== null)
    .map((e) => {
      const a = lum(rgb(getComputedStyle(e).color)), b = lum(background(e));
      return { ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), text: e.innerText.slice(0, 40), tag: e.tagName + '.' + e.className };
    })
    .sort((x, y) => x.ratio - y.ratio);
  return ratios.slice(0, 3);
})()"#;

#[track_caller]
fn assert_readable(page: &Page<'_>) {
    let lowest = page.eval_json(LOWEST_CONTRAST);
    let ratio = lowest[0]["ratio"].as_f64().expect("some text");
    assert!(ratio >= 4.5, "text below 4.5:1 contrast: {lowest:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_thread_list_and_its_filter() {
    let setup = Setup::new().await;
    let Setup { browser, addr, .. } = &setup;
    let page = browser.open(&format!("http://{addr}/"));

    let rows = page.eval_json(
        "[...document.querySelectorAll('#threads tbody tr')].map(r => r.dataset.thread)",
    );
    assert_eq!(rows, json!(["trip", "trip-2", "notes-b", "notes-a"]));
    let cells = texts(&page, "#threads tbody tr:first-child td");
    assert_eq!(
        (cells[0].as_str(), cells[3].as_str()),
        ("8", "—"),
        "{cells:?}"
    );
    assert!(
        cells[1].ends_with(" UTC") && cells[2].ends_with(" UTC"),
        "{cells:?}"
    );
    page.screenshot("threads");
    assert_readable(&page);

    page.fill("#q", "TRIP-");
    page.expect_navigation(|page| page.click("form.filter button"));
    let rows = page.eval_json(
        "[...document.querySelectorAll('#threads tbody tr')].map(r => r.dataset.thread)",
    );
    assert_eq!(rows, json!(["trip-2"]));
    assert!(page.url().ends_with("/?q=TRIP-"), "{}", page.url());

    page.expect_navigation(|page| page.click("#threads a[href='/inspect/trip-2']"));
    assert!(page.url().ends_with("/inspect/trip-2"), "{}", page.url());
    page.assert_no_js_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thread_step_by_step() {
    let setup = Setup::new().await;
    let Setup { browser, addr, .. } = &setup;
    let page = browser.open(&format!("http://{addr}/inspect/trip"));

    // Every step, with its nodes and what each wrote.
    assert_eq!(page.count("#timeline li.step"), 8);
    let steps = page.eval_json(
        "[...document.querySelectorAll('#timeline li.step')].map(li => ({
            seq: Number(li.dataset.seq),
            kind: li.querySelector('.kind').innerText,
            nodes: [...li.querySelectorAll('.writes .write[data-node]')].map(w => w.dataset.node),
            fields: [...li.querySelectorAll('.field')].map(f => f.dataset.field + ': ' + f.querySelector('.op').innerText),
        }))",
    );
    assert_eq!(
        steps,
        json!([
            {"seq": 1, "kind": "turn reset", "nodes": [], "fields": []},
            {"seq": 2, "kind": "apply", "nodes": [], "fields": ["messages: added 1 message", "title: overwritten"]},
            {"seq": 3, "kind": "superstep", "nodes": ["agent", "scorer"],
             "fields": ["messages: added 1 message", "log: appended 1 item", "scores: merged 1 key"]},
            {"seq": 4, "kind": "superstep", "nodes": ["tools", "logger"],
             "fields": ["messages: added 1 message", "log: appended 1 item"]},
            {"seq": 5, "kind": "set", "nodes": [], "fields": ["title: set (no reducer)"]},
            {"seq": 6, "kind": "turn reset", "nodes": ["input"], "fields": ["messages: added 1 message"]},
            {"seq": 7, "kind": "superstep", "nodes": ["plan"], "fields": ["log: appended 1 item"]},
            {"seq": 8, "kind": "interrupt", "nodes": [], "fields": []},
        ])
    );
    // Messages as chat bubbles, the tool call with its arguments.
    assert_eq!(texts(&page, "#step-3 .bubble .content"), ["Searching."]);
    assert!(page.text("#step-3 .tool-call").contains("search_flights"));
    assert!(
        page.text("#step-2 .bubble.user")
            .contains("Find <b>flights</b> to Oslo")
    );
    // The question, waiting.
    assert!(page.text("#interrupts").contains(QUESTION));
    assert!(page.text("#state").contains("State after step 8"));
    page.screenshot_full_page("thread");
    assert_readable(&page);

    // Selecting a step: its state and changes, in place (no new document).
    page.eval_json("window.samePage = true");
    page.click("#step-3 a.select");
    page.wait_for("document.querySelector('#state')?.dataset.seq === '3'");
    assert_eq!(page.eval_json("window.samePage === true"), json!(true));
    assert!(
        page.url().ends_with("/inspect/trip?seq=3"),
        "{}",
        page.url()
    );
    assert_eq!(
        page.eval_json("document.querySelector('li.step.selected').id"),
        json!("step-3")
    );
    let state = page.text("#state");
    assert!(
        state.contains("relevance") && state.contains("Searching."),
        "{state}"
    );
    assert!(
        !state.contains("Trip to Oslo"),
        "the title is set at step 5: {state}"
    );
    let changed = page
        .eval_json("[...document.querySelectorAll('#diff li.change')].map(li => li.dataset.field)");
    assert_eq!(changed, json!(["messages", "log", "scores"]));
    page.screenshot("thread-step-3");

    // The keyboard moves between steps.
    page.eval_json(
        "(() => { const a = document.querySelector('#step-3 a.select'); a.focus();
          a.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowDown', bubbles: true})); })()",
    );
    page.wait_for("document.querySelector('#state')?.dataset.seq === '4'");
    assert_eq!(
        page.eval_json("document.activeElement.closest('li').id"),
        json!("step-4")
    );
    // Back goes to the step before.
    page.eval_json("history.back()");
    page.wait_for("document.querySelector('#state')?.dataset.seq === '3'");

    // Comparing with any step: a form without script as well.
    page.fill("#compare", "0");
    page.expect_navigation(|page| page.click("form.compare button"));
    assert!(page.text("#diff").contains("Changes from step 0 to step 3"));

    // A phone's width: one column, nothing wider than the screen.
    page.set_mobile_viewport(390, 844);
    page.goto(&format!("http://{addr}/inspect/trip?seq=4"));
    let overflow = page.eval_json("document.documentElement.scrollWidth - window.innerWidth");
    assert!(
        overflow.as_i64().unwrap() <= 0,
        "wider than the screen by {overflow} px"
    );
    page.screenshot_full_page("thread-phone");
    page.assert_no_js_errors();
}

/// A TCP proxy in front of the server that records what browsers send and
/// can cut every open connection, as a network drop would.
struct Proxy {
    addr: SocketAddr,
    seen: Arc<Mutex<String>>,
    open: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(String::new()));
        let open: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (log, tasks) = (seen.clone(), open.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let log = log.clone();
                let task = tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(target).await else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let upstream = async {
                        let mut buffer = [0u8; 8192];
                        loop {
                            let n = match client_read.read(&mut buffer).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            log.lock()
                                .unwrap()
                                .push_str(&String::from_utf8_lossy(&buffer[..n]).to_lowercase());
                            if server_write.write_all(&buffer[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    let downstream = tokio::io::copy(&mut server_read, &mut client_write);
                    tokio::select! {
                        _ = upstream => {}
                        _ = downstream => {}
                    }
                });
                tasks.lock().unwrap().push(task);
            }
        });
        Proxy { addr, seen, open }
    }

    /// Drops every connection open now (both sockets close).
    fn cut(&self) {
        for task in self.open.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_javascript_every_view_is_a_link_or_a_form_away() {
    let setup = Setup::new().await;
    let Setup { browser, addr, .. } = &setup;
    let page = browser.open("about:blank");
    page.disable_scripts();
    page.goto(&format!("http://{addr}/"));
    page.expect_navigation(|page| page.click("#threads a[href='/inspect/trip']"));
    assert_eq!(page.count("#timeline li.step"), 8);
    assert_eq!(page.text("#live"), "", "no script: not following live");
    // Selecting a step is a new page with that step's state.
    page.expect_navigation(|page| page.click("#step-3 a.select"));
    assert!(
        page.url().ends_with("/inspect/trip?seq=3"),
        "{}",
        page.url()
    );
    assert_eq!(
        page.eval_json("document.querySelector('#state').dataset.seq"),
        json!("3")
    );
    assert!(page.text("#diff").contains("Changes from step 2 to step 3"));
    page.fill("#compare", "1");
    page.expect_navigation(|page| page.click("form.compare button"));
    assert!(page.text("#diff").contains("Changes from step 1 to step 3"));
    // Answering works as a plain form too.
    page.fill("#answer-0", "yes");
    page.expect_navigation(|page| page.click("form.answer button"));
    // The run goes on in the background; without a script, reloading
    // shows it.
    let thread = page.url();
    let deadline = std::time::Instant::now() + LIVE;
    while page.count("#step-9") == 0 {
        assert!(std::time::Instant::now() < deadline, "step 9 never came");
        tokio::time::sleep(Duration::from_millis(200)).await;
        page.goto(&thread);
    }
    assert!(page.text("#step-9").contains("approved: yes"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_follows_the_thread_live() {
    let setup = Setup::new().await;
    let Setup { browser, dir, .. } = &setup;
    let proxy = Proxy::start(setup.addr).await;
    let page = browser.open(&format!("http://{}/inspect/trip", proxy.addr));
    page.wait_for_within(
        "document.querySelector('#live')?.dataset.state === 'open'",
        LIVE,
    );

    // Another program answers the question: the run goes on, and its step
    // appears here without a reload.
    let writer = Store::sqlite(dir.path().join("inspector.db"))
        .await
        .unwrap();
    page.eval_json("window.samePage = true");
    graph(&writer).resume("trip", json!("yes")).await.unwrap();
    page.wait_for_within("!!document.querySelector('#step-9')", LIVE);
    assert_eq!(page.eval_json("window.samePage === true"), json!(true));
    assert!(page.text("#step-9").contains("approved: yes"));
    assert_eq!(page.text("#interrupts"), "", "answered: nothing waits");
    assert_eq!(page.text("#head"), "9 steps");

    // The connection drops; a step is committed meanwhile. The browser
    // reconnects saying where it was (Last-Event-ID), and the step appears
    // once.
    proxy.cut();
    let mut thread = writer.thread::<Desk>("trip").await.unwrap();
    thread
        .apply(Desk::delta().messages(vec![Message::ai("Booked.").with_id("a2")]))
        .await
        .unwrap();
    page.wait_for_within("!!document.querySelector('#step-10')", LIVE);
    assert_eq!(page.count("#timeline li.step"), 10);
    assert_eq!(page.eval_json("window.samePage === true"), json!(true));
    let seen = proxy.seen.lock().unwrap().clone();
    assert!(
        seen.contains("last-event-id: 9"),
        "the reconnection resumes after step 9"
    );
    page.screenshot("live");
    // The one error: the stream cut on purpose.
    for error in page.js_errors() {
        assert!(
            error.contains("ERR_INCOMPLETE_CHUNKED_ENCODING") && error.contains("/stream?"),
            "{error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_answered_from_the_page() {
    let setup = Setup::new().await;
    let Setup {
        browser,
        store,
        addr,
        ..
    } = &setup;
    let page = browser.open(&format!("http://{addr}/inspect/trip-2"));
    assert!(page.text("#interrupts").contains(QUESTION));
    page.screenshot("interrupt");
    page.fill("#answer-0", "no, too expensive");
    page.expect_navigation(|page| page.click("form.answer button"));
    page.wait_for_within("!!document.querySelector('#step-9')", LIVE);
    assert!(page.text("#step-9").contains("approved: no, too expensive"));
    page.wait_for("document.querySelector('#interrupts').innerText.trim() === ''");

    // Fork at step 3 from the page: the new thread's page.
    page.click("#step-3 a.select");
    page.wait_for("document.querySelector('#state')?.dataset.seq === '3'");
    page.fill("#fork-to", "trip-2-retry");
    page.expect_navigation(|page| page.click("form.fork button"));
    assert!(
        page.url().ends_with("/inspect/trip-2-retry"),
        "{}",
        page.url()
    );
    assert_eq!(page.count("#timeline li.step"), 3);
    assert!(page.text("#meta").contains("forked from trip-2 at step 3"));
    page.assert_no_js_errors();
    let info = store.thread_info("trip-2-retry").await.unwrap();
    assert_eq!(info.forked_from, Some(("trip-2".to_owned(), 3)));
}

/// The Agent Server's tool loop (`agent_sdk.rs`) served from a SQLite
/// file, the inspector's writes allowed or not, and a thread made through
/// the API with one run of the tool loop.
struct AgentSetup {
    browser: Browser,
    store: Store,
    _dir: tempfile::TempDir,
    addr: SocketAddr,
    thread: String,
}

impl AgentSetup {
    async fn new(allow_writes: bool) -> AgentSetup {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path().join("agent.db")).await.unwrap();
        let addr = serve(
            crate::agent_sdk::server(store.clone())
                .allow_writes(allow_writes)
                .router::<crate::agent_sdk::Chat>(),
        )
        .await;
        let created = api(addr, "/threads", json!({})).await;
        let thread = created["thread_id"].as_str().unwrap().to_owned();
        run_and_wait(addr, &thread, "hi").await;
        AgentSetup {
            browser: Browser::launch(),
            store,
            _dir: dir,
            addr,
            thread,
        }
    }

    /// The seq of the step that ran exactly `nodes`, the last such.
    async fn step_that_ran(&self, nodes: &[&str]) -> u64 {
        let history = self
            .store
            .history(&self.thread, 1..=u64::MAX)
            .await
            .unwrap();
        history
            .iter()
            .rev()
            .find(|step| step.nodes() == nodes)
            .map(|step| step.seq)
            .expect("such a step")
    }
}

/// `POST target` with a JSON body, answered 200 with JSON.
async fn api(addr: SocketAddr, target: &str, body: Value) -> Value {
    let body = body.to_string();
    let response = support::request(
        addr,
        "POST",
        target,
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(
        response.status,
        200,
        "{target}: {}",
        String::from_utf8_lossy(&response.body)
    );
    response.json()
}

/// A run of the tool loop on `thread` with `text`, waited for.
async fn run_and_wait(addr: SocketAddr, thread: &str, text: &str) {
    let input = json!({"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": text}]}});
    api(addr, &format!("/threads/{thread}/runs/wait"), input).await;
}

const ACTIVE_NODES: &str =
    "[...document.querySelectorAll('#graph svg .gnode.active')].map(g => g.dataset.node)";

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_threads_graph_marks_the_selected_steps_nodes_and_its_runs_go_live() {
    let setup = AgentSetup::new(false).await;
    let AgentSetup {
        browser,
        addr,
        thread,
        ..
    } = &setup;
    let tools = setup.step_that_ran(&["tools"]).await;
    let page = browser.open(&format!("http://{addr}/inspect/{thread}"));

    // The graph is drawn, the last step's node (the agent's answer) marked.
    assert_eq!(
        page.eval_json(
            "[...document.querySelectorAll('#graph svg .gnode')].map(g => g.dataset.node)"
        ),
        json!(["__start__", "agent", "tools", "__end__"])
    );
    assert_eq!(page.eval_json(ACTIVE_NODES), json!(["agent"]));
    assert_eq!(
        page.eval_json("document.querySelectorAll('#graph svg path.edge.conditional').length"),
        json!(2)
    );
    // Drawn, not just present: boxes with a size, dashed where conditional.
    let drawn = page.eval_json(
        "(() => { const r = document.querySelector('#graph .gnode[data-node=tools] rect').getBoundingClientRect();
          const dashed = getComputedStyle(document.querySelector('#graph path.edge.conditional')).strokeDasharray;
          return {w: r.width > 40, h: r.height > 20, dashed: dashed !== 'none'}; })()",
    );
    assert_eq!(drawn, json!({"w": true, "h": true, "dashed": true}));
    assert!(
        page.text("#graph details.mermaid")
            .contains("As Mermaid text")
    );
    // Its runs: one, finished.
    assert_eq!(
        page.eval_json(
            "[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.status)"
        ),
        json!(["success"])
    );
    page.screenshot_full_page("agent-thread");
    assert_readable(&page);

    // Another step selected: its node marked instead.
    page.click(&format!("#step-{tools} a.select"));
    page.wait_for(&format!(
        "document.querySelector('#graph')?.dataset.seq === '{tools}'"
    ));
    assert_eq!(page.eval_json(ACTIVE_NODES), json!(["tools"]));
    assert!(
        page.text("#graph")
            .contains(&format!("Step {tools} ran tools"))
    );

    // A run started elsewhere: its steps and its status show here live.
    page.wait_for_within(
        "document.querySelector('#live')?.dataset.state === 'open'",
        LIVE,
    );
    page.eval_json("window.samePage = true");
    run_and_wait(*addr, thread, "more").await;
    page.wait_for_within(
        "[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.status).join() === 'success,success'",
        LIVE,
    );
    let head = setup.store.thread_info(thread).await.unwrap().seq;
    page.wait_for_within(&format!("!!document.querySelector('#step-{head}')"), LIVE);
    assert_eq!(page.eval_json("window.samePage === true"), json!(true));
    assert_eq!(page.count("#run-form"), 0, "read-only: no run form");
    page.assert_no_js_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_form_streams_a_run_into_the_page() {
    let setup = AgentSetup::new(true).await;
    let AgentSetup {
        browser,
        addr,
        thread,
        store,
        ..
    } = &setup;
    let page = browser.open(&format!("http://{addr}/inspect/{thread}"));
    page.wait_for_within(
        "document.querySelector('#live')?.dataset.state === 'open'",
        LIVE,
    );
    page.eval_json("window.samePage = true");

    // Not JSON: said at once, nothing sent.
    page.fill("#run-input", "{\"messages\": [");
    page.click("#run-form button");
    page.wait_for("document.querySelector('#run-status').dataset.state === 'error'");
    assert!(page.text("#run-status").contains("The input is not JSON"));

    // A run: its events as they come, then how it ended and its state.
    page.fill(
        "#run-input",
        r#"{"messages": [{"role": "user", "content": "from the page"}]}"#,
    );
    page.click("#run-form button");
    page.wait_for_within(
        "document.querySelector('#run-status')?.dataset.status === 'success'",
        LIVE,
    );
    let events = page.eval_json(
        "[...document.querySelectorAll('#run-events li.run-event')].map(li => li.dataset.event)",
    );
    let events: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"values") && events.contains(&"updates"),
        "{events:?}"
    );
    assert!(page.text("#run-status").contains("The run ended: success"));
    let last = page.text("#run-events li.run-final");
    assert!(last.contains("echo:from the page"), "{last}");
    // The page moved on with it: the new run listed, the new steps shown.
    page.wait_for_within(
        "document.querySelectorAll('#runs tbody tr').length === 2",
        LIVE,
    );
    assert_eq!(
        page.eval_json("document.querySelector('#runs tbody tr').dataset.status"),
        json!("success")
    );
    let head = store.thread_info(thread).await.unwrap().seq;
    page.wait_for_within(&format!("!!document.querySelector('#step-{head}')"), LIVE);
    assert_eq!(page.eval_json("window.samePage === true"), json!(true));
    page.screenshot_full_page("run-form");

    // The server's refusal (422: no such assistant) is shown.
    page.eval_json("document.querySelector('#run-assistant option').value = 'nobody'");
    page.click("#run-form button");
    page.wait_for("document.querySelector('#run-status').dataset.state === 'error'");
    let said = page.text("#run-status");
    assert!(
        said.contains("(422)") && said.contains("Invalid assistant: 'nobody'"),
        "{said}"
    );
    // The 422 is a console error of the fetch; nothing else.
    for error in page.js_errors() {
        assert!(error.contains("422"), "{error}");
    }

    // From the thread list: a run on a new thread, then a link to it.
    page.goto(&format!("http://{addr}/"));
    page.fill(
        "#run-input",
        r#"{"messages": [{"role": "user", "content": "new"}]}"#,
    );
    page.click("#run-form button");
    page.wait_for_within(
        "document.querySelector('#run-status')?.dataset.status === 'success'",
        LIVE,
    );
    page.expect_navigation(|page| page.click("#run-events li.run-thread a"));
    assert!(page.url().contains("/inspect/"), "{}", page.url());
    assert_eq!(page.count("#graph svg"), 1);
    assert!(page.text("#timeline").contains("echo:new"));
}
