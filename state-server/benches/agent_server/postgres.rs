//! The Agent Server bench's PostgreSQL mode (issue 34: "on PostgreSQL,
//! with nodes that wait 50 ms (a model call), two worker processes serve
//! at least 1.8x the runs per second of one").
//!
//! A throwaway cluster (state-store's `tests/it/support/postgres.rs`,
//! fsync on), and per round a fresh database with, all of them this
//! binary run again:
//! - one **API process** (`pg-api:<url>`, `Server::workers(0)`): the
//!   routes only, it creates runs and waits on them;
//! - N **worker processes** (`pg-worker:<url>`, `Server::workers(AT_ONCE)`
//!   then `start_workers`, no routes), N = 1, then 2.
//!
//! The graph is the tool loop (agent → tools → agent), each node first
//! waiting [`NODE_WAIT`] on a tokio timer, as a model call would: a run
//! spends 150 ms in its nodes, so a worker process running `AT_ONCE` runs
//! at once serves at most `AT_ONCE / 150 ms` runs/s (27 for 4). The load
//! is the main one (each client: `POST /threads`, then `runs/wait`) with
//! twice as many clients (16) as both processes' slots (2 × 4): runs
//! always wait in the queue, so the worker processes' slots are the limit
//! in both rounds, not the clients, and the ratio says how well a second
//! process adds its slots. 4 at once, not 8: a run costs ~21 ms of CPU
//! (API, worker, PostgreSQL), so two processes of 8 would need ~2.2 cores
//! at their slots' pace, more than this 2-core machine has: the CPU, not
//! the slots, would be measured (BENCHMARKS.md section 16).
//! `AGENT_BENCH_PG_AT_ONCE` and `AGENT_BENCH_PG_CLIENTS` change the two
//! numbers.
//!
//! The rounds alternate, 1 then 2 worker processes, `AGENT_BENCH_PG_PAIRS`
//! times (3): on a machine shared with other jobs a burst of theirs can
//! slow one round, and the ratio of the pairs' totals (each pair's ratio
//! printed too) is less at its mercy than one pair's.
//!
//! Where the time goes: each process tree's CPU (API, workers, the
//! PostgreSQL server), the database's commits and rows written per run
//! (`pg_stat_database`), and with `AGENT_BENCH_PG_STATEMENTS=1` the
//! statements that took the server's time (`pg_stat_statements`, loaded
//! by a restart of the cluster).

use super::{
    Load, Served, cpu_seconds, load, load_average, load_json, ms, pg_cluster, ready, root, rss_mib,
    server, spawn_ours, start_ours,
};
use reqwest::Client;
use serde_json::json;
use state_store::Store;
use std::time::Duration;

/// What each of the tool loop's nodes waits before it answers.
pub const NODE_WAIT: Duration = Duration::from_millis(50);
/// How many node waits a run of the tool loop holds (agent, tools, agent).
const WAITS_PER_RUN: u32 = 3;

/// A worker process's body: runs the runs of the database at `url` until
/// `gone` (its standard input closed), then stops gracefully.
pub async fn worker(url: &str, gone: tokio::task::JoinHandle<()>) {
    let store = Store::postgres(url)
        .await
        .expect("the worker's PostgreSQL store");
    let workers = server(store, Some(NODE_WAIT)).start_workers();
    println!("working");
    let _ = gone.await;
    workers.shutdown(Duration::from_secs(5)).await;
}

/// One round: N worker processes under the load.
struct Round {
    /// Which pair of rounds (1 then 2 processes) it belongs to.
    pair: usize,
    processes: usize,
    load: Load,
    workers_cpu: f64,
    postgres_cpu: f64,
    workers_rss: f64,
    /// `pg_stat_database`'s counters over the load, by name.
    database: Vec<(String, f64)>,
    /// The statements that took the most of the server's time, with
    /// `AGENT_BENCH_PG_STATEMENTS=1`: calls, total ms, text.
    statements: Vec<(f64, f64, String)>,
}

