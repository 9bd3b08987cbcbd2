//! A state's schema as data: one [`FieldInfo`] per field, in declaration
//! order, rendered as a Markdown table for documentation.

use std::fmt::Write as _;

/// When a field is reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// What the schema says about one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldInfo {
    /// The key: the field's name (a dotted path for nested fields).
    pub name: &'static str,
    /// The Rust type as written in the struct.
    pub ty: &'static str,
    /// The reducer as written: `replace`, `append`, ..., `with = path`.
    pub reducer: &'static str,
    /// When the field is reset.
    pub scope: Scope,
    /// The `#[default(...)]` expression as written, if any.
    pub default: Option<&'static str>,
    /// The field's doc comment (lines joined with `\n`; empty if none).
    pub doc: &'static str,
    /// The schema of a nested state (`#[reducer(merge)]` on a state).
    nested: Option<NestedSchema>,
}

/// The schema of a nested state, found when asked for: a static cannot
/// call the nested state's `schema()` while it is built.
#[derive(Clone, Copy)]
struct NestedSchema(fn() -> Option<&'static Schema>);

impl PartialEq for NestedSchema {
    fn eq(&self, other: &Self) -> bool {
        (self.0)() == (other.0)()
    }
}

impl Eq for NestedSchema {}

impl std::fmt::Debug for NestedSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.0)() {
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
        }
    }

    /// Used by generated code: the field may be a nested state, whose
    /// schema `nested` returns.
    #[doc(hidden)]
    #[must_use]
    pub const fn with_nested(mut self, nested: fn() -> Option<&'static Schema>) -> Self {
        self.nested = Some(NestedSchema(nested));
        self
    }

    /// The schema of the nested state this field holds, if it is one.
    pub fn nested(&self) -> Option<&'static Schema> {
        self.nested.and_then(|nested| (nested.0)())
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
}

impl Schema {
    /// Used by generated code; the fields are public for reading.
    #[doc(hidden)]
    pub const fn new(name: &'static str, doc: &'static str, fields: &'static [FieldInfo]) -> Self {
        Schema { name, doc, fields }
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
    /// use state_core::schema::{FieldInfo, Schema, Scope};
    /// static FIELDS: [FieldInfo; 1] = [FieldInfo::new(
    ///     "next", "String", "replace", Scope::Turn, Some("\"supervisor\""), "Next node.",
    /// )];
    /// let schema = Schema::new("ChatState", "", &FIELDS);
    /// assert!(schema.to_markdown().contains("| `next` | `String` | replace | turn | `\"supervisor\"` | Next node. |"));
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
