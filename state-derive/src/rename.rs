//! `#[serde(rename = "..")]` on a field and `#[serde(rename_all = "..")]`
//! on the struct: a field's key (in JSON, `get`/`set`, the schema and
//! errors) may differ from its Rust name, as serde would name it. The
//! setters keep the Rust name.

use crate::errors::{Errors, error};
use crate::meta::skip_value;
use syn::spanned::Spanned;

/// serde's `rename_all` rules, by the names serde gives them.
const RULES: [&str; 8] = [
    "lowercase",
    "UPPERCASE",
    "PascalCase",
    "camelCase",
    "snake_case",
    "SCREAMING_SNAKE_CASE",
    "kebab-case",
    "SCREAMING-KEBAB-CASE",
];

/// A `rename_all` rule, as written.
#[derive(Clone)]
pub struct RenameAll(String);

impl RenameAll {
    /// A snake_case field name under this rule, as serde_derive renames
    /// fields.
    pub fn apply(&self, field: &str) -> String {
        match self.0.as_str() {
            "lowercase" | "snake_case" => field.to_owned(),
            "UPPERCASE" | "SCREAMING_SNAKE_CASE" => field.to_ascii_uppercase(),
            "PascalCase" => pascal(field),
            "camelCase" => {
                let pascal = pascal(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            "kebab-case" => field.replace('_', "-"),
            _ => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

fn pascal(field: &str) -> String {
    let mut out = String::new();
    let mut capitalize = true;
    for ch in field.chars() {
        if ch == '_' {
            capitalize = true;
        } else if capitalize {
            out.push(ch.to_ascii_uppercase());
            capitalize = false;
        } else {
            out.push(ch);
        }
    }
    out
}

const FIELD_HELP: &str = "`#[derive(AgentState)]` reads `rename = \"key\"` from a field's \
    `#[serde(...)]` (it writes the state's serde impls itself; to write them with serde's \
    derives, add `#[state(serde = \"user\")]` and derive `Serialize, Deserialize`)";
const STRUCT_HELP: &str = "`#[derive(AgentState)]` reads `rename_all = \"...\"` from the \
    struct's `#[serde(...)]` (it writes the state's serde impls itself; to write them with \
    serde's derives, add `#[state(serde = \"user\")]` and derive `Serialize, Deserialize`)";

/// A field's `#[serde(rename = "key")]`, if any. With `user_serde`, the
/// user's serde derive reads the other options; here they are skipped.
pub fn field_rename(
    attrs: &[syn::Attribute],
    user_serde: bool,
) -> syn::Result<Option<syn::LitStr>> {
    let mut errors = Errors::default();
    let mut rename: Option<syn::LitStr> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let value = meta.value()?;
                match value.parse::<syn::Lit>() {
                    Ok(syn::Lit::Str(key)) if !key.value().is_empty() => {
                        if rename.is_some() {
                            errors
                                .push(error(&meta.path, "duplicate `rename`; a field has one key"));
                        }
                        rename = Some(key);
                    }
                    Ok(other) => errors.push(error(
                        &other,
                        "`rename` takes the field's key as a non-empty string: \
                         `#[serde(rename = \"userName\")]`",
                    )),
                    Err(e) => errors.push(error(
                        &e.span(),
                        "`rename` takes the field's key as a string (serialize and \
                         deserialize use the same key): `#[serde(rename = \"userName\")]`",
                    )),
                }
            } else {
                if !user_serde {
                    errors.push(unsupported(&meta, FIELD_HELP));
                }
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = parsed {
            errors.push(error(&e.span(), format!("{e}; {FIELD_HELP}")));
        }
    }
    errors.finish_with(rename)
}

/// The struct's `#[serde(rename_all = "...")]`, if any; other options as
/// in [`field_rename`].
pub fn struct_rename_all(
    attrs: &[syn::Attribute],
    user_serde: bool,
) -> syn::Result<Option<RenameAll>> {
    let mut errors = Errors::default();
    let mut rule: Option<RenameAll> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                let value = meta.value()?;
                match value.parse::<syn::Lit>() {
                    Ok(syn::Lit::Str(name)) if RULES.contains(&name.value().as_str()) => {
                        rule = Some(RenameAll(name.value()));
                    }
                    Ok(other) => errors.push(error(
                        &other,
                        format!(
                            "unknown `rename_all` rule; expected one of {}",
                            RULES.map(|r| format!("\"{r}\"")).join(", ")
                        ),
                    )),
                    Err(e) => errors.push(error(
                        &e.span(),
                        "`rename_all` takes one rule for both directions: \
                         `#[serde(rename_all = \"camelCase\")]`",
                    )),
                }
            } else {
                if !user_serde {
                    errors.push(unsupported(&meta, STRUCT_HELP));
                }
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = parsed {
            errors.push(error(&e.span(), format!("{e}; {STRUCT_HELP}")));
        }
    }
    errors.finish_with(rule)
}

fn unsupported(meta: &syn::meta::ParseNestedMeta, help: &str) -> syn::Error {
    let shown = quote::ToTokens::to_token_stream(&meta.path).to_string();
    error(
        &meta.path.span(),
        format!("`{shown}` is not supported here; {help}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_rename_fields_as_serde_does() {
        let cases = [
            ("lowercase", "user_name"),
            ("UPPERCASE", "USER_NAME"),
            ("PascalCase", "UserName"),
            ("camelCase", "userName"),
            ("snake_case", "user_name"),
            ("SCREAMING_SNAKE_CASE", "USER_NAME"),
            ("kebab-case", "user-name"),
            ("SCREAMING-KEBAB-CASE", "USER-NAME"),
        ];
        for (rule, expected) in cases {
            assert_eq!(
                RenameAll(rule.into()).apply("user_name"),
                expected,
                "{rule}"
            );
        }
        assert_eq!(RenameAll("camelCase".into()).apply("a"), "a");
        assert_eq!(RenameAll("PascalCase".into()).apply("messages"), "Messages");
    }
}
