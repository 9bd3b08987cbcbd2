//! The attributes: `#[reducer(...)]`, `#[scope(...)]`, `#[default(...)]` and
//! doc comments on fields, `#[state(...)]` on the struct. Each mistake
//! becomes an error at its own span that says what to write instead, and all
//! of an input's mistakes are reported together.

use crate::errors::{Errors, error};
use crate::meta::skip_value;
use crate::reducer::{Builtin, Reducer};
use proc_macro2::{Span, TokenStream, TokenTree};
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
    /// `#[state(flatten)]`, at the word `flatten`.
    pub flatten: Option<Span>,
    /// `#[state(alias = "old")]`: former names, as written.
    pub aliases: Vec<syn::LitStr>,
}

/// What the struct's `#[state(...)]` attributes say.
#[derive(Default)]
pub struct StateAttrs {
    pub krate: Option<syn::Path>,
    pub scope: Option<Scope>,
    pub delta: Option<syn::Ident>,
    pub json_schema: bool,
    /// `version = N`.
    pub version: Option<u32>,
    /// `migrate = path`.
    pub migrate: Option<syn::Path>,
    /// `serde = "user"`: the user derives the state's serde impls; at the
    /// value, for errors about them.
    pub user_serde: Option<Span>,
}

const SCOPE_HELP: &str =
    "expected `turn` (reset by `begin_turn`) or `persistent` (kept across turns)";

/// A scope by name, or the message saying what to write instead.
pub fn parse_scope_name(value: &str) -> Result<Scope, String> {
    match value {
        "turn" => Ok(Scope::Turn),
        "persistent" => Ok(Scope::Persistent),
        other => Err(format!(
            "unknown scope `{other}`{}; {SCOPE_HELP}",
            did_you_mean(other, ["turn", "persistent"])
        )),
    }
}

pub fn parse_scope_ident(ident: &syn::Ident) -> syn::Result<Scope> {
    parse_scope_name(&ident.to_string()).map_err(|message| error(ident, message))
}

/// ` (did you mean `x`?)` when `name` is close to one of `known`.
pub(crate) fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

pub fn parse_field_attrs(attrs: &[syn::Attribute]) -> syn::Result<FieldAttrs> {
    let mut errors = Errors::default();
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
            parse_field_state(attr, &mut out, &mut errors);
        }
    }
    out.docs = docs.join("\n");
    if out.flatten.is_some() {
        // A base's fields keep their own reducers, scopes and defaults.
        for attr in attrs {
            let name = path_text(attr);
            if matches!(name.as_str(), "reducer" | "scope" | "default") {
                errors.push(error(
                    &attr_name(attr),
                    format!(
                        "a flattened base keeps its own fields' reducers, scopes and defaults; \
                         remove `#[{name}(...)]` here"
                    ),
                ));
            }
        }
    }
    errors.finish_with(out)
}

const FIELD_STATE_HELP: &str = "on a field, `#[state(...)]` takes `flatten` (embed a base \
    state's fields) or `alias = \"old_name\"` (read stored data that uses a former name); \
    `crate`, `scope`, `delta`, `version`, `migrate` and `json_schema` go on the struct";

/// A field's `#[state(flatten)]` or `#[state(alias = "old")]`.
fn parse_field_state(attr: &syn::Attribute, out: &mut FieldAttrs, errors: &mut Errors) {
    let syn::Meta::List(list) = &attr.meta else {
        errors.push(error(&attr_name(attr), FIELD_STATE_HELP));
        return;
    };
    let parsed = syn::meta::parser(|meta| {
        if meta.path.is_ident("flatten") && !meta.input.peek(syn::Token![=]) {
            let span = meta.path.span();
            set_once(&mut out.flatten, Some(span), attr, "state", errors);
        } else if meta.path.is_ident("alias") {
            match meta.value().and_then(|v| v.parse::<syn::Expr>()) {
                Ok(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(alias),
                    ..
                })) if !alias.value().is_empty() => out.aliases.push(alias),
                Ok(other) => errors.push(error(
                    &other,
                    "`alias` takes the field's former name as a non-empty string: \
                     `#[state(alias = \"old_name\")]`",
                )),
                Err(e) => errors.push(error(
                    &e.span(),
                    "`alias` takes the field's former name as a string: \
                     `#[state(alias = \"old_name\")]`",
                )),
            }
        } else {
            errors.push(error(&meta.path, FIELD_STATE_HELP));
            skip_value(&meta)?;
        }
        Ok(())
    })
    .parse2(list.tokens.clone());
    if let Err(e) = parsed {
        errors.push(error(&e.span(), format!("{e}; {FIELD_STATE_HELP}")));
    }
}

