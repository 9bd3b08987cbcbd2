//! A PostgreSQL connection dropped in the middle of a step, through a
//! loopback proxy that cuts the connection when the store sends `COMMIT`:
//! either before the server sees it (the step is rolled back: an error,
//! then a retry that succeeds) or after (the step is committed but the
//! answer is lost: the store finds its step and reports success). Either
//! way no step is lost or written twice.

use crate::support;
use crate::support::states::Chat;
use state_core::State;
use state_store::Store;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does at the next `COMMIT` it sees.
const PASS: u8 = 0;
/// Drop the connection before forwarding the `COMMIT`.
const CUT_BEFORE: u8 = 1;
/// Forward the `COMMIT`, then drop the connection before the answer.
const CUT_AFTER: u8 = 2;

/// A proxy from a loopback port to the PostgreSQL server, armed by `mode`.
async fn proxy(server_port: u16, mode: Arc<AtomicU8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = TcpStream::connect(("127.0.0.1", server_port))
                .await
                .unwrap();
            tokio::spawn(relay(client, server, mode.clone()));
        }
    });
    port
}

async fn relay(client: TcpStream, server: TcpStream, mode: Arc<AtomicU8>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let muted = Arc::new(AtomicU8::new(0));
    let muted_down = muted.clone();
    let down = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if muted_down.load(Ordering::SeqCst) == 1 {
                return; // the answer is lost
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let commit = chunk.windows(6).any(|w| w == b"COMMIT");
        if commit {
            match mode.swap(PASS, Ordering::SeqCst) {
                CUT_BEFORE => break,
                CUT_AFTER => {
                    muted.store(1, Ordering::SeqCst);
                    let _ = server_write.write_all(chunk).await;
                    // Let the server commit before the connection goes.
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    break;
                }
                _ => {}
            }
        }
        if server_write.write_all(chunk).await.is_err() {
            break;
        }
    }
    down.abort();
}

async fn store_through_proxy() -> (Store, Arc<AtomicU8>) {
    let cluster = support::postgres::shared();
    let db = cluster.fresh_database("faults");
    let mode = Arc::new(AtomicU8::new(PASS));
    let port = proxy(cluster.port(), mode.clone()).await;
    let url = db
        .url
        .replace(&format!(":{}/", cluster.port()), &format!(":{port}/"));
    assert_ne!(url, db.url, "the store connects through the proxy");
    (Store::postgres(&url).await.unwrap(), mode)
}

#[tokio::test]
async fn connection_dropped_before_commit_then_retry() {
    let (store, mode) = store_through_proxy().await;
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().transcript(vec!["one".to_string()]))
        .await
        .unwrap();

    mode.store(CUT_BEFORE, Ordering::SeqCst);
    let delta = || Chat::delta().transcript(vec!["two".to_string()]);
    let err = t.apply(delta()).await.unwrap_err();
    assert!(!err.is_conflict(), "{err}");
    assert!(
        err.to_string().contains("appending step 2 to thread \"t\""),
        "{err}"
    );
    assert_eq!(t.seq(), 1, "nothing applied");
    assert_eq!(t.state().transcript, ["one"]);

    // The retry goes through, once.
    assert_eq!(t.apply(delta()).await.unwrap(), 2);
    let history = store.history("t", ..).await.unwrap();
    assert_eq!(history.len(), 2);
    let again = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(again.state().transcript, ["one", "two"]);
}

#[tokio::test]
async fn connection_dropped_after_commit_is_resolved() {
    let (store, mode) = store_through_proxy().await;
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().transcript(vec!["one".to_string()]))
        .await
        .unwrap();

    mode.store(CUT_AFTER, Ordering::SeqCst);
    // The server committed; the answer was lost; the store looks the step
    // up on a new connection and finds it.
    let seq = t
        .apply(Chat::delta().transcript(vec!["two".to_string()]))
        .await
        .unwrap();
    assert_eq!(seq, 2);
    assert_eq!(mode.load(Ordering::SeqCst), PASS, "the cut happened");
    assert_eq!(t.state().transcript, ["one", "two"]);

    t.apply(Chat::delta().transcript(vec!["three".to_string()]))
        .await
        .unwrap();
    let history = store.history("t", ..).await.unwrap();
    assert_eq!(history.iter().map(|s| s.seq).collect::<Vec<_>>(), [1, 2, 3]);
    let again = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(again.state().transcript, ["one", "two", "three"]);
    assert_eq!(again.state(), t.state());
}

#[tokio::test]
async fn server_restart_between_steps() {
    // A cluster of its own: restarting the shared one would break the
    // tests running beside this one.
    let cluster = support::postgres::TempPostgres::start();
    let db = cluster.fresh_database("restart");
    let store = Store::postgres(&db.url).await.unwrap();
    let mut t = store.thread::<Chat>("t").await.unwrap();
    t.apply(Chat::delta().transcript(vec!["before".to_string()]))
        .await
        .unwrap();
    cluster.restart();
    // Pooled connections died with the server; the step either fails
    // cleanly or goes through on a fresh connection, never twice.
    let delta = || Chat::delta().transcript(vec!["after".to_string()]);
    if t.apply(delta()).await.is_err() {
        t.apply(delta()).await.unwrap();
    }
    let again = store.thread::<Chat>("t").await.unwrap();
    assert_eq!(again.state().transcript, ["before", "after"]);
    assert_eq!(again.seq(), 2);
}

/// Loads cut at every point of their `BEGIN` (a client that went away, a
/// `select!`) leave no pooled connection inside a transaction: with one
/// connection for the whole pool, each load after a cut one reads the
/// thread. (sqlx 0.8.6 counts a PostgreSQL transaction only once its
/// `BEGIN` answered, transact-rs/sqlx#4393: a load cut in between handed
/// its connection back mid-transaction, and the next one failed with "SET
/// TRANSACTION ISOLATION LEVEL must be called before any query".)
#[tokio::test]
async fn a_load_cut_mid_begin_leaves_no_transaction_open() {
    let cluster = support::postgres::shared();
    let db = cluster.fresh_database("cut_begin");
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&db.url)
        .await
        .unwrap();
    let store = Store::from_pg_pool(pool).await.unwrap();
    let mut thread = store.thread::<Chat>("t").await.unwrap();
    thread
        .apply(Chat::delta().transcript(vec!["one".to_string()]))
        .await
        .unwrap();
    for cut in 0..200u64 {
        let load = store.thread::<Chat>("t");
        let _ = tokio::time::timeout(Duration::from_micros(cut * 5), load).await;
        let again = store.thread::<Chat>("t").await;
        assert_eq!(
            again
                .map(|t| t.state().transcript.clone())
                .map_err(|e| e.to_string()),
            Ok(vec!["one".to_string()]),
            "after a load cut at {} us",
            cut * 5
        );
    }
}
