//! PostgreSQL: other sessions' commits, heard through `LISTEN`.
//!
//! Every commit that changes a thread's log sends `NOTIFY` on
//! [`NOTIFY_CHANNEL`] from inside its transaction (`backend/sql.rs`), so
//! it is delivered only if it commits, with `{"thread": id, "seq": head}`.
//! A pump holds one listening connection per store while the store has
//! watchers, on a pool of its own (the store's pool keeps all its
//! connections), and announces what it hears.
//!
//! Notifications sent while the connection is down are lost, not replayed:
//! each time the pump starts listening (again), it wakes every watcher,
//! which reads its thread's log from its last step. Whatever committed
//! before the `LISTEN` is in that read; whatever commits after it is
//! announced.

use super::hub::{Hub, unless_stopped};
use crate::backend::NOTIFY_CHANNEL;
use serde::Deserialize;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::oneshot;

/// First and longest wait between attempts to listen again.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// A notification's payload.
#[derive(Deserialize)]
struct Notice {
    thread: String,
    seq: u64,
    /// Sent by a rewind: the head went back to `seq`.
    #[serde(default)]
    rewound: bool,
}

/// The hub of a PostgreSQL store: while it has watchers, it listens.
pub(crate) fn hub_for(pool: &sqlx::PgPool) -> Arc<Hub> {
    let options = pool.connect_options();
    Hub::hearing_others(
        "PostgreSQL LISTEN",
        Box::new(move |hub, stopped| Box::pin(pump(hub, Arc::clone(&options), stopped))),
        crate::runs::postgres_listener(pool),
    )
}

/// Listens until stopped (the store's last watcher left) or the hub is gone.
async fn pump(hub: Weak<Hub>, options: Arc<PgConnectOptions>, mut stopped: oneshot::Receiver<()>) {
    let mut retry = RETRY_FIRST;
    loop {
        let mut listener = match unless_stopped(&mut stopped, listen(&options)).await {
            None => return,
            Some(Ok(listener)) => listener,
            Some(Err(_)) => {
                // The server is down or refuses: try again, a bit later
                // each time.
                if unless_stopped(&mut stopped, tokio::time::sleep(retry))
                    .await
                    .is_none()
                {
                    return;
                }
                retry = (retry * 2).min(RETRY_MAX);
                continue;
            }
        };
        retry = RETRY_FIRST;
        if !wake_all(&hub) {
            return;
        }
        loop {
            match unless_stopped(&mut stopped, listener.try_recv()).await {
                None => return,
                Some(Ok(Some(notification))) => {
                    let Some(hub) = hub.upgrade() else {
                        return;
                    };
                    // Anything else on the channel is not ours.
                    if let Ok(notice) = serde_json::from_str::<Notice>(notification.payload()) {
                        match notice.rewound {
                            true => hub.rewound(&notice.thread, notice.seq),
                            false => hub.announce(&notice.thread, notice.seq),
                        }
                    }
                }
                // The connection was lost, and the listener connected and
                // listens again: notifications may have been missed.
                Some(Ok(None)) => {
                    if !wake_all(&hub) {
                        return;
                    }
                }
                // Lost, and could not listen again: start over.
                Some(Err(_)) => break,
            }
        }
    }
}

/// A connection listening on the channel, on a pool of its own.
async fn listen(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .max_lifetime(None)
        .idle_timeout(None)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy_with(options.clone());
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(NOTIFY_CHANNEL).await?;
    Ok(listener)
}

/// Wakes every watcher; false when the hub is gone.
fn wake_all(hub: &Weak<Hub>) -> bool {
    match hub.upgrade() {
        Some(hub) => {
            hub.wake_all();
            true
        }
        None => false,
    }
}