/// The name of an attribute (`reducer` in `#[reducer(append)]`), where
/// errors about the attribute as a whole are reported.
fn attr_name(attr: &syn::Attribute) -> Span {
    attr.path().span()
}

/// Records the first occurrence of an attribute; a second one is an error at
/// the second.
fn set_once<T>(
    slot: &mut Option<T>,
    parsed: Option<T>,
    attr: &syn::Attribute,
    name: &str,
    errors: &mut Errors,
) {
    if slot.is_some() {
        errors.push(error(
            &attr_name(attr),
            format!("a field takes one `#[{name}(...)]`; remove this second one"),
        ));
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

const WITH_HELP: &str = "`with` names the reducer function: `#[reducer(with = path::to::function)]`, \
    where the function is `fn(&mut T, T)` or `fn(&mut T, T) -> Result<(), E>` \
    (or `fn(&mut T, U)`, with `update = U`)";

/// The parenthesised tokens of an attribute, or an error at the attribute
/// (or at its `= value`) saying what to write: `example`.
fn list_tokens<'a>(attr: &'a syn::Attribute, what: &str) -> syn::Result<&'a TokenStream> {
    match &attr.meta {
        syn::Meta::List(list) if !list.tokens.is_empty() => Ok(&list.tokens),
        syn::Meta::List(list) => Err(error(
            &list.delimiter.span().join(),
            format!("`#[{name}()]` is empty; {what}", name = path_text(attr)),
        )),
        syn::Meta::Path(_) => Err(error(
            &attr_name(attr),
            format!(
                "`#[{name}]` needs a value in parentheses; {what}",
                name = path_text(attr)
            ),
        )),
        syn::Meta::NameValue(nv) => Err(error(
            &nv.eq_token,
            format!(
                "write `#[{name}(...)]`, with the value in parentheses, not `#[{name} = ...]`; {what}",
                name = path_text(attr)
            ),
        )),
    }
}

fn path_text(attr: &syn::Attribute) -> String {
    attr.path()
        .get_ident()
        .map_or_else(String::new, ToString::to_string)
}

/// The span of the token after which `input` ended, for errors about
/// something missing at the end.
fn last_span(tokens: &TokenStream) -> Span {
    tokens
        .clone()
        .into_iter()
        .last()
        .map_or_else(Span::call_site, |t| t.span())
}

fn parse_reducer(attr: &syn::Attribute) -> syn::Result<Reducer> {
    let tokens = list_tokens(
        attr,
        &format!("name the reducer, e.g. `#[reducer(append)]`; {REDUCER_HELP}"),
    )?;
    let end = last_span(tokens);
    let parser = |input: ParseStream| -> syn::Result<syn::Result<Reducer>> {
        let name = match input.parse::<TokenTree>()? {
            TokenTree::Ident(name) => name,
            other => {
                input.parse::<TokenStream>()?;
                return Ok(Err(error(
                    &other.span(),
                    format!("expected the name of a reducer; {REDUCER_HELP}"),
                )));
            }
        };
        if name == "with" {
            return Ok(parse_with(input, &name, end));
        }
        let text = name.to_string();
        let Some((_, builtin)) = Builtin::ALL.iter().find(|(n, _)| *n == text) else {
            input.parse::<TokenStream>()?;
            let known = Builtin::ALL.iter().map(|(n, _)| *n).chain(["with"]);
            return Ok(Err(error(
                &name,
                format!(
                    "unknown reducer `{text}`{}; {REDUCER_HELP}",
                    did_you_mean(&text, known)
                ),
            )));
        };
        Ok(rest_after_builtin(input, &text)?.map(|()| Reducer::Builtin(*builtin, name.span())))
    };
    parser
        .parse2(tokens.clone())
        .map_err(|e| error(&e.span(), format!("{e}; {REDUCER_HELP}")))?
}

