//! A state's schema as data: one [`FieldInfo`] per field, in declaration
//! order, rendered as a Markdown table for documentation; plus the state's
//! schema version and how to bring older stored data up to it.

use serde_json::Value;
use std::fmt::Write as _;

/// When a field is reset. New scopes may be added, so a `match` needs a
/// wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Reset to its default at the start of every turn (`begin_turn`).
    Turn,
    /// Kept across turns.
    Persistent,
}

impl Scope {
    /// `"turn"` or `"persistent"`, as written in `#[scope(...)]`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Turn => "turn",
            Scope::Persistent => "persistent",
        }
    }
}

/// How a field merges the updates written to it: its `#[reducer(...)]`,
/// from [`FieldInfo::reducer_kind`]. New reducers may be added, so a
/// `match` needs a wildcard arm. (The variants are not named after the
/// reducers' types, `Append` and the rest, so that compile errors can
/// keep naming those types without their paths.)
///
/// It compares equal to the attribute as written, and displays as it:
///
/// ```
/// use state_core::{AgentState, ReducerKind, State};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Run {
///     #[reducer(append)]
///     log: Vec<String>,
///     next: String,
/// }
///
/// let log = Run::schema().field("log").unwrap();
/// assert_eq!(log.reducer_kind(), ReducerKind::Appending);
/// assert_eq!(log.reducer_kind(), "append");
/// assert_eq!(Run::schema().field("next").unwrap().reducer_kind().to_string(), "replace");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReducerKind {
    /// `replace`, the default: the last write wins; two writes in one step
    /// conflict.
    Replacing,
    /// `append`: extends a collection.
    Appending,
    /// `merge`: the update's keys win (maps), or the update is a nested
    /// state's delta.
    Merging,
    /// `append_by_id`: updates items with the same id in place, appends the
    /// others.
    AppendingById,
    /// `add_messages`: LangGraph's message reducer.
    AddingMessages,
    /// `with = path` (and `update = Type`): a custom reducer, as written.
    Custom(&'static str),
}

impl ReducerKind {
    /// The reducer named as `#[reducer(...)]` writes it.
    pub const fn parse(written: &'static str) -> ReducerKind {
        use crate::const_str::str_eq as same;
        if same(written, "replace") {
            ReducerKind::Replacing
        } else if same(written, "append") {
            ReducerKind::Appending
        } else if same(written, "merge") {
            ReducerKind::Merging
        } else if same(written, "append_by_id") {
            ReducerKind::AppendingById
        } else if same(written, "add_messages") {
            ReducerKind::AddingMessages
        } else {
            ReducerKind::Custom(written)
        }
    }

    /// The attribute as written: `"append"`, `"with = keep_max"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReducerKind::Replacing => "replace",
            ReducerKind::Appending => "append",
            ReducerKind::Merging => "merge",
            ReducerKind::AppendingById => "append_by_id",
            ReducerKind::AddingMessages => "add_messages",
            ReducerKind::Custom(written) => written,
        }
    }
}

impl std::fmt::Display for ReducerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl PartialEq<str> for ReducerKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ReducerKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What the schema says about one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldInfo {
    /// The key: the field's name (a dotted path for nested fields).
    pub name: &'static str,
    /// The Rust type as written in the struct.
    pub ty: &'static str,
    /// The reducer as written: `replace`, `append`, ..., `with = path`
    /// ([`FieldInfo::reducer_kind`] gives it as an enum).
    pub reducer: &'static str,
    /// When the field is reset.
    pub scope: Scope,
    /// The `#[default(...)]` expression as written, if any.
    pub default: Option<&'static str>,
    /// The field's doc comment (lines joined with `\n`; empty if none).
    pub doc: &'static str,
    /// The schema of a nested state (`#[reducer(merge)]` on a state).
    nested: Option<NestedSchema>,
    /// Former names, from `#[state(alias = "old")]`.
    aliases: &'static [&'static str],
}

/// The schema of a nested state, found when asked for: a static cannot
/// call the nested state's `schema()` while it is built. The generated
/// function answers for every field of the state, by index.
#[derive(Clone, Copy)]
struct NestedSchema(fn(usize) -> Option<&'static Schema>, usize);

impl NestedSchema {
    fn get(self) -> Option<&'static Schema> {
        (self.0)(self.1)
    }
}

impl PartialEq for NestedSchema {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for NestedSchema {}

impl std::fmt::Debug for NestedSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(schema) => write!(f, "NestedSchema({})", schema.name),
            None => f.write_str("NestedSchema(None)"),
        }
    }
}

