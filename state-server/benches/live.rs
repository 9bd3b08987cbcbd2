//! Live threads (BENCHMARKS.md section 9): from a step's commit to its
//! server-sent event on another connection, through `Store::watch` and
//! `GET /threads/{id}/stream` served over real HTTP on loopback.
//!
//! - **Latency, in-process.** A `Thread` on the same `Store` the server
//!   serves commits a step every `GAP` and records the `Instant` its
//!   `apply` returned (a map seq → instant); a subscriber connected over
//!   HTTP records the `Instant` each event (`id:` = the step's seq) is
//!   whole in its buffer. Latency = arrival − commit return, one
//!   monotonic clock. Memory, SQLite, PostgreSQL.
//! - **Latency, across processes.** The writer is this binary run again
//!   (`LIVE_CHILD` set) with its own `Store` on the same SQLite file or
//!   PostgreSQL database; it prints `seq micros` per step, the
//!   `SystemTime` (since the Unix epoch) its `apply` returned, and the
//!   subscriber in the parent records `SystemTime` at arrival: both
//!   processes read the same machine clock.
//! - **Throughput.** 50 subscribers on one thread, one writer committing
//!   `N` steps back to back: events delivered per second (50 N over the
//!   time from the first commit to the last event at the last
//!   subscriber), and the writer's steps per second with the 50
//!   subscribers and, on a fresh thread of the same store, with none.
//!   Memory and SQLite.
//! - **Memory per idle subscriber.** `VmRSS` of this process before and
//!   after opening `IDLE` SSE connections to a thread with no new steps
//!   (each has read its one backlog event, so its watcher is live),
//!   divided by `IDLE`; it includes both ends of each connection (the
//!   server's hyper connection, handler, stream and watcher, and the
//!   bench's client: a socket and two small buffers), not the kernel's
//!   socket buffers (not in RSS).
//!
//! Run: `cargo bench -p state-server --bench live` (~25 s; starts
//! its own PostgreSQL, as the tests do). Without `--bench` (under
//! `cargo test --all-targets`) it makes a smoke run of every part with a
//! few steps and prints the same table.

// The tests' helpers, of which this bench uses part.
#[allow(dead_code)]
#[path = "../tests/it/support/mod.rs"]
mod support;

use state_store::Store;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::backends::TestStore;
use support::{Notes, serve, step, stream};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Set in the writer child: `sqlite` or `postgres`.
const CHILD_ENV: &str = "LIVE_CHILD";
/// The child's SQLite file or PostgreSQL URL.
const CHILD_LOCATION: &str = "LIVE_CHILD_LOCATION";
/// Steps the child writes, and the gap between them in microseconds.
const CHILD_STEPS: &str = "LIVE_CHILD_STEPS";
const CHILD_GAP: &str = "LIVE_CHILD_GAP_US";

/// The sizes of one run: full (`--bench`) or smoke (test mode).
struct Sizes {
    latency_steps: u64,
    cross_steps: u64,
    gap: Duration,
    subscribers: usize,
    burst: u64,
    idle: usize,
}

const FULL: Sizes = Sizes {
    latency_steps: 400,
    cross_steps: 300,
    gap: Duration::from_millis(5),
    subscribers: 50,
    burst: 500,
    idle: 200,
};

const SMOKE: Sizes = Sizes {
    latency_steps: 10,
    cross_steps: 10,
    gap: Duration::from_millis(5),
    subscribers: 5,
    burst: 20,
    idle: 10,
};

