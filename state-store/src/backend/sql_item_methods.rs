//! The item methods of the SQL backends: `sql_items!` stamps them out for
//! each driver, beside `sql_backend!`'s (in `sql.rs`, where the backend's
//! struct and its `queue` are), running the statements of `sql_items.rs`.

/// Binds `args` in order to a sqlx query (or `query_as`).
macro_rules! bind_args {
    ($query:expr, $args:expr) => {{
        let mut query = $query;
        for arg in $args {
            query = match arg {
                $crate::backend::sql_items::Arg::Text(text) => query.bind(text),
                $crate::backend::sql_items::Arg::Real(real) => query.bind(real),
                $crate::backend::sql_items::Arg::Int(int) => query.bind(int),
            };
        }
        query
    }};
}

/// The item methods of a SQL backend (see `sql_backend!` for `$write`,
/// `$read`), expanded where the backend's struct is defined.
macro_rules! sql_items {
    ($name:ident, $db:ty, write = $write:expr, read = $read:expr, dialect = $dialect:expr) => {
        impl $name {
            pub async fn put_item(
                &self,
                write: &$crate::backend::items::ItemWrite<'_>,
            ) -> Result<(), StoreError> {
                use $crate::backend::sql_items::{DELETE_VECTORS, UPSERT_VECTORS};
                use $crate::items::shown_text as shown;
                let _queued = self.queue().await;
                let context = || {
                    format!(
                        "storing item {:?} in namespace {}",
                        write.key,
                        shown(write.prefix)
                    )
                };
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                sqlx::query($dialect.upsert_item())
                    .bind(write.prefix)
                    .bind(write.key)
                    .bind(write.value)
                    .bind(write.now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let vectors = match write.vectors {
                    Some(vectors) => sqlx::query(UPSERT_VECTORS)
                        .bind(write.prefix)
                        .bind(write.key)
                        .bind(vectors.dims)
                        .bind(vectors.bytes),
                    None => sqlx::query(DELETE_VECTORS)
                        .bind(write.prefix)
                        .bind(write.key),
                };
                vectors
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                tx.commit().await.map_err(db_error(context()))
            }

            pub async fn get_item(
                &self,
                prefix: &str,
                key: &str,
            ) -> Result<Option<$crate::backend::items::ItemRow>, StoreError> {
                let row: Option<(String, String, String, i64, i64)> =
                    sqlx::query_as($dialect.select_item())
                        .bind(prefix)
                        .bind(key)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error(format!(
                            "reading item {key:?} in namespace {}",
                            $crate::items::shown_text(prefix)
                        )))?
                        .pop();
                Ok(row.map(|(prefix, key, value, created_at, updated_at)| {
                    $crate::backend::items::ItemRow {
                        prefix,
                        key,
                        value,
                        created_at,
                        updated_at,
                    }
                }))
            }

            pub async fn delete_item(&self, prefix: &str, key: &str) -> Result<bool, StoreError> {
                use $crate::backend::sql_items::{DELETE_ITEM, DELETE_VECTORS};
                use $crate::items::shown_text as shown;
                let _queued = self.queue().await;
                let context = || format!("deleting item {key:?} in namespace {}", shown(prefix));
                let mut tx = self.write_tx().await.map_err(db_error(context()))?;
                sqlx::query(DELETE_VECTORS)
                    .bind(prefix)
                    .bind(key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let deleted = sqlx::query(DELETE_ITEM)
                    .bind(prefix)
                    .bind(key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error(context()))?
                    .rows_affected();
                tx.commit().await.map_err(db_error(context()))?;
                Ok(deleted > 0)
            }

            pub async fn scan_items(
                &self,
                scan: $crate::backend::items::ItemScan<'_>,
                first_page: usize,
                visit: &mut $crate::backend::items::Visit<'_>,
            ) -> Result<(), StoreError> {
                use futures::TryStreamExt;
                use $crate::backend::items::Flow;
                use $crate::backend::sql_items::{Sql, page_query};
                let context = || scan_context(scan);
                // One snapshot for both queries: a search sees each item once.
                let mut tx = begin_read(&self.pool, $read)
                    .await
                    .map_err(db_error(context()))?;
                // What the search asked for, sorted by the database (top N).
                let page = first_page.max(1);
                let Sql { text, args } = page_query($dialect, scan, None, Some(page));
                let rows = bind_args!(sqlx::query(&text), args)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_error(context()))?;
                let mut after = None;
                for row in &rows {
                    let row = scanned_row(row, false).map_err(db_error(context()))?;
                    if visit(row)? == Flow::Enough {
                        after = None;
                        break;
                    }
                    after = Some((row.updated_at, row.prefix.to_owned(), row.key.to_owned()));
                }
                // The filter refused some: the rest, sorted once and read
                // as a stream until the visitor has enough.
                if let Some(after) = after.filter(|_| rows.len() == page) {
                    let Sql { text, args } = page_query($dialect, scan, Some(&after), None);
                    let mut rest = bind_args!(sqlx::query(&text), args).fetch(&mut *tx);
                    while let Some(row) = rest.try_next().await.map_err(db_error(context()))? {
                        let row = scanned_row(&row, false).map_err(db_error(context()))?;
                        if visit(row)? == Flow::Enough {
                            break;
                        }
                    }
                }
                tx.commit().await.map_err(db_error(context()))
            }

            pub async fn scan_vectors(
                &self,
                scan: $crate::backend::items::ItemScan<'_>,
                visit: &mut $crate::backend::items::Visit<'_>,
            ) -> Result<(), StoreError> {
                use futures::TryStreamExt;
                use $crate::backend::items::Flow;
                use $crate::backend::sql_items::{Sql, vector_query};
                let context = || scan_context(scan);
                let mut tx = begin_read(&self.pool, $read)
                    .await
                    .map_err(db_error(context()))?;
                {
                    let Sql { text, args } = vector_query($dialect, scan);
                    // Streamed: one row's vectors in memory at a time.
                    let mut rows = bind_args!(sqlx::query(&text), args).fetch(&mut *tx);
                    while let Some(row) = rows.try_next().await.map_err(db_error(context()))? {
                        let row = scanned_row(&row, true).map_err(db_error(context()))?;
                        if visit(row)? == Flow::Enough {
                            break;
                        }
                    }
                }
                tx.commit().await.map_err(db_error(context()))
            }

            pub async fn item_namespaces(
                &self,
                prefix: Option<&$crate::backend::items::PrefixRange>,
            ) -> Result<Vec<String>, StoreError> {
                use $crate::backend::sql_items::{Sql, namespaces_query};
                use $crate::items::shown_text as shown;
                let Sql { text, args } = namespaces_query(prefix);
                let rows: Vec<(String,)> = bind_args!(sqlx::query_as(&text), args)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error(format!(
                        "listing the namespaces under {}",
                        shown(prefix.map_or("", |p| p.exact.as_str()))
                    )))?;
                Ok(rows.into_iter().map(|(prefix,)| prefix).collect())
            }
        }

        /// A row of a scan (`page_query`'s or `vector_query`'s columns),
        /// borrowed from the driver's row: its text and vectors are not
        /// copied.
        fn scanned_row(
            row: &<$db as sqlx::Database>::Row,
            with_vectors: bool,
        ) -> Result<$crate::backend::items::ScannedItem<'_>, sqlx::Error> {
            use sqlx::Row;
            let vectors = if with_vectors {
                match (
                    row.try_get::<Option<i64>, _>(5)?,
                    row.try_get::<Option<&[u8]>, _>(6)?,
                ) {
                    (Some(dims), Some(bytes)) => {
                        Some($crate::backend::items::Vectors { dims, bytes })
                    }
                    _ => None,
                }
            } else {
                None
            };
            Ok($crate::backend::items::ScannedItem {
                prefix: row.try_get(0)?,
                key: row.try_get(1)?,
                value: row.try_get(2)?,
                created_at: row.try_get(3)?,
                updated_at: row.try_get(4)?,
                vectors,
            })
        }

        /// What a scan was doing, for its errors.
        fn scan_context(scan: $crate::backend::items::ItemScan<'_>) -> String {
            format!(
                "searching the items under {}",
                $crate::items::shown_text(scan.prefix.map_or("", |p| p.exact.as_str()))
            )
        }
    };
}
