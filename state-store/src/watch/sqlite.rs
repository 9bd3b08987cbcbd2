//! SQLite: other processes' commits, seen by polling.
//!
//! SQLite has no notifications between processes. `PRAGMA data_version`
//! on a connection changes when any other connection commits to the file,
//! and costs no read of a table: a pump polls it every [`POLL`]
//! while the store has watchers, and when it changed reads the heads (and
//! creation times) of the watched threads in one statement, announcing
//! those that moved. Its connection is its own: `data_version` is
//! per-connection.
//!
//! Stores opened on the same file in one process share one [`Hub`]: a
//! commit through any of them wakes the watchers of all at once, and one
//! pump serves them.

use super::hub::{Hub, unless_stopped};
use crate::backend::{data_version, watched_heads};
use crate::error::StoreError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, SqlitePool};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::oneshot;

/// How often a pump looks for other processes' commits: their steps reach
/// a watcher within this much time of their commit, plus the time to read
/// them (documented on `Store::watch`).
pub(crate) const POLL: Duration = Duration::from_millis(25);

/// The hubs of this process's SQLite files, by canonical path.
static HUBS: Mutex<Vec<(PathBuf, Weak<Hub>)>> = Mutex::new(Vec::new());

/// The hub of the database file behind `pool`: the one its other stores in
/// this process use, or a new one. An in-memory database (no file) gets a
/// hub of its own, with no pump: only this pool can write to it.
pub(crate) async fn hub_for(pool: &SqlitePool) -> Arc<Hub> {
    let Some(file) = crate::backend::database_file(pool).await else {
        return Hub::local();
    };
    let path = std::fs::canonicalize(&file).unwrap_or_else(|_| PathBuf::from(file));
    let mut hubs = HUBS.lock().unwrap_or_else(|e| e.into_inner());
    hubs.retain(|(_, hub)| hub.strong_count() > 0);
    if let Some(hub) = hubs
        .iter()
        .find(|(known, _)| *known == path)
        .and_then(|(_, hub)| hub.upgrade())
    {
        return hub;
    }
    let options = pool.connect_options();
    let hub = Hub::hearing_others(
        "SQLite data_version",
        Box::new(move |hub, stopped| Box::pin(pump(hub, Arc::clone(&options), stopped))),
        crate::runs::RunHub::default(),
    );
    hubs.push((path, Arc::downgrade(&hub)));
    hub
}

/// Polls until stopped (the store's last watcher left) or the hub is gone.
async fn pump(
    hub: Weak<Hub>,
    options: Arc<SqliteConnectOptions>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut poll = Poll {
        options,
        conn: None,
        version: None,
        seen: HashMap::new(),
    };
    loop {
        let Some(strong) = hub.upgrade() else {
            return;
        };
        match unless_stopped(&mut stopped, poll.once(&strong)).await {
            None => return,
            // A failed poll starts over on a new connection next time.
            Some(Err(_)) => {
                poll.conn = None;
                poll.version = None;
            }
            Some(Ok(())) => {}
        }
        drop(strong);
        if unless_stopped(&mut stopped, tokio::time::sleep(POLL))
            .await
            .is_none()
        {
            return;
        }
    }
}

struct Poll {
    options: Arc<SqliteConnectOptions>,
    conn: Option<SqliteConnection>,
    /// `data_version` at the last complete poll (`None`: read the heads).
    version: Option<i64>,
    /// Head, creation time and rewind count of each watched thread that
    /// existed, at the last complete poll.
    seen: HashMap<String, (u64, i64, i64)>,
}

impl Poll {
    async fn once(&mut self, hub: &Hub) -> Result<(), StoreError> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self.conn.insert(
                self.options
                    .connect()
                    .await
                    .map_err(|e| StoreError::backend("opening the watch connection", e))?,
            ),
        };
        let version = data_version(conn).await?;
        if self.version == Some(version) {
            return Ok(());
        }
        // Read after the version: a commit between the two is read now,
        // and changes the version for the next poll as well.
        let threads = hub.watched();
        let now: HashMap<String, (u64, i64, i64)> = watched_heads(conn, &threads)
            .await?
            .into_iter()
            .map(|(id, head, created_at, rewinds)| (id, (head, created_at, rewinds)))
            .collect();
        for id in &threads {
            match (self.seen.get(id), now.get(id)) {
                (Some(before), Some(after)) if before == after => {}
                // Rewound (maybe grown back past where it was): its
                // watchers read again, whatever the head.
                (Some(&(_, created, rewinds)), Some(&(head, created_at, now_rewinds)))
                    if created == created_at && rewinds != now_rewinds =>
                {
                    hub.rewound(id, head);
                }
                (before, Some(&(head, created_at, _))) => {
                    // Gone and back, or its head went back: deleted first.
                    if before.is_some_and(|&(old, created, _)| head < old || created != created_at)
                    {
                        hub.announce(id, 0);
                    }
                    hub.announce(id, head);
                }
                (Some(_), None) => hub.announce(id, 0),
                (None, None) => {}
            }
        }
        self.seen = now;
        self.version = Some(version);
        Ok(())
    }
}
