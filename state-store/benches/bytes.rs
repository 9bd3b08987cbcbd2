//! Bytes written per step, snapshots included, and time per step amortized
//! over a whole snapshot cycle (BENCHMARKS.md section 7). Criterion times
//! single steps; this measures what criterion cannot: storage.
//!
//! For each SQL backend and history size N: a thread is prefilled with N
//! messages in one step, then steps (one human message each, as
//! `store.rs`) are applied until the default `SnapshotPolicy` has written
//! a snapshot (the start of a cycle), and then measured until it writes
//! the next one. Over those K steps (the cycle: about 0.9 N steps, the
//! history growing from about N to about 1.9 N) it reports, per step:
//!
//! - logical bytes: the step bodies and metadata plus the one snapshot
//!   written, as stored (the JSON text, no row overhead), divided by K;
//! - SQLite: growth of the database file, the WAL checkpointed into it
//!   before and after (`wal_checkpoint(RESTART)`); and the bytes the
//!   process passed to `write`/`pwrite` (`wchar`: WAL frames, whole 4 KiB
//!   pages, and the checkpoints copying them into the file). The WAL is
//!   grown first (one 40,000-message step on another thread), as in a
//!   database that has run for a while: SQLite reuses its WAL file, while a
//!   fresh one grows with each commit, which makes each sync slower;
//! - PostgreSQL: growth of `pg_total_relation_size` of the store's tables
//!   (heap, indexes, TOAST; snapshots are TOAST-compressed), and the WAL
//!   the server wrote (`pg_current_wal_lsn` difference);
//! - time: mean (the snapshot included), median, and the slowest step
//!   (the one that wrote the snapshot).
//!
//! Run: `cargo bench -p state-store --bench bytes` (under a minute).
//! `STATE_STORE_BENCH_SIZES=100,1000,10000,100000` picks the sizes (the
//! 100,000 cycle is about 84,000 steps: about a minute per backend). Writes the
//! rows as JSON to `target/state-store-bytes.json` (or
//! `STATE_STORE_BYTES_JSON`), read by `benches/langgraph/saver_bench.py`.
//! Under `cargo test --all-targets` it runs N = 100 only and writes no file.

mod common;

use common::{BenchStore, Kind, benchmarking, next_number, prefill, step_delta, thousands};
use state_store::Thread;
use std::time::{Duration, Instant};

const DEFAULT_SIZES: [usize; 3] = [100, 1_000, 10_000];
/// Messages of a first step that grows SQLite's WAL past its automatic
/// checkpoint (1,000 pages): about 4.5 MB.
const WAL_WARM_UP: usize = 40_000;
/// Steps allowed to reach a snapshot, before and within the cycle.
const MAX_STEPS: u64 = 250_000;

struct Row {
    backend: &'static str,
    n: usize,
    /// Steps in the cycle.
    steps: u64,
    /// The cycle's first and last step (the last one wrote the snapshot).
    from: u64,
    to: u64,
    step_bytes: u64,
    snapshot_bytes: u64,
    storage_growth: i64,
    /// SQLite: bytes written by the process; PostgreSQL: WAL bytes.
    io_bytes: Option<u64>,
    total: Duration,
    median: Duration,
    max: Duration,
}

impl Row {
    fn per_step(&self, bytes: u64) -> f64 {
        bytes as f64 / self.steps as f64
    }

    fn json(&self) -> serde_json::Value {
        let k = self.steps as f64;
        serde_json::json!({
            "backend": self.backend,
            "n": self.n,
            "steps": self.steps,
            "from_seq": self.from,
            "to_seq": self.to,
            "step_bytes_per_step": self.step_bytes as f64 / k,
            "snapshot_bytes": self.snapshot_bytes,
            "logical_bytes_per_step": (self.step_bytes + self.snapshot_bytes) as f64 / k,
            "storage_growth_per_step": self.storage_growth as f64 / k,
            "io_bytes_per_step": self.io_bytes.map(|b| b as f64 / k),
            "io_kind": if self.backend == "sqlite" {
                "process wchar (WAL + checkpoints)"
            } else {
                "server WAL"
            },
            "mean_step_ns": self.total.as_nanos() as f64 / k,
            "median_step_ns": self.median.as_nanos() as u64,
            "max_step_ns": self.max.as_nanos() as u64,
        })
    }
}

fn main() {
    let sizes: Vec<usize> = if !benchmarking() {
        vec![100]
    } else if let Ok(list) = std::env::var("STATE_STORE_BENCH_SIZES") {
        list.split(',')
            .map(|s| s.trim().parse().expect("STATE_STORE_BENCH_SIZES: numbers"))
            .collect()
    } else {
        DEFAULT_SIZES.to_vec()
    };
    let rt = common::runtime();
    let _context = rt.enter();
    let mut rows = Vec::new();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        for &n in &sizes {
            let row = rt.block_on(cycle(kind, n));
            eprintln!(
                "{}/{n}: {} steps, {:.0} logical bytes/step, {:.1} µs/step",
                row.backend,
                row.steps,
                row.per_step(row.step_bytes + row.snapshot_bytes),
                row.total.as_secs_f64() * 1e6 / row.steps as f64
            );
            rows.push(row);
        }
    }
    print_table(&rows);
    if benchmarking() {
        write_json(&rows);
    }
}