/// `pg_stat_database`'s counters this bench reports per run.
const DATABASE_COUNTERS: [&str; 5] = [
    "xact_commit",
    "xact_rollback",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
];

/// The database `name`'s [`DATABASE_COUNTERS`] now.
fn database_counters(cluster: &pg_cluster::TempPostgres, name: &str) -> Vec<(String, f64)> {
    let row = cluster.psql(
        "postgres",
        &format!(
            "SELECT {} FROM pg_stat_database WHERE datname = '{name}'",
            DATABASE_COUNTERS.join(", ")
        ),
    );
    DATABASE_COUNTERS
        .iter()
        .zip(row.split('|'))
        .map(|(counter, value)| ((*counter).to_owned(), value.trim().parse().unwrap_or(0.0)))
        .collect()
}

/// The 12 statements of database `name` that took the most time since
/// the last reset: calls, total ms, the statement's first 100 characters.
fn top_statements(cluster: &pg_cluster::TempPostgres, name: &str) -> Vec<(f64, f64, String)> {
    let rows = cluster.psql(
        name,
        "SELECT calls, round(total_exec_time::numeric, 1), \
         left(regexp_replace(query, '\\s+', ' ', 'g'), 100) FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         ORDER BY total_exec_time DESC LIMIT 12",
    );
    rows.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '|');
            let calls = fields.next()?.parse().ok()?;
            let total = fields.next()?.parse().ok()?;
            Some((calls, total, fields.next()?.to_owned()))
        })
        .collect()
}

