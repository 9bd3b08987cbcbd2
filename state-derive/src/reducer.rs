//! A field's reducer as `#[reducer(...)]` names it: a built-in, by its
//! attribute name, or `with = path` (and `update = Type`). Parsed in
//! `attrs.rs`, held by the model, read by `expand`.

use crate::text::type_text;
use proc_macro2::Span;

/// How a field reduces its updates.
pub enum Reducer {
    Builtin(Builtin, Span),
    /// `with = path`: a function or a unit-struct reducer value, with the
    /// update type (the field's own type unless `update = Type` is given).
    With {
        path: syn::Path,
        update: Option<Box<syn::Type>>,
    },
}

/// The built-in reducers, by their attribute names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Replace,
    Append,
    Merge,
    AppendById,
    AddMessages,
}

impl Builtin {
    pub const ALL: [(&'static str, Builtin); 5] = [
        ("replace", Builtin::Replace),
        ("append", Builtin::Append),
        ("merge", Builtin::Merge),
        ("append_by_id", Builtin::AppendById),
        ("add_messages", Builtin::AddMessages),
    ];

    /// The runtime type implementing this reducer.
    pub fn type_name(self) -> &'static str {
        match self {
            Builtin::Replace => "Replace",
            Builtin::Append => "Append",
            Builtin::Merge => "Merge",
            Builtin::AppendById => "AppendById",
            Builtin::AddMessages => "AddMessages",
        }
    }

    pub fn name(self) -> &'static str {
        Builtin::ALL
            .iter()
            .find(|(_, b)| *b == self)
            .map_or("replace", |(name, _)| name)
    }
}

impl Builtin {
    /// Whether the update type is the reducer's own `Update` for the field
    /// type rather than the field type: `add_messages` (a Vec of messages
    /// for `Messages`) and `merge` (a nested state's delta).
    pub fn projects_update(self) -> bool {
        matches!(self, Builtin::AddMessages | Builtin::Merge)
    }
}

impl Reducer {
    /// The same reducer, wherever it was written.
    pub fn same_as(&self, other: &Reducer) -> bool {
        match (self, other) {
            (Reducer::Builtin(a, _), Reducer::Builtin(b, _)) => a == b,
            (
                Reducer::With { path, update },
                Reducer::With {
                    path: other_path,
                    update: other_update,
                },
            ) => path == other_path && update == other_update,
            _ => false,
        }
    }

    /// List fields (`append`, `append_by_id`, `add_messages`): their
    /// update is a collection, and the delta has a `push_x` setter for one
    /// item.
    pub fn pushes(&self) -> bool {
        matches!(
            self,
            Reducer::Builtin(
                Builtin::Append | Builtin::AppendById | Builtin::AddMessages,
                _
            )
        )
    }

    /// Last-write-wins fields: no overwrite marker, and two writes conflict.
    pub fn is_replace(&self) -> bool {
        matches!(self, Reducer::Builtin(Builtin::Replace, _))
    }

    /// How the schema and docs name this reducer.
    pub fn describe(&self) -> String {
        match self {
            Reducer::Builtin(b, _) => b.name().to_owned(),
            Reducer::With { path, update } => {
                let path = quote::ToTokens::to_token_stream(path).to_string();
                let path = path.replace(' ', "");
                match update {
                    Some(update) => {
                        format!("with = {path}, update = {}", type_text(update))
                    }
                    None => format!("with = {path}"),
                }
            }
        }
    }
}
