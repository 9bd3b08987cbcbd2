//! The SQL of long-term memory items, for both SQL backends: their tables
//! (schema version 3) and their queries, which differ only where SQLite
//! and PostgreSQL read JSON differently ([`Dialect`]). `sql_items!` stamps
//! the methods out for each driver, beside `sql_backend!`'s.
//!
//! Every value is bound as a parameter. A namespace prefix is a range of
//! texts ([`PrefixRange`]), never a LIKE pattern: no label character is a
//! wildcard.

use super::items::{Cmp, ItemScan, PrefixRange, Pushed};

/// SQLite's item tables. Items are a `WITHOUT ROWID` table (rows are
/// small and always found by their key: a put writes one b-tree, not
/// two); vectors, a kilobyte or more per item, an ordinary one.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) const SQLITE_ITEM_TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS state_store_items (
        prefix TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (prefix, key)
    ) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS state_store_item_vectors (
        prefix TEXT NOT NULL,
        key TEXT NOT NULL,
        dims BIGINT NOT NULL,
        vectors BLOB NOT NULL,
        PRIMARY KEY (prefix, key)
    )",
];

/// PostgreSQL's. Namespace and key compare bytewise (`COLLATE "C"`), as in
/// SQLite and in Rust, so prefix ranges and the order of results are the
/// same on every backend. The value is `json`: checked when written, kept
/// as written (so it reads back as the same text), and read by `->`
/// without an error on any stored row.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const POSTGRES_ITEM_TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS state_store_items (
        prefix TEXT COLLATE \"C\" NOT NULL,
        key TEXT COLLATE \"C\" NOT NULL,
        value JSON NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (prefix, key)
    )",
    "CREATE TABLE IF NOT EXISTS state_store_item_vectors (
        prefix TEXT COLLATE \"C\" NOT NULL,
        key TEXT COLLATE \"C\" NOT NULL,
        dims BIGINT NOT NULL,
        vectors BYTEA NOT NULL,
        PRIMARY KEY (prefix, key)
    )",
];

pub(crate) const UPSERT_VECTORS: &str = "INSERT INTO state_store_item_vectors \
     (prefix, key, dims, vectors) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (prefix, key) DO UPDATE SET dims = excluded.dims, vectors = excluded.vectors";
pub(crate) const DELETE_VECTORS: &str =
    "DELETE FROM state_store_item_vectors WHERE prefix = $1 AND key = $2";
pub(crate) const DELETE_ITEM: &str = "DELETE FROM state_store_items WHERE prefix = $1 AND key = $2";

/// Where the two databases' SQL differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(all(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// Inserts an item, or replaces its value and `updated_at` (its
    /// `created_at` stays).
    pub fn upsert_item(self) -> &'static str {
        match self {
            Dialect::Sqlite => {
                "INSERT INTO state_store_items (prefix, key, value, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $4) ON CONFLICT (prefix, key) \
                 DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
            }
            Dialect::Postgres => {
                "INSERT INTO state_store_items (prefix, key, value, created_at, updated_at) \
                 VALUES ($1, $2, $3::json, $4, $4) ON CONFLICT (prefix, key) \
                 DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
            }
        }
    }

    pub fn select_item(self) -> &'static str {
        match self {
            Dialect::Sqlite => {
                "SELECT prefix, key, value, created_at, updated_at FROM state_store_items \
                 WHERE prefix = $1 AND key = $2"
            }
            Dialect::Postgres => {
                "SELECT prefix, key, value::text, created_at, updated_at FROM state_store_items \
                 WHERE prefix = $1 AND key = $2"
            }
        }
    }

    /// The value column of `state_store_items i`, as text.
    fn value(self) -> &'static str {
        match self {
            Dialect::Sqlite => "i.value",
            Dialect::Postgres => "i.value::text",
        }
    }

    /// `pushed` as a condition on `i.value`, or `None` when this database
    /// cannot say it (the filter in Rust still does).
    fn condition(self, pushed: &Pushed, sql: &mut Sql) -> Option<String> {
        match self {
            Dialect::Sqlite => sqlite_condition(pushed, sql),
            Dialect::Postgres => Some(postgres_condition(pushed, sql)),
        }
    }
}

/// A bound argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Text(String),
    Real(f64),
    Int(i64),
}

/// A statement's text and its arguments, numbered `$1`, `$2`... in the
/// order they were added.
#[derive(Debug, Default)]
pub(crate) struct Sql {
    pub text: String,
    pub args: Vec<Arg>,
}