/// After a built-in's name: nothing, or a trailing comma.
fn rest_after_builtin(input: ParseStream, name: &str) -> syn::Result<syn::Result<()>> {
    if input.is_empty() {
        return Ok(Ok(()));
    }
    let comma = input.parse::<Option<syn::Token![,]>>()?;
    if input.is_empty() {
        return Ok(Ok(()));
    }
    let next: TokenTree = input.parse()?;
    input.parse::<TokenStream>()?;
    let next_text = next.to_string();
    let message = if comma.is_none() {
        format!("unexpected `{next_text}` after the reducer `{name}`; {REDUCER_HELP}")
    } else if next_text == "update" {
        "`update = Type` goes with a custom reducer, `#[reducer(with = path, update = Type)]`; \
         a built-in reducer's update type is fixed"
            .to_owned()
    } else if Builtin::ALL.iter().any(|(n, _)| *n == next_text) || next_text == "with" {
        format!("a field takes one reducer; keep either `{name}` or `{next_text}`")
    } else {
        format!("unexpected `{next_text}`: `#[reducer(...)]` takes one reducer; {REDUCER_HELP}")
    };
    Ok(Err(error(&next.span(), message)))
}

/// `with = path` and an optional `, update = Type`, after `with`.
fn parse_with(input: ParseStream, with: &syn::Ident, end: Span) -> syn::Result<Reducer> {
    let result = (|| -> syn::Result<syn::Result<Reducer>> {
        let Some(eq) = input.parse::<Option<syn::Token![=]>>()? else {
            let at = if input.is_empty() {
                with.span()
            } else {
                input.span()
            };
            input.parse::<TokenStream>()?;
            return Ok(Err(error(&at, WITH_HELP)));
        };
        if input.is_empty() || input.peek(syn::Token![,]) {
            input.parse::<TokenStream>()?;
            return Ok(Err(error(&eq, WITH_HELP)));
        }
        let path: syn::Path = input.parse()?;
        let mut update = None;
        if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
            let key: syn::Ident = input.parse()?;
            if key != "update" {
                input.parse::<TokenStream>()?;
                return Ok(Err(error(
                    &key,
                    format!(
                        "unknown reducer option `{key}`{}; after `with = path`, only \
                         `update = Type` is accepted, for a reducer whose update type is not \
                         the field's",
                        did_you_mean(&key.to_string(), ["update"])
                    ),
                )));
            }
            let Some(eq) = input.parse::<Option<syn::Token![=]>>()? else {
                input.parse::<TokenStream>()?;
                return Ok(Err(error(
                    &key,
                    "`update` takes the type the reducer accepts: `update = Type`",
                )));
            };
            if input.is_empty() {
                return Ok(Err(error(
                    &eq,
                    "`update` takes the type the reducer accepts: `update = Type`",
                )));
            }
            update = Some(Box::new(input.parse::<syn::Type>()?));
            input.parse::<Option<syn::Token![,]>>()?;
        }
        if !input.is_empty() {
            let next: TokenTree = input.parse()?;
            input.parse::<TokenStream>()?;
            return Ok(Err(error(
                &next.span(),
                format!(
                    "unexpected `{next}` after the custom reducer; write \
                     `#[reducer(with = path)]` or `#[reducer(with = path, update = Type)]`"
                ),
            )));
        }
        Ok(Ok(Reducer::With { path, update }))
    })();
    match result {
        Ok(result) => result,
        Err(e) => {
            // syn reports a missing token at the end of the input at the
            // call site; point at the last token instead.
            let span = if e.to_string().starts_with("unexpected end of input") {
                end
            } else {
                e.span()
            };
            Err(error(&span, format!("{e}; {WITH_HELP}")))
        }
    }
}

fn parse_scope(attr: &syn::Attribute) -> syn::Result<Scope> {
    const EXAMPLE: &str = "write `#[scope(turn)]` (reset by `begin_turn`) or \
        `#[scope(persistent)]` (kept across turns, the default)";
    let tokens = list_tokens(attr, EXAMPLE)?;
    let mut iter = tokens.clone().into_iter();
    let first = iter.next();
    if let Some(extra) = iter.next() {
        return Err(error(
            &extra.span(),
            format!("a field takes one scope; {EXAMPLE}"),
        ));
    }
    match first {
        Some(TokenTree::Ident(ident)) => parse_scope_ident(&ident),
        Some(TokenTree::Literal(lit)) => {
            let text = lit.to_string();
            let name = text.trim_matches('"');
            let hint = if text.starts_with('"') && parse_scope_name(name).is_ok() {
                format!("write the scope without quotes: `#[scope({name})]`")
            } else {
                EXAMPLE.to_owned()
            };
            Err(error(&lit.span(), hint))
        }
        Some(other) => Err(error(&other.span(), EXAMPLE)),
        None => Err(error(&attr_name(attr), EXAMPLE)),
    }
}