/// One snapshot cycle at history size `n` on a fresh store.
async fn cycle(kind: Kind, n: usize) -> Row {
    let store = BenchStore::open(kind).await;
    let side = store.side().await.expect("a SQL backend");
    if kind == Kind::Sqlite {
        // Steady state: a WAL file grown to its checkpoint size and reused
        // (a fresh file grows with every commit, and a commit that grows
        // it syncs the file's size too).
        prefill(&store.store, "wal-warm-up", WAL_WARM_UP).await;
    }
    let id = format!("bytes-{n}-{}", next_number());
    let mut thread = prefill(&store.store, &id, n).await;
    // Up to the first snapshot (right after the prefill when N ≥ ~150).
    while side.latest_snapshot(&id).await != Some(thread.seq()) {
        step(&mut thread).await;
        assert!(
            thread.seq() < MAX_STEPS,
            "no snapshot after {MAX_STEPS} steps"
        );
    }
    let from = thread.seq();

    side.checkpoint().await;
    let storage_before = side.storage_bytes().await;
    let wal_before = side.wal_position().await;
    let wchar_before = common::process_wchar();

    let mut times = Vec::new();
    loop {
        times.push(step(&mut thread).await);
        if side.latest_snapshot(&id).await == Some(thread.seq()) {
            break;
        }
        assert!(
            thread.seq() < from + MAX_STEPS,
            "no snapshot after {MAX_STEPS} steps"
        );
    }
    let to = thread.seq();

    side.checkpoint().await;
    let io_bytes = match kind {
        Kind::Sqlite => match (wchar_before, common::process_wchar()) {
            (Some(before), Some(after)) => Some(after - before),
            _ => None,
        },
        _ => match (wal_before, side.wal_position().await) {
            (Some(before), Some(after)) => Some(after - before),
            _ => None,
        },
    };
    let storage_growth = side.storage_bytes().await as i64 - storage_before as i64;
    let step_bytes = side.step_bytes(&id, from + 1, to).await;
    let snapshot_bytes = side.snapshot_bytes(&id, to).await;
    let total = times.iter().sum();
    times.sort();
    Row {
        backend: kind.name(),
        n,
        steps: to - from,
        from,
        to,
        step_bytes,
        snapshot_bytes,
        storage_growth,
        io_bytes,
        total,
        median: times[times.len() / 2],
        max: *times.last().expect("at least one step"),
    }
}

/// One step: one human message. Returns the time of the apply alone.
async fn step(thread: &mut Thread<common::Chat>) -> Duration {
    let delta = step_delta();
    let start = Instant::now();
    thread.apply(delta).await.expect("append a step");
    start.elapsed()
}

fn print_table(rows: &[Row]) {
    println!();
    println!("Bytes and time per step over one snapshot cycle (default SnapshotPolicy)");
    println!(
        "{:<9} {:>7} {:>7} {:>10} {:>11} {:>10} {:>11} {:>12} {:>10} {:>9} {:>9}",
        "backend",
        "N",
        "steps",
        "step B",
        "snapshot B",
        "logical B",
        "storage B",
        "I/O B",
        "mean",
        "median",
        "max"
    );
    for row in rows {
        println!(
            "{:<9} {:>7} {:>7} {:>10.0} {:>11} {:>10.0} {:>11.0} {:>12} {:>10} {:>9} {:>9}",
            row.backend,
            thousands(row.n as u64),
            thousands(row.steps),
            row.per_step(row.step_bytes),
            thousands(row.snapshot_bytes),
            row.per_step(row.step_bytes + row.snapshot_bytes),
            row.storage_growth as f64 / row.steps as f64,
            row.io_bytes
                .map_or("-".to_owned(), |b| format!("{:.0}", row.per_step(b))),
            micros(row.total / row.steps as u32),
            micros(row.median),
            micros(row.max),
        );
    }
    println!(
        "step B: step body + metadata per step; logical B: that plus the cycle's snapshot, \
         per step;\nstorage B: SQLite database file growth (WAL checkpointed into it before and after), \
         PostgreSQL pg_total_relation_size growth, per step;\nI/O B: SQLite bytes written by \
         the process (WAL frames + checkpoints), PostgreSQL WAL bytes, per step;\nmean: time \
         per step, the snapshot included; max: the step that wrote the snapshot."
    );
}

fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn write_json(rows: &[Row]) {
    let path = std::env::var_os("STATE_STORE_BYTES_JSON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("the target directory")
                .join("state-store-bytes.json")
        });
    let rows: Vec<serde_json::Value> = rows.iter().map(Row::json).collect();
    let text = serde_json::to_string_pretty(&rows).expect("JSON");
    std::fs::write(&path, text + "\n").expect("write the byte counts");
    println!("wrote {}", path.display());
}