impl Sql {
    /// Adds an argument; returns its placeholder.
    fn arg(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        format!("${}", self.args.len())
    }
}

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

/// The `WHERE` clause of a scan (empty when it selects everything).
fn where_clause(dialect: Dialect, scan: ItemScan<'_>, sql: &mut Sql, mut more: Vec<String>) {
    let mut conditions = Vec::new();
    if let Some(range) = scan.prefix {
        conditions.push(prefix_condition(range, sql));
    }
    // Substrings first: finding one in a row's text is much cheaper than
    // reading the row as JSON, which only the rows holding them then pay.
    for needle in scan.pushed.iter().filter_map(needle) {
        let needle = sql.arg(Arg::Text(needle));
        conditions.push(match dialect {
            Dialect::Sqlite => format!("instr(i.value, {needle}) > 0"),
            Dialect::Postgres => format!("strpos(i.value::text, {needle}) > 0"),
        });
    }
    let pushed: Vec<String> = scan
        .pushed
        .iter()
        .filter_map(|p| dialect.condition(p, sql))
        .collect();
    if !pushed.is_empty() {
        let all = pushed.join(" AND ");
        conditions.push(match dialect {
            // A row that is not JSON would make json_extract fail the whole
            // statement: let it through, so the decoder names it.
            Dialect::Sqlite => format!("(json_valid(i.value) = 0 OR ({all}))"),
            // `json` rows are JSON: the column checks on write.
            Dialect::Postgres => all,
        });
    }
    conditions.append(&mut more);
    if !conditions.is_empty() {
        sql.text.push_str(" WHERE ");
        sql.text.push_str(&conditions.join(" AND "));
    }
}

/// Text that the stored JSON of every value passing `pushed` contains:
/// `"field":"value"` for a string's equality, `"field":true` for a
/// boolean's. Values are stored as serde_json writes them (compact, its
/// escapes), and a field equal to the value is written exactly so.
fn needle(pushed: &Pushed) -> Option<String> {
    let (field, value) = match pushed {
        Pushed::Text {
            field,
            cmp: Cmp::Eq,
            value,
        } => (field, serde_json::to_string(value).ok()?),
        Pushed::Bool { field, value } => (field, value.to_string()),
        _ => return None,
    };
    Some(format!("{}:{value}", serde_json::to_string(field).ok()?))
}

/// The namespace is `exact` or starts with `exact.`: one index range
/// (`exact` to `exact/`) minus the texts that continue `exact` with a
/// byte below `.`.
fn prefix_condition(range: &PrefixRange, sql: &mut Sql) -> String {
    let exact = sql.arg(Arg::Text(range.exact.clone()));
    let end = sql.arg(Arg::Text(range.end.clone()));
    let dot = sql.arg(Arg::Text(range.dot.clone()));
    format!(
        "i.prefix >= {exact} AND i.prefix < {end} AND (i.prefix = {exact} OR i.prefix >= {dot})"
    )
}

/// Rows of a search, newest first, after the row `after` (its
/// `updated_at`, namespace and key), `limit` of them or all.
pub(crate) fn page_query(
    dialect: Dialect,
    scan: ItemScan<'_>,
    after: Option<&(i64, String, String)>,
    limit: Option<usize>,
) -> Sql {
    let mut sql = Sql {
        text: format!(
            "SELECT i.prefix, i.key, {}, i.created_at, i.updated_at FROM state_store_items i",
            dialect.value()
        ),
        args: Vec::new(),
    };
    let mut more = Vec::new();
    if let Some((updated_at, prefix, key)) = after {
        let updated_at = sql.arg(Arg::Int(*updated_at));
        let prefix = sql.arg(Arg::Text(prefix.clone()));
        let key = sql.arg(Arg::Text(key.clone()));
        more.push(format!(
            "(i.updated_at, i.prefix, i.key) < ({updated_at}, {prefix}, {key})"
        ));
    }
    where_clause(dialect, scan, &mut sql, more);
    sql.text
        .push_str(" ORDER BY i.updated_at DESC, i.prefix DESC, i.key DESC");
    if let Some(limit) = limit {
        let limit = sql.arg(Arg::Int(i64::try_from(limit).unwrap_or(i64::MAX)));
        sql.text.push_str(&format!(" LIMIT {limit}"));
    }
    sql
}