fn main() {
    if let Ok(kind) = std::env::var(CHILD_ENV) {
        return child_writer(&kind);
    }
    let full = std::env::args().any(|arg| arg == "--bench");
    let sizes = if full { &FULL } else { &SMOKE };
    let runtime = runtime();
    println!(
        "live: {} run, load average at start {}",
        if full { "full" } else { "smoke" },
        load_average()
    );
    runtime.block_on(run(sizes));
    println!("load average at end {}", load_average());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

async fn run(sizes: &Sizes) {
    let mut rows = Vec::new();
    for name in ["memory", "sqlite", "postgres"] {
        let ts = test_store(name).await;
        let lat = in_process(&ts, sizes.latency_steps, sizes.gap).await;
        rows.push((format!("in-process, {name}"), lat));
    }
    for name in ["sqlite", "postgres"] {
        let ts = test_store(name).await;
        let lat = across_processes(&ts, sizes.cross_steps, sizes.gap * 2).await;
        rows.push((format!("across processes, {name}"), lat));
    }
    println!();
    println!(
        "commit -> SSE event | steps | median | p99 | max | min (in-process: {} ms gap; across: {} ms)",
        sizes.gap.as_millis(),
        (sizes.gap * 2).as_millis()
    );
    for (label, lat) in &rows {
        println!(
            "{label} | {} | {} | {} | {} | {}",
            lat.n,
            ms(lat.median),
            ms(lat.p99),
            ms(lat.max),
            ms(lat.min)
        );
    }

    println!();
    println!(
        "throughput: {} subscribers, {} steps back to back | events/s delivered | writer steps/s with them | writer steps/s alone | last event after last commit",
        sizes.subscribers, sizes.burst
    );
    for name in ["memory", "sqlite"] {
        let ts = test_store(name).await;
        let t = throughput(&ts, sizes.subscribers, sizes.burst).await;
        println!(
            "{name} | {:.0} | {:.0} | {:.0} | {}",
            t.events_per_s,
            t.writer_with,
            t.writer_alone,
            ms(t.drain.as_secs_f64() * 1e6)
        );
    }

    println!();
    println!(
        "memory per idle subscriber ({} connections) | RSS before | RSS after | per subscriber",
        sizes.idle
    );
    for name in ["memory", "sqlite"] {
        let ts = test_store(name).await;
        let (before, after) = idle_memory(&ts, sizes.idle).await;
        println!(
            "{name} | {} kB | {} kB | {:.1} kB",
            before,
            after,
            (after as f64 - before as f64) / sizes.idle as f64
        );
    }
}

async fn test_store(name: &str) -> TestStore {
    match name {
        "memory" => TestStore::memory(),
        "sqlite" => TestStore::sqlite().await,
        _ => TestStore::postgres().await,
    }
}

/// Latencies in microseconds, summarized.
struct Latency {
    n: usize,
    median: f64,
    p99: f64,
    max: f64,
    min: f64,
}

fn summarize(mut micros: Vec<f64>) -> Latency {
    assert!(!micros.is_empty(), "no latency measured");
    micros.sort_by(f64::total_cmp);
    let n = micros.len();
    let p99 = (n * 99).div_ceil(100).max(1) - 1;
    Latency {
        n,
        median: micros[n / 2],
        p99: micros[p99],
        max: micros[n - 1],
        min: micros[0],
    }
}

fn ms(micros: f64) -> String {
    format!("{:.2} ms", micros / 1000.0)
}

/// One writer task and one HTTP subscriber in this process.
async fn in_process(ts: &TestStore, steps: u64, gap: Duration) -> Latency {
    let store = ts.store.clone();
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    let mut thread = store.thread::<Notes>("live").await.expect("open thread");
    thread.apply(step(0)).await.expect("apply");
    let mut events = stream(addr, "/threads/live/stream").await;
    assert_eq!(events.next_event().await.seq(), 1);

    let committed: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let reader = tokio::spawn(async move {
        let mut arrived = Vec::with_capacity(steps as usize);
        while (arrived.len() as u64) < steps {
            let event = events.next_event().await;
            arrived.push((event.seq(), Instant::now()));
        }
        arrived
    });
    let writer = {
        let committed = committed.clone();
        tokio::spawn(async move {
            for k in 1..=steps {
                let seq = thread.apply(step(k)).await.expect("apply");
                let at = Instant::now();
                committed.lock().unwrap().insert(seq, at);
                tokio::time::sleep(gap).await;
            }
        })
    };
    writer.await.expect("writer");
    let arrived = reader.await.expect("reader");
    let committed = committed.lock().unwrap();
    summarize(
        arrived
            .iter()
            .map(|(seq, at)| {
                let commit = committed[seq];
                // Signed: an event may beat `apply`'s return to the clock.
                if *at >= commit {
                    at.duration_since(commit).as_secs_f64() * 1e6
                } else {
                    -(commit.duration_since(*at).as_secs_f64() * 1e6)
                }
            })
            .collect(),
    )
}

fn epoch_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as u64
}

