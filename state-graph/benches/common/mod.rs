//! What the runner's benches share (`runner.rs`, `agents.rs`): whether
//! criterion is benchmarking, the runtime, thread ids, and the scaling of
//! whole runs to supersteps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::runtime::Runtime;

/// Whether criterion runs us as a benchmark (`cargo bench` passes
/// `--bench`); otherwise (`cargo test --all-targets`) once each, small.
pub fn benchmarking() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// A tokio runtime for the benches: multi-threaded, as a server's (and as
/// state-store's benches).
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Numbers threads, unique in this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

pub fn thread_id(prefix: &str) -> String {
    format!("{prefix}-{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Criterion's iterations are supersteps: runs `iters / n` whole runs (at
/// least one), each timed by `run`, and reports their time scaled to
/// `iters` supersteps (the mean per superstep over the runs, times iters).
pub fn per_superstep(n: u64, iters: u64, mut run: impl FnMut() -> Duration) -> Duration {
    let runs = iters.div_ceil(n).max(1);
    let mut total = Duration::ZERO;
    for _ in 0..runs {
        total += run();
    }
    total.mul_f64(iters as f64 / (runs * n) as f64)
}