/// `name`'s value as a number, else `default`.
fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// The postmaster's pid (the first line of `postmaster.pid`): its
/// backends are its children, so [`cpu_seconds`] of it is the server's.
fn postmaster(cluster: &pg_cluster::TempPostgres) -> u32 {
    let file = cluster.data_dir().join("postmaster.pid");
    std::fs::read_to_string(&file)
        .ok()
        .and_then(|text| text.lines().next()?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {}", file.display()))
}

/// A worker process on the database at `url`, `at_once` runs at once.
fn start_worker(url: &str, at_once: usize, index: usize) -> Served {
    let (child, line) = spawn_ours(&format!("pg-worker:{url}"), Some(at_once));
    assert_eq!(
        line.trim(),
        "working",
        "worker process {index} said {line:?}"
    );
    Served {
        name: format!("worker process {index}"),
        base: String::new(),
        child,
    }
}

/// The rounds with 1, then 2 worker processes; prints their table and
/// ratio and writes `target/agent-server-bench-postgres.json`.
pub async fn run(time: Duration) {
    let at_once = env_usize("AGENT_BENCH_PG_AT_ONCE", 4);
    let clients = env_usize("AGENT_BENCH_PG_CLIENTS", 16);
    let pairs = env_usize("AGENT_BENCH_PG_PAIRS", 3);
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load_start = load_average();
    println!(
        "postgres workers: {clients} clients, {at_once} runs at once per worker process, \
         each node waiting {} ms, {} s a load; {cores} cores, load average at start {load_start}",
        NODE_WAIT.as_millis(),
        time.as_secs()
    );
    let cluster = pg_cluster::TempPostgres::start();
    let statements = std::env::var("AGENT_BENCH_PG_STATEMENTS").as_deref() == Ok("1");
    if statements {
        cluster.psql(
            "postgres",
            "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'",
        );
        cluster.restart();
    }
    let pg = postmaster(&cluster);
    let client = Client::builder()
        .pool_max_idle_per_host(128)
        .timeout(Duration::from_secs(120))
        .build()
        .expect("an HTTP client");
    let mut rounds = Vec::new();
    let rounds_planned = (0..pairs).flat_map(|pair| [(pair, 1), (pair, 2)]);
    for (pair, processes) in rounds_planned {
        // A fresh database a round: a round does not start with the
        // previous one's rows.
        let db = cluster.fresh_database(&format!("agent_bench_{pair}_{processes}"));
        // The API process first: it creates the tables before the workers
        // connect.
        let api = start_ours(
            "ours, PostgreSQL API process",
            &format!("pg-api:{}", db.url),
            Some(0),
        );
        let workers: Vec<Served> = (0..processes)
            .map(|i| start_worker(&db.url, at_once, i))
            .collect();
        ready(&api, &client).await;
        println!("postgres workers: pair {pair}, {processes} worker process(es): load ...");
        let _warm = load(&api, &client, clients, Duration::from_secs(3)).await;
        if statements {
            cluster.psql(
                &db.name,
                "CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
            );
            cluster.psql(&db.name, "SELECT pg_stat_statements_reset()");
        }
        let counters0 = database_counters(&cluster, &db.name);
        let workers_cpu0: f64 = workers.iter().map(|w| cpu_seconds(w.child.id())).sum();
        let pg_cpu0 = cpu_seconds(pg);
        let l = load(&api, &client, clients, time).await;
        // The backends report their counters within a second or so.
        let database = database_counters(&cluster, &db.name)
            .into_iter()
            .zip(counters0)
            .map(|((name, after), (_, before))| (name, after - before))
            .collect();
        let workers_cpu = workers
            .iter()
            .map(|w| cpu_seconds(w.child.id()))
            .sum::<f64>()
            - workers_cpu0;
        let postgres_cpu = cpu_seconds(pg) - pg_cpu0;
        rounds.push(Round {
            pair,
            processes,
            workers_rss: workers.iter().map(|w| rss_mib(w.child.id())).sum(),
            load: l,
            workers_cpu,
            postgres_cpu,
            database,
            statements: if statements {
                top_statements(&cluster, &db.name)
            } else {
                Vec::new()
            },
        });
        drop(workers);
        drop(api);
    }
    let load_end = load_average();
    report(&rounds, clients, at_once, cores, time);
    let ratio = ratio(&rounds);
    println!("load average at start {load_start}, at end {load_end}");
    let out = root().join("target/agent-server-bench-postgres.json");
    let json = json!({
        "clients": clients, "runs_at_once_per_worker_process": at_once,
        "node_wait_ms": NODE_WAIT.as_millis() as u64, "cores": cores,
        "load_average": {"start": load_start, "end": load_end},
        "ratio_two_to_one": ratio,
        "pair_ratios": (0..pairs).map(|p| pair_ratio(&rounds, p)).collect::<Vec<_>>(),
        "rounds": rounds.iter().map(|r| json!({
            "pair": r.pair, "worker_processes": r.processes, "load": load_json(&r.load),
            "ideal_runs_per_s": ideal(r.processes, at_once),
            "api_cpu_s": r.load.server_cpu, "workers_cpu_s": r.workers_cpu,
            "postgres_cpu_s": r.postgres_cpu, "workers_rss_after_mib": r.workers_rss,
            "pg_stat_database": r.database.iter().map(|(k, v)| (k.clone(), json!(v)))
                .collect::<serde_json::Map<_, _>>(),
            "top_statements": r.statements.iter()
                .map(|(calls, ms, text)| json!({"calls": calls, "total_ms": ms, "query": text}))
                .collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    match std::fs::write(
        &out,
        serde_json::to_string_pretty(&json).unwrap_or_default(),
    ) {
        Ok(()) => println!("wrote {}", out.display()),
        Err(e) => println!("could not write {}: {e}", out.display()),
    }
}

/// The runs/s of `processes` worker processes' slots if runs took only
/// their nodes' waits.
fn ideal(processes: usize, at_once: usize) -> f64 {
    (processes * at_once) as f64 / (NODE_WAIT * WAITS_PER_RUN).as_secs_f64()
}

/// The runs/s of the rounds with `processes` worker processes, over all
/// of them (total runs over total time).
fn rate(rounds: &[&Round], processes: usize) -> Option<f64> {
    let of: Vec<&Load> = rounds
        .iter()
        .filter(|r| r.processes == processes)
        .map(|r| &r.load)
        .collect();
    let seconds: f64 = of.iter().map(|l| l.seconds).sum();
    (seconds > 0.0).then(|| of.iter().map(|l| l.runs).sum::<usize>() as f64 / seconds)
}

/// Two worker processes' runs/s over one's, over all the pairs.
fn ratio(rounds: &[Round]) -> Option<f64> {
    let all: Vec<&Round> = rounds.iter().collect();
    Some(rate(&all, 2)? / rate(&all, 1)?)
}

/// Two worker processes' runs/s over one's in pair `pair`.
fn pair_ratio(rounds: &[Round], pair: usize) -> Option<f64> {
    let of: Vec<&Round> = rounds.iter().filter(|r| r.pair == pair).collect();
    Some(rate(&of, 2)? / rate(&of, 1)?)
}

fn report(rounds: &[Round], clients: usize, at_once: usize, cores: usize, time: Duration) {
    println!();
    println!(
        "postgres workers: {clients} clients, POST /threads + runs/wait (tool loop, nodes \
         waiting {} ms), {at_once} runs at once per worker process, {} s",
        NODE_WAIT.as_millis(),
        time.as_secs()
    );
    println!(
        "pair | worker processes | runs | runs/s | ideal runs/s | a slot's time a run | run p50 | \
         CPU per run: API | workers | PostgreSQL | client | CPU busy (of {cores} cores) | \
         workers' RSS | errors"
    );
    for r in rounds {
        let l = &r.load;
        let per_run = |cpu: f64| format!("{:.2} ms", cpu * 1000.0 / l.runs.max(1) as f64);
        let busy = (l.server_cpu + r.workers_cpu + r.postgres_cpu + l.client_cpu) / l.seconds;
        // How long each run held a worker's slot (all slots busy): its
        // nodes' 150 ms, plus the claim, the commits and the waits on
        // the CPU.
        let slot = (r.processes * at_once) as f64 / l.runs_per_s().max(f64::MIN_POSITIVE);
        println!(
            "{} | {} | {} | {:.1} | {:.1} | {:.0} ms | {} | {} | {} | {} | {} | {busy:.2} | {:.1} MiB | {}",
            r.pair,
            r.processes,
            l.runs,
            l.runs_per_s(),
            ideal(r.processes, at_once),
            slot * 1000.0,
            ms(l.latency_p50),
            per_run(l.server_cpu),
            per_run(r.workers_cpu),
            per_run(r.postgres_cpu),
            per_run(l.client_cpu),
            r.workers_rss,
            match &l.first_error {
                Some(e) => format!("{} errors, first: {e}", l.errors),
                None => "0 errors".into(),
            }
        );
    }
    println!("per run in the database (pg_stat_database over the load)");
    for r in rounds {
        let runs = r.load.runs.max(1) as f64;
        let counters: Vec<String> = r
            .database
            .iter()
            .map(|(name, n)| format!("{name} {:.1}", n / runs))
            .collect();
        println!("{} | {} | {}", r.pair, r.processes, counters.join(" | "));
    }
    for r in rounds.iter().filter(|r| !r.statements.is_empty()) {
        let runs = r.load.runs.max(1) as f64;
        println!(
            "statements, pair {}, {} worker process(es): calls a run | ms a run | mean ms | statement",
            r.pair, r.processes
        );
        for (calls, total, text) in &r.statements {
            println!(
                "{:.1} | {:.2} | {:.3} | {text}",
                calls / runs,
                total / runs,
                total / calls.max(1.0)
            );
        }
    }
    let pairs: Vec<String> = (0..=rounds.iter().map(|r| r.pair).max().unwrap_or(0))
        .filter_map(|p| pair_ratio(rounds, p))
        .map(|r| format!("{r:.2}x"))
        .collect();
    if let Some(ratio) = ratio(rounds) {
        println!(
            "two worker processes / one: {ratio:.2}x runs/s over all pairs (each pair: {}; \
             issue 34's target: 1.8x or more)",
            pairs.join(", ")
        );
    }
}