/// The writer in another process (this binary again), the subscriber here.
async fn across_processes(ts: &TestStore, steps: u64, gap: Duration) -> Latency {
    let store = ts.store.clone();
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    let mut thread = store.thread::<Notes>("live").await.expect("open thread");
    thread.apply(step(0)).await.expect("apply");
    drop(thread);
    let mut events = stream(addr, "/threads/live/stream").await;
    assert_eq!(events.next_event().await.seq(), 1);

    let reader = tokio::spawn(async move {
        let mut arrived = Vec::with_capacity(steps as usize);
        while (arrived.len() as u64) < steps {
            let event = events.next_event().await;
            arrived.push((event.seq(), epoch_micros()));
        }
        arrived
    });
    let mut child = tokio::process::Command::new(std::env::current_exe().expect("this binary"))
        .env(CHILD_ENV, ts.name)
        .env(CHILD_LOCATION, &ts.location)
        .env(CHILD_STEPS, steps.to_string())
        .env(CHILD_GAP, gap.as_micros().to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the writer process");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut committed = HashMap::new();
    while let Some(line) = lines.next_line().await.expect("read the writer") {
        let (seq, micros) = line.split_once(' ').expect("`seq micros`");
        committed.insert(
            seq.parse::<u64>().expect("a seq"),
            micros.parse::<u64>().expect("micros"),
        );
    }
    assert!(child.wait().await.expect("the writer").success());
    assert_eq!(committed.len() as u64, steps, "the writer's steps");
    let arrived = reader.await.expect("reader");
    summarize(
        arrived
            .iter()
            .map(|(seq, at)| *at as f64 - committed[seq] as f64)
            .collect(),
    )
}

/// The writer process: appends `LIVE_CHILD_STEPS` steps to thread `live`,
/// printing `seq micros` as each `apply` returns.
fn child_writer(kind: &str) {
    let location = std::env::var(CHILD_LOCATION).expect("LIVE_CHILD_LOCATION");
    let steps: u64 = std::env::var(CHILD_STEPS).unwrap().parse().unwrap();
    let gap = Duration::from_micros(std::env::var(CHILD_GAP).unwrap().parse().unwrap());
    runtime().block_on(async {
        let store = match kind {
            "sqlite" => Store::sqlite(PathBuf::from(&location)).await,
            _ => Store::postgres(&location).await,
        }
        .expect("open the store");
        let mut thread = store.thread::<Notes>("live").await.expect("open thread");
        // Let the parent's subscriber settle after the connection.
        tokio::time::sleep(Duration::from_millis(100)).await;
        for k in 1..=steps {
            let seq = thread.apply(step(k)).await.expect("apply");
            let at = epoch_micros();
            println!("{seq} {at}");
            tokio::time::sleep(gap).await;
        }
    });
}

struct Throughput {
    events_per_s: f64,
    writer_with: f64,
    writer_alone: f64,
    /// From the last commit's return to the last event at the last
    /// subscriber.
    drain: Duration,
}

async fn burst(store: &Store, id: &str, steps: u64) -> (Instant, Instant) {
    let mut thread = store.thread::<Notes>(id).await.expect("open thread");
    let start = Instant::now();
    for k in 1..=steps {
        thread.apply(step(k)).await.expect("apply");
    }
    (start, Instant::now())
}

async fn throughput(ts: &TestStore, subscribers: usize, steps: u64) -> Throughput {
    let store = ts.store.clone();
    let addr = serve(state_server::router::<Notes>(store.clone())).await;

    let (start, end) = burst(&store, "alone", steps).await;
    let writer_alone = steps as f64 / (end - start).as_secs_f64();

    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let mut events = stream(addr, "/threads/busy/stream").await;
        readers.push(tokio::spawn(async move {
            let mut seen = 0;
            while seen < steps {
                seen = events.next_event().await.seq();
            }
            Instant::now()
        }));
    }
    // Every subscriber's watcher is live before the first step: the
    // server's stream is polled once its head is sent, and the watcher
    // waits for the unknown thread (tests/stream.rs). A short pause makes
    // sure the handlers have run.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (start, end) = burst(&store, "busy", steps).await;
    let writer_with = steps as f64 / (end - start).as_secs_f64();
    let mut last = end;
    for reader in readers {
        last = last.max(reader.await.expect("reader"));
    }
    Throughput {
        events_per_s: (subscribers as u64 * steps) as f64 / (last - start).as_secs_f64(),
        writer_with,
        writer_alone,
        drain: last - end,
    }
}

/// `VmRSS` of this process, in kB.
fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

async fn idle_memory(ts: &TestStore, idle: usize) -> (u64, u64) {
    let store = ts.store.clone();
    let addr = serve(state_server::router::<Notes>(store.clone())).await;
    store
        .thread::<Notes>("quiet")
        .await
        .expect("open thread")
        .apply(step(1))
        .await
        .expect("apply");
    let open = |n: usize| async move {
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let mut events = stream(addr, "/threads/quiet/stream").await;
            assert_eq!(events.next_event().await.seq(), 1);
            streams.push(events);
        }
        streams
    };
    // Warm up: the allocator's arenas, the watcher's hub, the first
    // connection's one-time costs.
    let warm = open(idle / 10 + 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = rss_kb();
    let streams = open(idle).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = rss_kb();
    drop(streams);
    drop(warm);
    (before, after)
}
