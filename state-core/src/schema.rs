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
        }
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

    /// The field table as Markdown: field, type, reducer, scope, default and
    /// description, one row per field.
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
        for field in self.fields {
            let default = field
                .default
                .map_or_else(|| "`Default::default()`".to_owned(), code);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                code(field.name),
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
