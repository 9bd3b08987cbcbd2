//! The SQL of long-term memory items, for both SQL backends: their tables
//! (schema version 3) and their queries, which differ only where SQLite
//! and PostgreSQL read JSON differently ([`Dialect`]). The methods that
//! run them are in `sql_item_methods.rs`.
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