impl FieldInfo {
    /// Used by generated code; the fields are public for reading.
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        ty: &'static str,
        reducer: &'static str,
        scope: Scope,
        default: Option<&'static str>,
        doc: &'static str,
    ) -> Self {
        FieldInfo {
            name,
            ty,
            reducer,
            scope,
            default,
            doc,
            nested: None,
            aliases: &[],
        }
    }

    /// The field's reducer as an enum; [`FieldInfo::reducer`] is its text.
    pub const fn reducer_kind(&self) -> ReducerKind {
        ReducerKind::parse(self.reducer)
    }

    /// Used by generated code: the field's former names.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    /// The field's former names (`#[state(alias = "old")]`): stored data
    /// that uses one is read as this field (see [`Schema::migrate`]).
    pub fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    /// Used by generated code: the field may be a nested state, whose
    /// schema `nested(index)` returns.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_nested(
        mut self,
        nested: fn(usize) -> Option<&'static Schema>,
        index: usize,
    ) -> Self {
        self.nested = Some(NestedSchema(nested, index));
        self
    }

    /// The schema of the nested state this field holds, if it is one.
    pub fn nested(&self) -> Option<&'static Schema> {
        self.nested.and_then(NestedSchema::get)
    }
}

/// A state's fields, in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Schema {
    /// The state type's name.
    pub name: &'static str,
    /// The state's doc comment (empty if none).
    pub doc: &'static str,
    /// The fields, in declaration order.
    pub fields: &'static [FieldInfo],
    /// `#[state(version = N)]`; 1 when not given.
    version: u32,
    /// `#[state(migrate = f)]`.
    migration: Option<Migration>,
}

/// A state's migration function over stored JSON.
#[derive(Clone, Copy)]
struct Migration(fn(u32, &mut Value) -> Result<(), String>);

impl PartialEq for Migration {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for Migration {}

impl std::fmt::Debug for Migration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Migration")
    }
}

impl Schema {
    /// Used by generated code; the fields are public for reading.
    #[doc(hidden)]
    pub const fn new(name: &'static str, doc: &'static str, fields: &'static [FieldInfo]) -> Self {
        Schema {
            name,
            doc,
            fields,
            version: 1,
            migration: None,
        }
    }

