//! The task that starts the crons' runs, in every process that runs
//! workers: it looks for the crons due (at most a second after they are,
//! or at their time when it is sooner), makes each one's run, and moves
//! the cron on to its next time.
//!
//! Two processes (or a process that died after making a run and before
//! moving its cron on) never make a tick's run twice: the run's id is made
//! from the cron and the tick, so the second creation finds it there, and
//! moving the cron on is a compare-and-set from that tick.

use super::cron_routes::{next_run, now_micros};
use super::cron_schedule::Schedule;
use super::run_routes::{Create, create_run_as};
use crate::routes::App;
use axum::http::StatusCode;
use state_store::CronRecord;
use std::future::Future;
use std::time::Duration;

/// The longest wait between two looks: a cron made by another process
/// is seen within it.
const POLL: Duration = Duration::from_secs(1);

/// How many due crons one look takes.
const BATCH: usize = 64;

/// Starts the due crons' runs until `stopped` completes.
pub(crate) async fn schedule(app: App, stopped: impl Future<Output = ()>) {
    tokio::pin!(stopped);
    loop {
        let wait = match look(&app).await {
            Some(next) => {
                let micros = next.saturating_sub(now_micros()).max(0);
                Duration::from_micros(u64::try_from(micros).unwrap_or(0)).min(POLL)
            }
            None => POLL,
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = &mut stopped => return,
        }
    }
}

/// Starts the runs of the crons due now; when the next is due. One read
/// when none is (a look a second in every worker process). (A store error
/// is left for the next look: the database may come back.)
async fn look(app: &App) -> Option<i64> {
    let now = now_micros();
    let next = app.store.next_cron_due().await.ok().flatten()?;
    if next > now {
        return Some(next);
    }
    if let Ok(due) = app.store.due_crons(now, BATCH).await {
        for cron in due {
            fire(app, cron, now).await;
        }
    }
    app.store.next_cron_due().await.ok().flatten()
}

/// Makes `cron`'s run for its tick (unless it was made already), then
/// moves the cron on to its next tick after `now` (missed ticks are not
/// made up, as LangGraph's). A cron whose thread is gone is deleted; one
/// whose assistant is gone, or whose schedule or request no longer reads,
/// is disabled (kept, for its owner to see and mend).
async fn fire(app: &App, cron: CronRecord, now: i64) {
    let Some(tick) = cron.next_run_at else {
        return;
    };
    let schedule = match Schedule::parse(&cron.schedule, cron.timezone.as_deref()) {
        Ok(schedule) => schedule,
        Err(_) => {
            disable(app, &cron).await;
            return;
        }
    };
    let create: Create = match serde_json::from_value(cron.payload.clone()) {
        Ok(create) => create,
        Err(_) => {
            disable(app, &cron).await;
            return;
        }
    };
    let run_id = uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_OID,
        format!("{}:{tick}", cron.cron_id).as_bytes(),
    )
    .to_string();
    let made = matches!(app.store.get_run(&run_id, None).await, Ok(Some(_)));
    if !made {
        let owner = cron.owner.as_deref();
        let created = match (&cron.thread_id, cron.on_run_completed.as_deref()) {
            (Some(thread), _) => create_run_as(app, Some(thread), create, owner, run_id).await,
            // Kept: a thread of its own, named after the run.
            (None, Some("keep")) => {
                let thread =
                    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, run_id.as_bytes()).to_string();
                create_run_as(app, Some(&thread), create.creating_thread(), owner, run_id).await
            }
            // The run's own thread, deleted as it ends.
            (None, _) => create_run_as(app, None, create, owner, run_id).await,
        };
        match created.map_err(|error| error.status()) {
            // Its thread gone (deleted): no run can ever be made.
            Err(StatusCode::NOT_FOUND) => {
                let _ = app.store.delete_cron(&cron.cron_id, None).await;
                return;
            }
            // Its assistant gone, or its request refused now: kept, off.
            Err(StatusCode::UNPROCESSABLE_ENTITY) => {
                disable(app, &cron).await;
                return;
            }
            // Anything else (the database, a busy thread refused by the
            // request's multitask strategy): this tick is skipped.
            _ => {}
        }
    }
    let next = next_run(&schedule, now.max(tick), cron.end_time);
    let _ = app.store.advance_cron(&cron.cron_id, tick, next).await;
}

/// Stops `cron` from firing (its stored schedule or request no longer
/// reads: a newer program wrote it, or the row was damaged).
async fn disable(app: &App, cron: &CronRecord) {
    let change = state_store::CronPatch::default().enabled(false);
    let _ = app.store.update_cron(&cron.cron_id, change, None).await;
}