fn parse_default(attr: &syn::Attribute) -> syn::Result<syn::Expr> {
    const EXAMPLE: &str = "write the field's initial value: `#[default(EXPR)]`, e.g. \
        `#[default(3)]` or `#[default(\"supervisor\")]`";
    if let syn::Meta::NameValue(nv) = &attr.meta {
        let value = &nv.value;
        let text = quote::ToTokens::to_token_stream(value).to_string();
        return Err(error(
            &nv.eq_token,
            format!(
                "write `#[default({text})]`, with the value in parentheses, not `#[default = ...]`"
            ),
        ));
    }
    let tokens = list_tokens(attr, EXAMPLE)?;
    let parser = |input: ParseStream| -> syn::Result<syn::Result<syn::Expr>> {
        let expr: syn::Expr = input.parse()?;
        if input.peek(syn::Token![,]) {
            let comma: syn::Token![,] = input.parse()?;
            let rest: TokenStream = input.parse()?;
            if rest.is_empty() {
                return Ok(Ok(expr));
            }
            return Ok(Err(error(
                &comma,
                format!(
                    "`#[default(...)]` takes one expression; for a tuple, add parentheses: \
                     `#[default(({}, {rest}))]`",
                    quote::ToTokens::to_token_stream(&expr)
                ),
            )));
        }
        if !input.is_empty() {
            let next: TokenTree = input.parse()?;
            input.parse::<TokenStream>()?;
            return Ok(Err(error(
                &next.span(),
                format!("unexpected `{next}`: `#[default(...)]` takes one expression"),
            )));
        }
        Ok(Ok(expr))
    };
    let end = last_span(tokens);
    parser.parse2(tokens.clone()).map_err(|e| {
        let span = if e.to_string().starts_with("unexpected end of input") {
            end
        } else {
            e.span()
        };
        error(
            &span,
            format!("`#[default(...)]` takes one expression: {e}"),
        )
    })?
}

const STATE_KEYS: [&str; 7] = [
    "crate",
    "scope",
    "delta",
    "json_schema",
    "version",
    "migrate",
    "serde",
];

const STATE_HELP: &str = "the struct attribute takes `crate = \"path\"` (a crate that re-exports \
    state-core), `scope = turn` (turn-scoped fields by default), `delta = \"Name\"` (the delta \
    type's name), `version = N` and `migrate = path` (the schema version of stored data, and \
    the function that upgrades older data), `serde = \"user\"` (you derive the state's \
    `Serialize` and `Deserialize`) and `json_schema`";

/// The struct's `#[state(...)]` attributes (any number of them).
pub fn parse_state_attrs(attrs: &[syn::Attribute]) -> syn::Result<StateAttrs> {
    let mut errors = Errors::default();
    let mut out = StateAttrs::default();
    let mut seen: Vec<String> = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("state")) {
        let Some(tokens) = errors.handle(list_tokens(attr, STATE_HELP)) else {
            continue;
        };
        let parsed = syn::meta::parser(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            if seen.contains(&key) {
                errors.push(error(
                    &meta.path,
                    format!("duplicate `{key}` in `#[state(...)]`; remove one"),
                ));
                skip_value(&meta)?;
                return Ok(());
            }
            match key.as_str() {
                "crate" => out.krate = errors.handle(state_value(&meta, &key, parse_crate)),
                "scope" => out.scope = errors.handle(state_value(&meta, &key, parse_state_scope)),
                "delta" => out.delta = errors.handle(state_value(&meta, &key, parse_delta)),
                "version" => out.version = errors.handle(state_value(&meta, &key, parse_version)),
                "migrate" => out.migrate = errors.handle(state_value(&meta, &key, parse_migrate)),
                "serde" => {
                    out.user_serde = errors.handle(state_value(&meta, &key, parse_serde_owner))
                }
                "json_schema" => {
                    if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                        errors.push(error(
                            &meta.path,
                            "`json_schema` takes no value: `#[state(json_schema)]`",
                        ));
                        skip_value(&meta)?;
                    }
                    out.json_schema = true;
                }
                _ => {
                    let shown = quote::ToTokens::to_token_stream(&meta.path).to_string();
                    errors.push(error(
                        &meta.path,
                        format!(
                            "unknown key `{shown}` in `#[state(...)]`{}; {STATE_HELP}",
                            did_you_mean(&shown, STATE_KEYS)
                        ),
                    ));
                    skip_value(&meta)?;
                }
            }
            seen.push(key);
            Ok(())
        })
        .parse2(tokens.clone());
        if let Err(e) = parsed {
            errors.push(error(&e.span(), format!("{e}; {STATE_HELP}")));
        }
    }
    errors.finish_with(out)
}