    /// Used by generated code: `#[state(version = N)]`.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_version(mut self, version: u32) -> Self {
        self.version = version;
        self
    }

    /// Used by generated code: `#[state(migrate = f)]`.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_migration(
        mut self,
        migrate: fn(u32, &mut Value) -> Result<(), String>,
    ) -> Self {
        self.migration = Some(Migration(migrate));
        self
    }

    /// The state's schema version, `#[state(version = N)]` (1 if not given).
    /// Stores record it with everything they write, and refuse data written
    /// by a newer version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Brings stored data written by schema version `from` up to this one,
    /// in place. `data` is a field map: a whole state, a delta, or a
    /// one-key map `{key: value}`. When `from` is older, the state's
    /// `#[state(migrate = f)]` function runs first (it sees the data as
    /// stored); then every key stored under a field's former name
    /// (`#[state(alias = "old")]`) moves to the field's name, in nested
    /// states too.
    ///
    /// Fails with the migration function's message, or when a map holds a
    /// field under both its names.
    ///
    /// ```
    /// use serde_json::json;
    /// use state_core::{AgentState, State};
    ///
    /// fn migrate(from: u32, data: &mut serde_json::Value) -> Result<(), String> {
    ///     // Version 1 stored the score as text.
    ///     if from < 2 && let Some(score) = data.get_mut("score") {
    ///         let text = score.as_str().ok_or("score: expected text")?;
    ///         *score = json!(text.parse::<i64>().map_err(|e| e.to_string())?);
    ///     }
    ///     Ok(())
    /// }
    ///
    /// #[derive(AgentState, Debug)]
    /// #[state(version = 2, migrate = migrate)]
    /// struct Profile {
    ///     #[state(alias = "user_name")]
    ///     name: String,
    ///     score: i64,
    /// }
    ///
    /// let mut stored = json!({"user_name": "ada", "score": "7"});
    /// Profile::schema().migrate(1, &mut stored).unwrap();
    /// assert_eq!(stored, json!({"name": "ada", "score": 7}));
    /// let profile = Profile::from_json(stored).unwrap();
    /// assert_eq!((profile.name.as_str(), profile.score), ("ada", 7));
    /// ```
    pub fn migrate(&self, from: u32, data: &mut Value) -> Result<(), String> {
        if let (true, Some(Migration(migrate))) = (from < self.version, self.migration) {
            migrate(from, data)
                .map_err(|e| format!("migrating from version {from} to {}: {e}", self.version))?;
        }
        self.rename_aliases(data)
    }

    /// Moves keys stored under former names to the fields' names.
    fn rename_aliases(&self, data: &mut Value) -> Result<(), String> {
        let Value::Object(map) = data else {
            return Ok(());
        };
        for field in self.fields {
            for alias in field.aliases {
                let Some(value) = map.remove(*alias) else {
                    continue;
                };
                if map.contains_key(field.name) {
                    return Err(format!(
                        "field \"{}\" is stored under both its name and its former name \"{alias}\"",
                        field.name
                    ));
                }
                map.insert(field.name.to_owned(), value);
            }
            if let (Some(nested), Some(inner)) = (field.nested(), map.get_mut(field.name)) {
                nested
                    .rename_aliases(inner)
                    .map_err(|e| format!("in \"{}\": {e}", field.name))?;
            }
        }
        Ok(())
    }

    /// The field named `name`, if there is one.
    pub fn field(&self, name: &str) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Every field by its dotted path, nested states' fields included (after
    /// the nested state's own entry), in declaration order. A field inside a
    /// turn-scoped nested state is reported as turn-scoped: `begin_turn`
    /// resets it with its group.
    pub fn entries(&self) -> Vec<(String, FieldInfo)> {
        let mut out = Vec::new();
        self.walk("", None, &mut |path, info, _| out.push((path, info)));
        out
    }

    /// The leaf fields by dotted path: as [`entries`](Schema::entries),
    /// without the nested states themselves.
    pub fn leaves(&self) -> Vec<(String, FieldInfo)> {
        let mut out = Vec::new();
        self.walk("", None, &mut |path, info, is_group| {
            if !is_group {
                out.push((path, info));
            }
        });
        out
    }

    fn walk(
        &self,
        prefix: &str,
        scope: Option<Scope>,
        visit: &mut dyn FnMut(String, FieldInfo, bool),
    ) {
        for field in self.fields {
            let path = format!("{prefix}{}", field.name);
            let mut info = *field;
            if scope == Some(Scope::Turn) {
                info.scope = Scope::Turn;
            }
            let nested = field.nested();
            visit(path.clone(), info, nested.is_some());
            if let Some(nested) = nested {
                nested.walk(&format!("{path}."), Some(info.scope), visit);
            }
        }
    }

    /// The field table as Markdown: field, type, reducer, scope, default and
    /// description, one row per field, a nested state's fields under it by
    /// dotted path.
    ///
    /// ```
    /// use state_core::{AgentState, State};
    ///
    /// #[derive(AgentState)]
    /// struct ChatState {
    ///     /// Next node.
    ///     #[scope(turn)]
    ///     #[default("supervisor")]
    ///     next: String,
    /// }
    ///
    /// let table = ChatState::schema().to_markdown();
    /// assert!(table.contains("| `next` | `String` | replace | turn | `\"supervisor\"` | Next node. |"));
    /// ```
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        out.push_str("| Field | Type | Reducer | Scope | Default | Description |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        for (name, field) in self.entries() {
            let default = field
                .default
                .map_or_else(|| "`Default::default()`".to_owned(), code);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                code(&name),
                code(field.ty),
                escape(field.reducer),
                field.scope.as_str(),
                default,
                escape(&field.doc.replace('\n', " ")),
            );
        }
        out
    }
}

/// Inline code, with table pipes escaped.
fn code(text: &str) -> String {
    format!("`{}`", escape(text))
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    static FIELDS: [FieldInfo; 2] = [
        FieldInfo::new(
            "messages",
            "Messages",
            "add_messages",
            Scope::Persistent,
            None,
            "History.\nKept.",
        ),
        FieldInfo::new(
            "pick",
            "fn(u8) | u8",
            "with = pick",
            Scope::Turn,
            Some("3"),
            "",
        ),
    ];

    #[test]
    fn markdown_has_a_row_per_field_and_escapes_pipes() {
        let md = Schema::new("S", "", &FIELDS).to_markdown();
        let lines: Vec<_> = md.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[2],
            "| `messages` | `Messages` | add_messages | persistent | `Default::default()` | History. Kept. |"
        );
        assert_eq!(
            lines[3],
            "| `pick` | `fn(u8) \\| u8` | with = pick | turn | `3` |  |"
        );
    }

    #[test]
    fn field_lookup() {
        let schema = Schema::new("S", "", &FIELDS);
        assert_eq!(schema.field("pick").map(|f| f.scope), Some(Scope::Turn));
        assert!(schema.field("nope").is_none());
    }
}
