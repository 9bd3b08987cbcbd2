//! The inspector on a long thread (BENCHMARKS.md section 10, issue 28):
//! how long a page takes to arrive, over real HTTP on loopback, from a
//! SQLite file whose thread has 10,000 steps, each adding one message (so
//! its state holds 10,000 messages).
//!
//! - `thread_page/latest`: `GET /inspect/big`, what opening the thread
//!   loads: the last 50 steps, the state after the last one (10,000
//!   messages, of which the page shows the last 50) and the state before it
//!   (for the difference).
//! - `thread_page/first_step`: `GET /inspect/big?seq=1`: the window at the
//!   start, the states after steps 1 and 0.
//! - `thread_list/1000_threads`: `GET /` on a second file with 1,000
//!   threads of one step: the first page (100 threads).
//! - `whole_history_json` (the baseline, same file, same run): the whole
//!   history as `GET /threads/big/history`, ten pages of 1,000 steps: what
//!   a page that showed every step would have to read first.
//!
//! Each request is one new connection (`Connection: close`), the body read
//! whole. SQLite files in a temporary directory (`STATE_SERVER_BENCH_DIR`
//! picks its parent), WAL, `synchronous = FULL`, default snapshot policy.
//!
//! Run: `cargo bench -p state-server --bench inspector` (writing the
//! 10,000 steps takes a minute or so first). Without `--bench` (under
//! `cargo test --all-targets`) each benchmark runs once on a thread of 300
//! steps.

// The tests' helpers, of which this bench uses part.
#[allow(dead_code)]
#[path = "../tests/it/support/mod.rs"]
mod support;

use criterion::Criterion;
use state_core::{Message, State};
use state_store::Store;
use std::net::SocketAddr;
use std::time::Duration;
use support::desk::Desk;
use support::{get, serve};

/// A thread of `steps` steps, one message each, in a SQLite file under
/// `dir`.
async fn long_thread(dir: &std::path::Path, steps: u64) -> Store {
    let store = Store::sqlite(dir.join("long.db")).await.expect("open");
    let mut thread = store.thread::<Desk>("big").await.expect("thread");
    for k in 1..=steps {
        let message = if k % 2 == 1 {
            Message::human(format!("question {k}: where is the nearest station?"))
        } else {
            Message::ai(format!("answer {k}: two blocks north, then left."))
        };
        thread
            .apply(Desk::delta().messages(vec![message.with_id(format!("m{k}"))]))
            .await
            .expect("apply");
    }
    store
}

/// 1,000 threads of one step each, in another SQLite file.
async fn many_threads(dir: &std::path::Path, threads: u64) -> Store {
    let store = Store::sqlite(dir.join("many.db")).await.expect("open");
    for k in 0..threads {
        let mut thread = store
            .thread::<Desk>(&format!("user-{k:04}"))
            .await
            .expect("thread");
        thread
            .apply(Desk::delta().title(format!("conversation {k}")))
            .await
            .expect("apply");
    }
    store
}

/// `GET target`: a 200, its body's length.
async fn fetch(addr: SocketAddr, target: &str) -> usize {
    let response = get(addr, target).await;
    assert_eq!(response.status, 200, "{target}");
    response.body.len()
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let (steps, threads) = if full { (10_000, 1_000) } else { (300, 50) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = match std::env::var_os("STATE_SERVER_BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base),
        None => tempfile::tempdir(),
    }
    .expect("a temporary directory");

    let (long, many) = runtime.block_on(async {
        let long = long_thread(dir.path(), steps).await;
        let many = many_threads(dir.path(), threads).await;
        let long = serve(state_server::router::<Desk>(long)).await;
        let many = serve(state_server::router::<Desk>(many)).await;
        (long, many)
    });
    let bytes = runtime.block_on(fetch(long, "/inspect/big"));
    println!("GET /inspect/big on {steps} steps: {bytes} bytes");

    let mut criterion = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    let mut group = criterion.benchmark_group("inspector");
    group.bench_function("thread_page/latest", |b| {
        b.iter(|| runtime.block_on(fetch(long, "/inspect/big")));
    });
    group.bench_function("thread_page/first_step", |b| {
        b.iter(|| runtime.block_on(fetch(long, "/inspect/big?seq=1")));
    });
    group.bench_function("thread_list/1000_threads", |b| {
        b.iter(|| runtime.block_on(fetch(many, "/")));
    });
    group.bench_function("whole_history_json", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut after = 0;
                let mut total = 0;
                while after < steps {
                    total += fetch(
                        long,
                        &format!("/threads/big/history?after={after}&limit=1000"),
                    )
                    .await;
                    after += 1000;
                }
                total
            })
        });
    });
    group.finish();
    criterion.final_summary();
}