/// `key = value`, with `value` read by `parse` (a string literal's contents
/// or the expression itself).
fn state_value<T>(
    meta: &syn::meta::ParseNestedMeta,
    key: &str,
    parse: fn(&syn::Expr) -> syn::Result<T>,
) -> syn::Result<T> {
    if !meta.input.peek(syn::Token![=]) {
        return Err(error(
            &meta.path,
            format!("`{key}` needs a value, {}", state_example(key)),
        ));
    }
    let value = meta
        .value()
        .and_then(|v| v.parse::<syn::Expr>())
        .map_err(|e| {
            error(
                &e.span(),
                format!("`{key}` needs a value, {}", state_example(key)),
            )
        })?;
    parse(&value)
}

/// What `key` takes, with an example.
fn state_example(key: &str) -> &'static str {
    match key {
        "crate" => {
            "the path where state-core is re-exported, in a string: \
             `#[state(crate = \"my_crate::state_core\")]`"
        }
        "scope" => "`turn` or `persistent`: `#[state(scope = turn)]`",
        "version" => "the state's schema version, a whole number from 1: `#[state(version = 2)]`",
        "migrate" => {
            "the function that upgrades stored data, \
             `fn(from_version: u32, data: &mut serde_json::Value) -> Result<(), E>`: \
             `#[state(migrate = upgrade)]`"
        }
        "serde" => {
            "\"user\", to derive the state's `Serialize` and `Deserialize` yourself: \
             `#[state(serde = \"user\")]`"
        }
        _ => "the name of the generated delta type: `#[state(delta = \"ChatUpdate\")]`",
    }
}

/// `serde = "user"`: the only owner of the state's serde impls besides the
/// derive.
fn parse_serde_owner(value: &syn::Expr) -> syn::Result<Span> {
    match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) if s.value() == "user" => Ok(s.span()),
        other => Err(error(
            other,
            format!("`serde` takes {}", state_example("serde")),
        )),
    }
}

/// The contents of a string literal, parsed as `T`; or the expression itself
/// when it is a path.
fn string_or_path<T: syn::parse::Parse>(value: &syn::Expr, key: &str) -> syn::Result<T> {
    let fail = |span: Span| error(&span, format!("`{key}` takes {}", state_example(key)));
    match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => s.parse::<T>().map_err(|_| fail(s.span())),
        syn::Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => {
            syn::parse2(quote::ToTokens::to_token_stream(&p.path)).map_err(|_| fail(value.span()))
        }
        _ => Err(fail(value.span())),
    }
}

fn parse_crate(value: &syn::Expr) -> syn::Result<syn::Path> {
    string_or_path(value, "crate")
}

fn parse_delta(value: &syn::Expr) -> syn::Result<syn::Ident> {
    string_or_path(value, "delta")
}

fn parse_version(value: &syn::Expr) -> syn::Result<u32> {
    let fail = || {
        error(
            value,
            format!("`version` takes {}", state_example("version")),
        )
    };
    match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) => match n.base10_parse::<u32>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(fail()),
        },
        _ => Err(fail()),
    }
}

fn parse_migrate(value: &syn::Expr) -> syn::Result<syn::Path> {
    match value {
        syn::Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => Ok(p.path.clone()),
        _ => Err(error(
            value,
            format!("`migrate` takes {}", state_example("migrate")),
        )),
    }
}

fn parse_state_scope(value: &syn::Expr) -> syn::Result<Scope> {
    match value {
        syn::Expr::Path(p) if p.path.get_ident().is_some() => {
            parse_scope_ident(p.path.get_ident().unwrap_or_else(|| unreachable!()))
        }
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => parse_scope_name(&s.value()).map_err(|message| error(s, message)),
        _ => Err(error(
            value,
            format!("`scope` takes {}", state_example("scope")),
        )),
    }
}
