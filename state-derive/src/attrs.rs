//! Field attributes: `#[reducer(...)]`, `#[scope(...)]`, `#[default(...)]`
//! and doc comments. Each mistake becomes an error at its own span, and all
//! of a field's mistakes are reported together.

use crate::model::{Builtin, Reducer};
use darling::Error;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;

/// When a field is reset.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scope {
    /// Reset to its default by `begin_turn`.
    Turn,
    /// Kept across turns.
    Persistent,
}

/// What one field's attributes say.
#[derive(Default)]
pub struct FieldAttrs {
    pub reducer: Option<Reducer>,
    pub scope: Option<Scope>,
    pub default: Option<syn::Expr>,
    pub docs: String,
}

pub fn parse_scope_name(value: &str) -> darling::Result<Scope> {
    match value {
        "turn" => Ok(Scope::Turn),
        "persistent" => Ok(Scope::Persistent),
        other => Err(Error::custom(format!(
            "unknown scope `{other}`; expected `turn` (reset by `begin_turn`) or `persistent` (kept across turns){}",
            did_you_mean(other, ["turn", "persistent"])
        ))),
    }
}

pub fn parse_scope_ident(ident: &syn::Ident) -> darling::Result<Scope> {
    parse_scope_name(&ident.to_string()).map_err(|e| e.with_span(ident))
}

fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!("; did you mean `{k}`?"))
        .unwrap_or_default()
}

pub fn parse_field_attrs(attrs: &[syn::Attribute]) -> darling::Result<FieldAttrs> {
    let mut errors = Error::accumulator();
    let mut out = FieldAttrs::default();
    let mut docs = Vec::new();
    for attr in attrs {
        let path = attr.path();
        if path.is_ident("doc") {
            if let Some(line) = doc_line(attr) {
                docs.push(line);
            }
        } else if path.is_ident("reducer") {
            let parsed = errors.handle(parse_reducer(attr));
            set_once(&mut out.reducer, parsed, attr, "reducer", &mut errors);
        } else if path.is_ident("scope") {
            let parsed = errors.handle(parse_scope(attr));
            set_once(&mut out.scope, parsed, attr, "scope", &mut errors);
        } else if path.is_ident("default") {
            let parsed = errors.handle(parse_default(attr));
            set_once(&mut out.default, parsed, attr, "default", &mut errors);
        } else if path.is_ident("state") {
            errors.push(
                Error::custom(
                    "`#[state(...)]` goes on the struct (`crate`, `scope`, `delta`); \
                     on a field, use `#[reducer(...)]`, `#[scope(...)]` or `#[default(...)]`",
                )
                .with_span(attr),
            );
        }
    }
    out.docs = docs.join("\n");
    errors.finish_with(out)
}

/// Records the first occurrence of an attribute; a second one is an error at
/// the second.
fn set_once<T>(
    slot: &mut Option<T>,
    parsed: Option<T>,
    attr: &syn::Attribute,
    name: &str,
    errors: &mut darling::error::Accumulator,
) {
    if slot.is_some() {
        errors.push(
            Error::custom(format!(
                "duplicate `#[{name}(...)]` on this field; a field takes one, so remove this one"
            ))
            .with_span(attr),
        );
    } else if parsed.is_some() {
        *slot = parsed;
    }
}

/// All `///` lines of `attrs`, joined with `\n`.
pub fn doc_text(attrs: &[syn::Attribute]) -> String {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(doc_line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn doc_line(attr: &syn::Attribute) -> Option<String> {
    let syn::Meta::NameValue(nv) = &attr.meta else {
        return None;
    };
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(s),
        ..
    }) = &nv.value
    else {
        return None;
    };
    let value = s.value();
    Some(
        value
            .strip_prefix(' ')
            .unwrap_or(&value)
            .trim_end()
            .to_owned(),
    )
}

const REDUCER_HELP: &str = "built-in reducers: `replace`, `append`, `merge`, `append_by_id`, \
    `add_messages`; or a custom one: `#[reducer(with = path::to::function)]`";

/// The parenthesised body of an attribute, or an error saying what to write.
fn list_body<'a>(attr: &'a syn::Attribute, example: &str) -> darling::Result<&'a syn::MetaList> {
    match &attr.meta {
        syn::Meta::List(list) if !list.tokens.is_empty() => Ok(list),
        _ => Err(Error::custom(format!("expected {example}")).with_span(attr)),
    }
}

fn parse_reducer(attr: &syn::Attribute) -> darling::Result<Reducer> {
    let list = list_body(attr, &format!("`#[reducer(NAME)]`; {REDUCER_HELP}"))?;
    let parser = |input: ParseStream| -> syn::Result<Result<Reducer, Error>> {
        let name: syn::Ident = input.parse()?;
        if name == "with" {
            input.parse::<syn::Token![=]>()?;
            let path: syn::Path = input.parse()?;
            let mut update = None;
            if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
                let key: syn::Ident = input.parse()?;
                if key != "update" {
                    return Ok(Err(Error::custom(format!(
                        "unknown reducer option `{key}`; after `with = path`, only `update = Type` is accepted"
                    ))
                    .with_span(&key)));
                }
                input.parse::<syn::Token![=]>()?;
                update = Some(input.parse::<syn::Type>()?);
                input.parse::<Option<syn::Token![,]>>()?;
            }
            return Ok(Ok(Reducer::With { path, update }));
        }
        input.parse::<Option<syn::Token![,]>>()?;
        let text = name.to_string();
        let found = Builtin::ALL.iter().find(|(n, _)| *n == text);
        Ok(match found {
            Some((_, builtin)) => Ok(Reducer::Builtin(*builtin, name.span())),
            None => Err(Error::custom(format!(
                "unknown reducer `{text}`{}; {REDUCER_HELP}",
                did_you_mean(&text, Builtin::ALL.iter().map(|(n, _)| *n))
            ))
            .with_span(&name)),
        })
    };
    match parser.parse2(list.tokens.clone()) {
        Ok(result) => result,
        Err(e) => Err(Error::custom(format!("{e}; {REDUCER_HELP}")).with_span(&e.span())),
    }
}

fn parse_scope(attr: &syn::Attribute) -> darling::Result<Scope> {
    let list = list_body(attr, "`#[scope(turn)]` or `#[scope(persistent)]`")?;
    let ident: syn::Ident = syn::parse2(list.tokens.clone()).map_err(|_| {
        Error::custom("expected `#[scope(turn)]` or `#[scope(persistent)]`")
            .with_span(&list.tokens.span())
    })?;
    parse_scope_ident(&ident)
}

fn parse_default(attr: &syn::Attribute) -> darling::Result<syn::Expr> {
    let list = list_body(
        attr,
        "an expression: `#[default(EXPR)]`, e.g. `#[default(3)]` or `#[default(\"supervisor\")]`",
    )?;
    syn::parse2(list.tokens.clone()).map_err(|e| {
        Error::custom(format!("`#[default(...)]` takes one expression: {e}")).with_span(&e.span())
    })
}