/// Every row of a scan with its vectors (if any), unordered.
pub(crate) fn vector_query(dialect: Dialect, scan: ItemScan<'_>) -> Sql {
    let mut sql = Sql {
        text: format!(
            "SELECT i.prefix, i.key, {}, i.created_at, i.updated_at, v.dims, v.vectors \
             FROM state_store_items i LEFT JOIN state_store_item_vectors v \
             ON v.prefix = i.prefix AND v.key = i.key",
            dialect.value()
        ),
        args: Vec::new(),
    };
    where_clause(dialect, scan, &mut sql, Vec::new());
    sql
}

/// The distinct namespaces in `prefix` (all when `None`).
pub(crate) fn namespaces_query(prefix: Option<&PrefixRange>) -> Sql {
    let mut sql = Sql {
        text: "SELECT DISTINCT i.prefix FROM state_store_items i".to_owned(),
        args: Vec::new(),
    };
    let scan = ItemScan {
        prefix,
        pushed: &[],
    };
    // No pushed condition: the dialect does not matter.
    where_clause(Dialect::Sqlite, scan, &mut sql, Vec::new());
    sql
}

fn operator(cmp: Cmp) -> &'static str {
    match cmp {
        Cmp::Eq => "=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
        Cmp::Lt => "<",
        Cmp::Le => "<=",
    }
}

/// A number's bounds on `number`, an SQL expression (NULL when the field
/// is not a number).
fn number_bounds(
    number: &str,
    min: Option<f64>,
    max: Option<f64>,
    sql: &mut Sql,
) -> Option<String> {
    let mut bounds = Vec::new();
    if let Some(min) = min {
        bounds.push(format!("{number} >= {}", sql.arg(Arg::Real(min))));
    }
    if let Some(max) = max {
        bounds.push(format!("{number} <= {}", sql.arg(Arg::Real(max))));
    }
    (!bounds.is_empty()).then(|| bounds.join(" AND "))
}

/// SQLite reads a field through a JSON path, `$."field"`: a field whose
/// name a path cannot quote (a `"`, a `\` or a control character) is left
/// to Rust.
fn sqlite_condition(pushed: &Pushed, sql: &mut Sql) -> Option<String> {
    let field = pushed.field();
    if field
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        return None;
    }
    let path = sql.arg(Arg::Text(format!("$.\"{field}\"")));
    Some(match pushed {
        Pushed::Text { cmp, value, .. } => format!(
            "json_extract(i.value, {path}) {} {}",
            operator(*cmp),
            sql.arg(Arg::Text(value.clone()))
        ),
        // CAST: text compares above every number in SQLite.
        Pushed::Number { min, max, .. } => number_bounds(
            &format!("CAST(json_extract(i.value, {path}) AS REAL)"),
            *min,
            *max,
            sql,
        )?,
        Pushed::Bool { value, .. } => {
            format!("json_type(i.value, {path}) = '{value}'")
        }
        Pushed::Null { .. } => format!("COALESCE(json_type(i.value, {path}), 'null') = 'null'"),
    })
}

