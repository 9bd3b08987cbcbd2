//! The run and thread-record methods of the SQL backends: `sql_runs!`
//! stamps them out for each driver beside `sql_backend!`'s (in `sql.rs`,
//! where the backend's struct and its `queue` are), running the
//! statements of `sql_runs.rs`. Every transition is one write transaction;
//! on PostgreSQL each also sends its `NOTIFY` from inside it, so a notice
//! is delivered only if the change committed.

/// The run methods of a SQL backend (see `sql_backend!` for `$write`):
/// `$claim` is the claim statement, `$run_state` and `$record` read a run's
/// state and a thread record (PostgreSQL: locking the row), `$notify`
/// whether to send `NOTIFY`, `$collate` how thread ids are ordered.
macro_rules! sql_runs {
    (
        $name:ident, $db:ty, write = $write:expr, claim = $claim:expr, run_state = $run_state:expr,
        record = $record:expr, notify = $notify:expr, collate = $collate:expr
    ) => {
        impl $name {
            /// Sends each notice on the runs channel (PostgreSQL only),
            /// inside the caller's transaction.
            async fn notify_runs(
                conn: &mut <$db as sqlx::Database>::Connection,
                notices: &[String],
            ) -> Result<(), sqlx::Error> {
                if $notify {
                    for notice in notices {
                        sqlx::query("SELECT pg_notify($1, $2)")
                            .bind($crate::backend::sql_runs::RUNS_CHANNEL)
                            .bind(notice)
                            .execute(&mut *conn)
                            .await?;
                    }
                }
                Ok(())
            }

            /// Appends `events` to the run `fence` holds, numbered after
            /// its last, with the events' notice: `None` when the fence no
            /// longer holds (nothing written). The fence and the numbers in
            /// one statement (`RESERVE_EVENTS`, `FENCED_LAST_EVENT`), then
            /// one `INSERT` per `EVENTS_PER_INSERT`.
            async fn insert_events<E: AsRef<str> + Sync>(
                conn: &mut <$db as sqlx::Database>::Connection,
                fence: $crate::backend::runs::Fence<'_>,
                events: &[(E, String)],
                now: i64,
            ) -> Result<Option<i64>, sqlx::Error> {
                use $crate::backend::sql_runs::*;
                let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
                // SQLite numbers on from the stored events (its writes are
                // one at a time); PostgreSQL reserves numbers in the run's
                // locked row.
                let last: Option<(i64,)> = if $notify {
                    sqlx::query_as(RESERVE_EVENTS)
                        .bind(fence.run_id)
                        .bind(fence.worker)
                        .bind(fence.attempt)
                        .bind(count)
                        .fetch_optional(&mut *conn)
                        .await?
                } else {
                    sqlx::query_as(FENCED_LAST_EVENT)
                        .bind(fence.run_id)
                        .bind(fence.worker)
                        .bind(fence.attempt)
                        .fetch_optional(&mut *conn)
                        .await?
                        .map(|(stored,): (i64,)| (stored + count,))
                };
                let Some((last,)) = last else {
                    return Ok(None);
                };
                let mut seq = last - count;
                for chunk in events.chunks(EVENTS_PER_INSERT) {
                    let sql = insert_events_sql(chunk.len());
                    let mut insert = sqlx::query(&sql);
                    for (event, data) in chunk {
                        seq += 1;
                        insert = insert
                            .bind(fence.run_id)
                            .bind(seq)
                            .bind(event.as_ref())
                            .bind(data.as_str())
                            .bind(now);
                    }
                    insert.execute(&mut *conn).await?;
                }
                if !events.is_empty() {
                    Self::notify_runs(&mut *conn, &[events_notice(fence.run_id)]).await?;
                }
                Ok(Some(last))
            }

            /// Deletes run `run_id` with its events (`DELETE_RUN`).
            async fn delete_run_rows(
                conn: &mut <$db as sqlx::Database>::Connection,
                run_id: &str,
            ) -> Result<(), sqlx::Error> {
                for statement in $crate::backend::sql_runs::DELETE_RUN {
                    sqlx::query(statement)
                        .bind(run_id)
                        .execute(&mut *conn)
                        .await?;
                }
                Ok(())
            }

            /// Thread `thread`'s status once a run on it ended
            /// (`SETTLE_THREAD`): busy while others are in flight, else
            /// `otherwise`.
            /// Whether runs are still in flight on the thread (`busy`;
            /// also when it has no record: not known).
            async fn settle_thread(
                conn: &mut <$db as sqlx::Database>::Connection,
                thread: &str,
                otherwise: &str,
                now: i64,
            ) -> Result<bool, sqlx::Error> {
                let status: Option<(String,)> =
                    sqlx::query_as($crate::backend::sql_runs::SETTLE_THREAD)
                        .bind(thread)
                        .bind(otherwise)
                        .bind(now)
                        .fetch_optional(&mut *conn)
                        .await?;
                Ok(status.is_none_or(|(status,)| status == "busy"))
            }

            /// Locks the thread record of run `run_id` (if any), before
            /// its run is locked: the order every transition keeps.
            async fn lock_run_thread(
                conn: &mut <$db as sqlx::Database>::Connection,
                run_id: &str,
            ) -> Result<(), sqlx::Error> {
                use $crate::backend::sql_runs::*;
                let thread: Option<(Option<String>,)> = sqlx::query_as(RUN_THREAD)
                    .bind(run_id)
                    .fetch_optional(&mut *conn)
                    .await?;
                if let Some((Some(thread),)) = thread {
                    let _: Option<RecordTuple> = sqlx::query_as($record)
                        .bind(thread)
                        .fetch_optional(&mut *conn)
                        .await?;
                }
                Ok(())
            }

            pub async fn create_run(
                &self,
                new: &$crate::backend::runs::NewRunRow<'_>,
            ) -> Result<$crate::backend::runs::Created, StoreError> {
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::create_run(hot, new).await;
                }
                use $crate::backend::runs::{Created, OnInflight};
                use $crate::backend::sql_runs::*;
                let _queued = self.queue().await;
                let run = &new.row;
                let context = || format!("creating run \"{}\"", run.run_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let mut touched = Vec::new();
                if let Some(thread) = run.thread_id.as_deref() {
                    if new.create_thread {
                        sqlx::query(INSERT_RECORD)
                            .bind(thread)
                            .bind("{}")
                            .bind("idle")
                            .bind(new.owner)
                            .bind(new.now)
                            .bind(new.now)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                    }
                    // Locked (PostgreSQL): creations on one thread take
                    // turns, so two `reject`s cannot both see it idle.
                    let record: Option<RecordTuple> = sqlx::query_as($record)
                        .bind(thread)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                    let record = match record {
                        Some(record) if new.owner.is_none() || record.3.as_deref() == new.owner => {
                            record
                        }
                        _ => return Ok(Created::NoThread),
                    };
                    if let Some(patch) = new.thread_metadata
                        && let Some(merged) =
                            $crate::backend::merged_metadata(thread, &record.1, patch)?
                    {
                        sqlx::query(UPDATE_RECORD_METADATA)
                            .bind(thread)
                            .bind(merged)
                            .bind(new.now)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                    }
                    let inflight: Vec<(String, String)> = sqlx::query_as(INFLIGHT_RUNS)
                        .bind(thread)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                    match new.on_inflight {
                        OnInflight::Enqueue => {}
                        OnInflight::Reject => {
                            if !inflight.is_empty() {
                                return Ok(Created::ThreadBusy);
                            }
                        }
                        OnInflight::Cancel(action) => {
                            for (id, status) in inflight {
                                if status == "pending" && action == "rollback" {
                                    Self::delete_run_rows(&mut *tx, &id)
                                        .await
                                        .map_err(db_error(context()))?;
                                } else if status == "pending" {
                                    sqlx::query(INTERRUPT_PENDING)
                                        .bind(&id)
                                        .bind(new.now)
                                        .execute(&mut *tx)
                                        .await
                                        .map_err(db_error(context()))?;
                                } else {
                                    sqlx::query(REQUEST_CANCEL)
                                        .bind(&id)
                                        .bind(action)
                                        .bind(new.now)
                                        .execute(&mut *tx)
                                        .await
                                        .map_err(db_error(context()))?;
                                }
                                touched.push(id);
                            }
                        }
                    }
                    sqlx::query(SET_THREAD_STATUS)
                        .bind(thread)
                        .bind("busy")
                        .bind(new.now)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                    // The thread's log too, for the run's graph: opening it
                    // then only reads (one write a run less).
                    sqlx::query(OPEN_THREAD)
                        .bind(thread)
                        .bind(new.now / 1000)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                }
                let inserted = sqlx::query(INSERT_RUN)
                    .bind(&run.run_id)
                    .bind(run.thread_id.as_deref())
                    .bind(&run.assistant_id)
                    .bind(&run.status)
                    .bind(&run.metadata)
                    .bind(&run.kwargs)
                    .bind(&run.multitask_strategy)
                    .bind(run.attempt)
                    .bind(run.available_at)
                    .bind(run.created_at)
                    .bind(run.updated_at)
                    .bind(run.owner.as_deref())
                    .bind(run.cancel_action.as_deref())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                if inserted != 1 {
                    // Dropped: rolled back, the strategy's changes too.
                    return Ok(Created::Exists);
                }
                let mut notices = vec![notice(Some(&run.run_id), true)];
                notices.extend(touched.iter().map(|id| notice(Some(id), true)));
                Self::notify_runs(&mut *tx, &notices)
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Created::Run {
                    row: Box::new(run.clone()),
                    touched,
                    claimed: None,
                })
            }

            pub async fn claim_run(
                &self,
                worker: &str,
                now: i64,
                until: i64,
                events: $crate::backend::runs::ClaimEvents,
            ) -> Result<Option<($crate::backend::runs::RunRow, bool)>, StoreError> {
                use $crate::backend::sql_runs::*;
                let context = || format!("claiming a run for worker \"{worker}\"");
                // A SQLite file's own writer looks for what is due in the
                // claim's write (`sqlite_hot.rs`).
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::claim_run(
                        hot, worker, now, until, events,
                    )
                    .await;
                }
                // Whether others are due besides the one claimed: known
                // from the peek (SQLite), else assumed.
                let mut others_due = true;
                // SQLite in memory: nothing due, nothing written (a read of
                // the pool sees every committed run). PostgreSQL's claim is
                // one statement anyway.
                if !$notify {
                    let due = sqlx::query_as::<_, (String,)>(CLAIM_PEEK)
                        .bind(now)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error(context()))?
                        .len();
                    if due == 0 {
                        return Ok(None);
                    }
                    others_due = due > 1;
                }
                let _queued = self.queue().await;
                // PostgreSQL: two claimers may pick runs of one thread at
                // once; the unique index refuses the second, which tries
                // again and then sees the thread busy.
                for _ in 0..16 {
                    let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                    let row: Option<RunTuple> = match sqlx::query_as($claim)
                        .bind(worker)
                        .bind(now)
                        .bind(until)
                        .fetch_optional(&mut *tx)
                        .await
                    {
                        Ok(row) => row,
                        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => continue,
                        Err(e) => return Err(StoreError::backend(context(), e)),
                    };
                    let Some(row) = row else {
                        return Ok(None);
                    };
                    let row = run_row(row);
                    Self::notify_runs(&mut *tx, &[notice(Some(&row.run_id), false)])
                        .await
                        .map_err(db_error(context()))?;
                    let made = events(&row)?;
                    if !made.is_empty() {
                        let fence = $crate::backend::runs::Fence {
                            run_id: &row.run_id,
                            thread_id: row.thread_id.as_deref(),
                            worker,
                            attempt: row.attempt,
                        };
                        Self::insert_events(&mut *tx, fence, &made, now)
                            .await
                            .map_err(db_error(context()))?;
                    }
                    // SQLite (which sends no notices) has one writer at a
                    // time: the thread is marked in the claim's own
                    // transaction, one write instead of two.
                    if !$notify && let Some(thread) = row.thread_id.as_deref() {
                        sqlx::query(MARK_THREAD_BUSY)
                            .bind(thread)
                            .bind(now)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                    }
                    tx.commit().await.map_err(db_error(context()))?;
                    // PostgreSQL: after the commit, on its own: a claim
                    // holding its run never waits for a thread record (a
                    // creation holds the record and may wait for the run).
                    if $notify && let Some(thread) = row.thread_id.as_deref() {
                        let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                        sqlx::query(MARK_THREAD_BUSY)
                            .bind(thread)
                            .bind(now)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                        tx.commit().await.map_err(db_error(context()))?;
                    }
                    return Ok(Some((row, others_due)));
                }
                Ok(None)
            }

            pub async fn renew_run(
                &self,
                fence: $crate::backend::runs::Fence<'_>,
                now: i64,
                until: i64,
            ) -> Result<Option<Option<String>>, StoreError> {
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::renew_run(hot, fence, now, until)
                        .await;
                }
                let _queued = self.queue().await;
                let context = || format!("renewing the lease of run \"{}\"", fence.run_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let row: Option<(Option<String>,)> =
                    sqlx::query_as($crate::backend::sql_runs::RENEW_RUN)
                        .bind(fence.run_id)
                        .bind(fence.worker)
                        .bind(fence.attempt)
                        .bind(now)
                        .bind(until)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(row.map(|(cancel,)| cancel))
            }

            pub async fn finish_run(
                &self,
                fence: $crate::backend::runs::Fence<'_>,
                status: &str,
                thread_status: &str,
                now: i64,
                events: Vec<(&str, String)>,
            ) -> Result<Option<bool>, StoreError> {
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::finish_run(
                        hot,
                        fence,
                        status,
                        thread_status,
                        now,
                        events,
                    )
                    .await;
                }
                use $crate::backend::sql_runs::*;
                let _queued = self.queue().await;
                let context = || format!("finishing run \"{}\"", fence.run_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                // PostgreSQL: the record first, the order every transition
                // locks in (SQLite's write lock serializes them already).
                if $notify && let Some(thread) = fence.thread_id {
                    let _: Option<RecordTuple> = sqlx::query_as($record)
                        .bind(thread)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                }
                // The last events first, under the same fence: a lost
                // lease writes neither them nor the end.
                if !events.is_empty()
                    && Self::insert_events(&mut *tx, fence, &events, now)
                        .await
                        .map_err(db_error(context()))?
                        .is_none()
                {
                    return Ok(None);
                }
                let row: Option<(Option<String>,)> = sqlx::query_as(FINISH_RUN)
                    .bind(fence.run_id)
                    .bind(fence.worker)
                    .bind(fence.attempt)
                    .bind(status)
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some((thread,)) = row else {
                    return Ok(None);
                };
                let mut waiting = false;
                if let Some(thread) = thread {
                    waiting = Self::settle_thread(&mut *tx, &thread, thread_status, now)
                        .await
                        .map_err(db_error(context()))?;
                }
                Self::notify_runs(&mut *tx, &[notice(Some(fence.run_id), true)])
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Some(waiting))
            }

            pub async fn roll_back_run(
                &self,
                fence: $crate::backend::runs::Fence<'_>,
                thread_status: &str,
                now: i64,
                now_ms: i64,
            ) -> Result<$crate::backend::runs::RolledBack, StoreError> {
                use $crate::backend::Rewound;
                use $crate::backend::runs::RolledBack;
                use $crate::backend::sql_runs::*;
                let _queued = self.queue().await;
                let context = || format!("rolling back run \"{}\"", fence.run_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                // The record first, as every run transition locks it.
                if let Some(thread) = fence.thread_id {
                    let _: Option<RecordTuple> = sqlx::query_as($record)
                        .bind(thread)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_error(context()))?;
                }
                let base = if $notify {
                    FENCED_RUN_BASE_FOR_UPDATE
                } else {
                    FENCED_RUN_BASE
                };
                let row: Option<(Option<String>, Option<i64>)> = sqlx::query_as(base)
                    .bind(fence.run_id)
                    .bind(fence.worker)
                    .bind(fence.attempt)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some((thread, base_seq)) = row else {
                    return Ok(RolledBack::Lost);
                };
                let base_seq = u64::try_from(base_seq.unwrap_or(0)).unwrap_or(0);
                let steps = match &thread {
                    None => 0,
                    Some(thread) => match Self::rewind_in(&mut *tx, thread, base_seq, now_ms)
                        .await
                        .map_err(db_error(context()))?
                    {
                        Rewound::Done { steps } => steps,
                        // No log, or already before the base: nothing to undo.
                        Rewound::NoThread | Rewound::Ahead { .. } => 0,
                        refused @ Rewound::Unrebuildable { .. } => {
                            return Ok(RolledBack::Refused(refused));
                        }
                    },
                };
                Self::delete_run_rows(&mut *tx, fence.run_id)
                    .await
                    .map_err(db_error(context()))?;
                if let Some(thread) = &thread {
                    Self::settle_thread(&mut *tx, &thread, thread_status, now)
                        .await
                        .map_err(db_error(context()))?;
                }
                Self::notify_runs(&mut *tx, &[notice(Some(fence.run_id), true)])
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(RolledBack::Done {
                    thread,
                    base_seq,
                    steps,
                })
            }

            pub async fn release_run(
                &self,
                fence: $crate::backend::runs::Fence<'_>,
                now: i64,
            ) -> Result<bool, StoreError> {
                use $crate::backend::sql_runs::*;
                let _queued = self.queue().await;
                let context = || format!("releasing run \"{}\"", fence.run_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let released = sqlx::query(RELEASE_RUN)
                    .bind(fence.run_id)
                    .bind(fence.worker)
                    .bind(fence.attempt)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                if released != 1 {
                    return Ok(false);
                }
                Self::notify_runs(&mut *tx, &[notice(Some(fence.run_id), true)])
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(true)
            }

            pub async fn get_run(
                &self,
                run_id: &str,
            ) -> Result<Option<$crate::backend::runs::RunRow>, StoreError> {
                use $crate::backend::sql_runs::*;
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::get_run(hot, run_id);
                }
                // Read whole (`fetch_all`), as every read of the pool: a
                // statement left at a row would keep its pooled connection
                // on an old snapshot of the database (sqlx resets it only at
                // its next use).
                let row: Option<RunTuple> = sqlx::query_as(SELECT_RUN)
                    .bind(run_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading run \"{run_id}\"")))?
                    .pop();
                Ok(row.map(run_row))
            }

            pub async fn list_runs(
                &self,
                scan: $crate::backend::runs::RunScan<'_>,
            ) -> Result<Vec<$crate::backend::runs::RunRow>, StoreError> {
                use $crate::backend::sql_runs::*;
                let statement = match scan.thread_id {
                    Some(_) => LIST_THREAD_RUNS,
                    None => LIST_STATELESS_RUNS,
                };
                let rows: Vec<RunTuple> = sqlx::query_as(statement)
                    .bind(scan.thread_id.unwrap_or(""))
                    .bind(scan.status)
                    .bind(scan.owner)
                    .bind(i64::try_from(scan.limit).unwrap_or(i64::MAX))
                    .bind(i64::try_from(scan.offset).unwrap_or(i64::MAX))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(match scan.thread_id {
                        Some(thread) => format!("listing the runs of thread \"{thread}\""),
                        None => "listing stateless runs".to_owned(),
                    }))?;
                Ok(rows.into_iter().map(run_row).collect())
            }

            pub async fn cancel_run(
                &self,
                run_id: &str,
                action: &'static str,
                owner: Option<&str>,
                now: i64,
            ) -> Result<$crate::backend::runs::Cancelled, StoreError> {
                use $crate::backend::runs::Cancelled;
                use $crate::backend::sql_runs::*;
                let _queued = self.queue().await;
                let context = || format!("cancelling run \"{run_id}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                Self::lock_run_thread(&mut *tx, run_id)
                    .await
                    .map_err(db_error(context()))?;
                let state: Option<(String, Option<String>)> = sqlx::query_as($run_state)
                    .bind(run_id)
                    .bind(owner)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some((status, thread)) = state else {
                    return Ok(Cancelled::NotFound);
                };
                match status.as_str() {
                    "pending" => {
                        if action == "rollback" {
                            Self::delete_run_rows(&mut *tx, run_id)
                                .await
                                .map_err(db_error(context()))?;
                        } else {
                            sqlx::query(INTERRUPT_PENDING)
                                .bind(run_id)
                                .bind(now)
                                .execute(&mut *tx)
                                .await
                                .map_err(db_error(context()))?;
                        }
                        if let Some(thread) = thread {
                            Self::settle_thread(&mut *tx, &thread, "idle", now)
                                .await
                                .map_err(db_error(context()))?;
                        }
                    }
                    "running" => {
                        sqlx::query(REQUEST_CANCEL)
                            .bind(run_id)
                            .bind(action)
                            .bind(now)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_error(context()))?;
                    }
                    _ => {}
                }
                let row: Option<RunTuple> = sqlx::query_as(SELECT_RUN)
                    .bind(run_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                Self::notify_runs(&mut *tx, &[notice(Some(run_id), true)])
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Cancelled::Done(row.map(|row| Box::new(run_row(row)))))
            }

            pub async fn delete_run(
                &self,
                run_id: &str,
                owner: Option<&str>,
                now: i64,
            ) -> Result<bool, StoreError> {
                use $crate::backend::sql_runs::*;
                let _queued = self.queue().await;
                let context = || format!("deleting run \"{run_id}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                Self::lock_run_thread(&mut *tx, run_id)
                    .await
                    .map_err(db_error(context()))?;
                let state: Option<(String, Option<String>)> = sqlx::query_as($run_state)
                    .bind(run_id)
                    .bind(owner)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some((status, thread)) = state else {
                    return Ok(false);
                };
                Self::delete_run_rows(&mut *tx, run_id)
                    .await
                    .map_err(db_error(context()))?;
                if let (true, Some(thread)) = (status == "pending" || status == "running", thread) {
                    Self::settle_thread(&mut *tx, &thread, "idle", now)
                        .await
                        .map_err(db_error(context()))?;
                }
                Self::notify_runs(&mut *tx, &[notice(Some(run_id), true)])
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(true)
            }

            pub async fn append_run_events(
                &self,
                fence: $crate::backend::runs::Fence<'_>,
                events: Vec<(&str, String)>,
                now: i64,
            ) -> Result<Option<u64>, StoreError> {
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::append_run_events(
                        hot, fence, events, now,
                    )
                    .await;
                }
                let _queued = self.queue().await;
                let context = || format!("appending events to run \"{}\"", fence.run_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let Some(last) = Self::insert_events(&mut *tx, fence, &events, now)
                    .await
                    .map_err(db_error(context()))?
                else {
                    return Ok(None);
                };
                let Ok(last_seq) = u64::try_from(last) else {
                    return Err(StoreError::CorruptRun {
                        what: format!("run \"{}\"", fence.run_id),
                        column: "last_seq",
                        detail: format!("negative sequence number {last}"),
                    });
                };
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Some(last_seq))
            }

            pub async fn run_events(
                &self,
                run_id: &str,
                after: u64,
                limit: usize,
            ) -> Result<Vec<(i64, String, String, i64)>, StoreError> {
                sqlx::query_as($crate::backend::sql_runs::SELECT_EVENTS)
                    .bind(run_id)
                    .bind(to_db(after))
                    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!(
                        "reading the events of run \"{run_id}\" after {after}"
                    )))
            }

            pub async fn prune_run_events(&self, before: i64) -> Result<u64, StoreError> {
                let _queued = self.queue().await;
                let context = || "pruning the events of ended runs".to_owned();
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let pruned = sqlx::query($crate::backend::sql_runs::PRUNE_EVENTS)
                    .bind(before)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(pruned)
            }

            pub async fn next_run_due(&self, now: i64) -> Result<Option<i64>, StoreError> {
                use $crate::backend::sql_runs::*;
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::next_run_due(hot, now);
                }
                let due: Option<(Option<i64>, Option<i64>)> = sqlx::query_as(NEXT_DUE)
                    .bind(now)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("reading when the next run is due".to_owned()))?
                    .pop();
                Ok(due.and_then(earliest_due))
            }

            pub async fn insert_thread_record(
                &self,
                row: &$crate::backend::runs::ThreadRecordRow,
            ) -> Result<bool, StoreError> {
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::insert_thread_record(hot, row)
                        .await;
                }
                let _queued = self.queue().await;
                let context = || format!("creating the record of thread \"{}\"", row.thread_id);
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let inserted = sqlx::query($crate::backend::sql_runs::INSERT_RECORD)
                    .bind(&row.thread_id)
                    .bind(&row.metadata)
                    .bind(&row.status)
                    .bind(row.owner.as_deref())
                    .bind(row.created_at)
                    .bind(row.updated_at)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(inserted == 1)
            }

            pub async fn thread_record(
                &self,
                id: &str,
            ) -> Result<Option<$crate::backend::runs::ThreadRecordRow>, StoreError> {
                use $crate::backend::sql_runs::*;
                if let Some(hot) = &self.hot {
                    return $crate::backend::hot_path::HotPath::thread_record(hot, id);
                }
                let row: Option<RecordTuple> = sqlx::query_as(SELECT_RECORD)
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!("reading the record of thread \"{id}\"")))?
                    .pop();
                Ok(row.map(record_row))
            }

            pub async fn update_thread_record(
                &self,
                id: &str,
                owner: Option<&str>,
                merge: &(dyn Fn(&str) -> Result<String, StoreError> + Send + Sync),
                now: i64,
            ) -> Result<Option<$crate::backend::runs::ThreadRecordRow>, StoreError> {
                use $crate::backend::sql_runs::*;
                let _queued = self.queue().await;
                let context = || format!("updating the record of thread \"{id}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let row: Option<RecordTuple> = sqlx::query_as($record)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let Some(mut row) = row.map(record_row) else {
                    return Ok(None);
                };
                if owner.is_some() && row.owner.as_deref() != owner {
                    return Ok(None);
                }
                row.metadata = merge(&row.metadata)?;
                row.updated_at = now;
                sqlx::query(UPDATE_RECORD_METADATA)
                    .bind(id)
                    .bind(&row.metadata)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))?;
                Ok(Some(row))
            }

            pub async fn set_thread_status(
                &self,
                id: &str,
                status: &str,
                now: i64,
            ) -> Result<bool, StoreError> {
                let _queued = self.queue().await;
                let context = || format!("setting the status of thread \"{id}\"");
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                let changed = sqlx::query($crate::backend::sql_runs::SET_THREAD_STATUS)
                    .bind(id)
                    .bind(status)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(changed == 1)
            }

            pub async fn thread_records(
                &self,
                scan: $crate::backend::runs::RecordScan<'_>,
            ) -> Result<Vec<$crate::backend::runs::ThreadRecordRow>, StoreError> {
                use $crate::backend::sql_runs::*;
                let sql = scan_records_sql(scan.order_by, scan.descending, $collate);
                let rows: Vec<RecordTuple> = sqlx::query_as(&sql)
                    .bind(scan.status)
                    .bind(scan.owner)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("searching thread records".to_owned()))?;
                Ok(rows.into_iter().map(record_row).collect())
            }
        }
    };
}