/// PostgreSQL reads a field with `->` and `->>`, the name bound as text.
fn postgres_condition(pushed: &Pushed, sql: &mut Sql) -> String {
    let field = sql.arg(Arg::Text(pushed.field().to_owned()));
    let json = format!("(i.value -> {field}::text)");
    let text = format!("(i.value ->> {field}::text)");
    match pushed {
        Pushed::Text { cmp, value, .. } => format!(
            "{text} COLLATE \"C\" {} {}",
            operator(*cmp),
            sql.arg(Arg::Text(value.clone()))
        ),
        Pushed::Number { min, max, .. } => number_bounds(
            &format!("(CASE WHEN json_typeof({json}) = 'number' THEN {text}::float8 END)"),
            *min,
            *max,
            sql,
        )
        .unwrap_or_else(|| format!("json_typeof({json}) = 'number'")),
        Pushed::Bool { value, .. } => {
            format!("(json_typeof({json}) = 'boolean' AND {text} = '{value}')")
        }
        Pushed::Null { .. } => format!("COALESCE(json_typeof({json}), 'null') = 'null'"),
    }
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
                let mut tx = self
                    .pool
                    .begin_with($write)
                    .await
                    .map_err(db_error(context()))?;
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
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_error(format!(
                            "reading item {key:?} in namespace {}",
                            $crate::items::shown_text(prefix)
                        )))?;
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
                let mut tx = self
                    .pool
                    .begin_with($write)
                    .await
                    .map_err(db_error(context()))?;
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
                let mut tx = self
                    .pool
                    .begin_with($read)
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
                let mut tx = self
                    .pool
                    .begin_with($read)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> PrefixRange {
        PrefixRange {
            exact: "users".into(),
            dot: "users.".into(),
            end: "users/".into(),
        }
    }

    #[test]
    fn a_page_binds_every_value_and_orders_newest_first() {
        let range = users();
        let pushed = [
            Pushed::Text {
                field: "kind".into(),
                cmp: Cmp::Eq,
                value: "pref".into(),
            },
            Pushed::Number {
                field: "n".into(),
                min: Some(2.5),
                max: None,
            },
        ];
        let scan = ItemScan {
            prefix: Some(&range),
            pushed: &pushed,
        };
        let after = (7, "users.a".to_owned(), "k".to_owned());
        let sql = page_query(Dialect::Sqlite, scan, Some(&after), Some(10));
        assert_eq!(
            sql.text,
            "SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at FROM state_store_items i \
             WHERE i.prefix >= $4 AND i.prefix < $5 AND (i.prefix = $4 OR i.prefix >= $6) \
             AND instr(i.value, $7) > 0 \
             AND (json_valid(i.value) = 0 OR (json_extract(i.value, $8) = $9 \
             AND CAST(json_extract(i.value, $10) AS REAL) >= $11)) \
             AND (i.updated_at, i.prefix, i.key) < ($1, $2, $3) \
             ORDER BY i.updated_at DESC, i.prefix DESC, i.key DESC LIMIT $12"
        );
        assert_eq!(
            sql.args,
            [
                Arg::Int(7),
                Arg::Text("users.a".into()),
                Arg::Text("k".into()),
                Arg::Text("users".into()),
                Arg::Text("users/".into()),
                Arg::Text("users.".into()),
                Arg::Text("\"kind\":\"pref\"".into()),
                Arg::Text("$.\"kind\"".into()),
                Arg::Text("pref".into()),
                Arg::Text("$.\"n\"".into()),
                Arg::Real(2.5),
                Arg::Int(10),
            ]
        );
    }

    #[test]
    fn needles_are_what_serde_json_writes_for_the_field() {
        let text = |field: &str, value: &str| Pushed::Text {
            field: field.into(),
            cmp: Cmp::Eq,
            value: value.into(),
        };
        assert_eq!(needle(&text("a\"b", "x\ny")).unwrap(), r#""a\"b":"x\ny""#);
        assert_eq!(
            needle(&Pushed::Bool {
                field: "on".into(),
                value: false
            })
            .unwrap(),
            r#""on":false"#
        );
        let gt = Pushed::Text {
            field: "a".into(),
            cmp: Cmp::Gt,
            value: "x".into(),
        };
        assert_eq!(needle(&gt), None);
        assert_eq!(needle(&Pushed::Null { field: "a".into() }), None);
        // The stored text holds it.
        let stored = serde_json::to_string(&serde_json::json!({"z": 1, "a\"b": "x\ny"})).unwrap();
        assert!(stored.contains(&needle(&text("a\"b", "x\ny")).unwrap()));
    }

    #[test]
    fn postgres_binds_field_names_and_compares_text_bytewise() {
        let pushed = [
            Pushed::Text {
                field: "it's".into(),
                cmp: Cmp::Gt,
                value: "m".into(),
            },
            Pushed::Bool {
                field: "on".into(),
                value: true,
            },
            Pushed::Null {
                field: "gone".into(),
            },
        ];
        let scan = ItemScan {
            prefix: None,
            pushed: &pushed,
        };
        let sql = vector_query(Dialect::Postgres, scan);
        assert!(
            sql.text.ends_with(
                "WHERE strpos(i.value::text, $1) > 0 \
                 AND (i.value ->> $2::text) COLLATE \"C\" > $3 \
                 AND (json_typeof((i.value -> $4::text)) = 'boolean' AND (i.value ->> $4::text) = 'true') \
                 AND COALESCE(json_typeof((i.value -> $5::text)), 'null') = 'null'"
            ),
            "{}",
            sql.text
        );
        assert_eq!(sql.args[0], Arg::Text("\"on\":true".into()));
        assert_eq!(sql.args[1], Arg::Text("it's".into()));
    }

    #[test]
    fn sqlite_leaves_fields_a_path_cannot_quote_to_rust() {
        let pushed = [Pushed::Null {
            field: "a\"b".into(),
        }];
        let scan = ItemScan {
            prefix: None,
            pushed: &pushed,
        };
        let sql = vector_query(Dialect::Sqlite, scan);
        assert!(!sql.text.contains("WHERE"), "{}", sql.text);
        assert!(sql.args.is_empty());
    }
}
