//! The validated input of `#[tool]`: the attribute's options, the
//! function, and what each parameter is (an argument the model fills, the
//! graph's state, the node's context, the call's id). All errors are
//! found here, with spans.

use crate::attrs::{did_you_mean, doc_text};
use crate::errors::{Errors, error};
use crate::meta::skip_value;
use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

/// A function, ready to expand into a tool.
pub struct ToolModel {
    /// The path to state-agent (`::state_agent` unless `crate = ".."`).
    pub krate: syn::Path,
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The function, with the doc comments of its parameters taken off.
    pub func: syn::ItemFn,
    /// Its parameters, in order.
    pub params: Vec<Param>,
    /// What it returns.
    pub output: Output,
}

/// What a failed input still gives: enough to declare the tool, so that
/// its uses do not fail as well.
pub struct Stub {
    pub krate: syn::Path,
    /// The function, its parameters' doc comments taken off: still
    /// `run`, so what it uses stays used.
    pub func: syn::ItemFn,
}

/// One parameter of the function.
pub enum Param {
    /// An argument the model fills: a property of the schema.
    Arg {
        ident: syn::Ident,
        /// The JSON key: the name without `r#`.
        key: String,
        /// Its doc comment, as the property's description.
        doc: String,
        ty: syn::Type,
    },
    /// `&S`: the graph's state (LangGraph's `InjectedState`).
    State { ty: syn::Type },
    /// `Ctx<C>` or `&Ctx<C>`: the tool node's context.
    Ctx { ty: syn::Type, by_ref: bool },
    /// `ToolCallId` or `&ToolCallId`: the id of the call.
    CallId { by_ref: bool },
}

/// What the function returns, as the tool's output.
pub enum Output {
    /// A value whose JSON (or text) is the answer; `Result` of one when
    /// `fallible`.
    Content {
        fallible: bool,
        ty: Option<syn::Type>,
    },
    /// A `Command` (or a `Result` of one): a handoff.
    Command { ty: syn::Type },
}

impl Output {
    /// The return type as written, if any.
    pub fn ty(&self) -> Option<&syn::Type> {
        match self {
            Output::Content { ty, .. } => ty.as_ref(),
            Output::Command { ty } => Some(ty),
        }
    }
}

const KEYS: [&str; 3] = ["name", "description", "crate"];

const ATTR_HELP: &str = "`#[tool]` takes `name = \"..\"` (the name the model calls it by; the \
    function's by default), `description = \"..\"` (the doc comment by default) and \
    `crate = \"path\"` (where state_agent is re-exported)";

impl ToolModel {
    /// Parses and validates, reporting every error found at once; on
    /// error, what a stub needs when the item is a function.
    pub fn from_input(
        args: TokenStream,
        item: &syn::Item,
    ) -> Result<ToolModel, Box<(syn::Error, Option<Stub>)>> {
        let mut errors = Errors::default();
        let options = parse_options(args, &mut errors);
        let syn::Item::Fn(func) = item else {
            errors.push(error(
                item,
                "`#[tool]` goes on a function: its name, doc comment and parameters make the tool",
            ));
            return Err(Box::new((errors.finish_with(()).unwrap_err(), None)));
        };
        let krate = options
            .krate
            .unwrap_or_else(|| syn::parse_quote!(::state_agent));
        let mut func = func.clone();
        // A method's `#[tool]` sits in an `impl`, where no stub can go.
        let in_impl = func.sig.receiver().is_some();
        check_signature(&func.sig, &mut errors);
        let mut params = Vec::new();
        let mut seen = Seen::default();
        for input in func.sig.inputs.iter_mut() {
            match input {
                syn::FnArg::Receiver(receiver) => errors.push(error(
                    &*receiver,
                    "`#[tool]` goes on a free function, not a method: a tool has no `self`",
                )),
                syn::FnArg::Typed(typed) => {
                    let doc = doc_text(&typed.attrs);
                    typed.attrs.retain(|a| !a.path().is_ident("doc"));
                    if let Some(param) = errors.handle(classify(typed, doc, &mut seen)) {
                        params.push(param);
                    }
                }
            }
        }
        let output = classify_output(&func.sig.output);
        let name = options
            .name
            .unwrap_or_else(|| func.sig.ident.unraw().to_string());
        let docs = doc_text(&func.attrs);
        let description = options.description.unwrap_or_else(|| description_of(&docs));
        if description.is_empty() {
            errors.push(error(
                &func.sig.ident,
                "a tool needs a description for the model: give the function a doc comment \
                 (`/// What it does.`) or write `#[tool(description = \"..\")]`",
            ));
        }
        let stub = || Stub {
            krate: krate.clone(),
            func: func.clone(),
        };
        match errors.finish_with(()) {
            Ok(()) => Ok(ToolModel {
                krate,
                name,
                description,
                func,
                params,
                output,
            }),
            Err(e) => Err(Box::new((e, (!in_impl).then(stub)))),
        }
    }

    /// The parameters the model fills.
    pub fn args(&self) -> impl Iterator<Item = (&syn::Ident, &str, &str, &syn::Type)> {
        self.params.iter().filter_map(|p| match p {
            Param::Arg {
                ident,
                key,
                doc,
                ty,
            } => Some((ident, key.as_str(), doc.as_str(), ty)),
            _ => None,
        })
    }

    /// The state parameter's type, if the tool takes the state.
    pub fn state(&self) -> Option<&syn::Type> {
        self.params.iter().find_map(|p| match p {
            Param::State { ty } => Some(ty),
            _ => None,
        })
    }

    /// The context parameter's type (without `&`), if it takes one.
    pub fn ctx(&self) -> Option<&syn::Type> {
        self.params.iter().find_map(|p| match p {
            Param::Ctx { ty, .. } => Some(ty),
            _ => None,
        })
    }
}

/// The `#[doc]` attributes of `attrs`.
pub fn doc_attrs(attrs: &[syn::Attribute]) -> Vec<syn::Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .cloned()
        .collect()
}

#[derive(Default)]
struct Options {
    name: Option<String>,
    description: Option<String>,
    krate: Option<syn::Path>,
}

fn parse_options(args: TokenStream, errors: &mut Errors) -> Options {
    let mut out = Options::default();
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if !KEYS.contains(&key.as_str()) {
            let written = path_string(&meta.path);
            errors.push(error(
                &meta.path,
                format!(
                    "unknown option `{written}`{}; {ATTR_HELP}",
                    did_you_mean(&written, KEYS)
                ),
            ));
            return skip_value(&meta);
        }
        if seen.contains(&key) {
            errors.push(error(&meta.path, format!("`{key}` is given twice")));
            return skip_value(&meta);
        }
        seen.push(key.clone());
        if !meta.input.peek(syn::Token![=]) {
            errors.push(error(
                &meta.path,
                format!("`{key}` takes a string: `{key} = \"..\"`"),
            ));
            return skip_value(&meta);
        }
        let value = meta.value()?;
        let lit: syn::Expr = value.parse()?;
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) = &lit
        else {
            errors.push(error(
                &lit,
                format!("`{key}` takes a string: `{key} = \"..\"`"),
            ));
            return Ok(());
        };
        match key.as_str() {
            "name" => match check_name(&text.value()) {
                Ok(()) => out.name = Some(text.value()),
                Err(why) => errors.push(error(text, why)),
            },
            "description" => out.description = Some(text.value()),
            _ => match text.parse::<syn::Path>() {
                Ok(path) => out.krate = Some(path),
                Err(_) => errors.push(error(
                    text,
                    "`crate` takes a path: `crate = \"my_crate::state_agent\"`",
                )),
            },
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, args) {
        errors.push(e);
    }
    out
}

fn path_string(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Providers' rule for tool names (OpenAI's: `^[a-zA-Z0-9_-]{1,64}$`).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err("a tool's name has 1 to 64 characters".to_owned());
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        Some(c) => Err(format!(
            "a tool's name has letters, digits, `_` and `-` only (providers refuse others), not {c:?}"
        )),
        None => Ok(()),
    }
}

fn check_signature(sig: &syn::Signature, errors: &mut Errors) {
    if let Some(param) = sig
        .generics
        .params
        .iter()
        .find(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
    {
        errors.push(error(
            param,
            "a tool cannot be generic: the model is given one schema for its arguments",
        ));
    }
    if let Some(constness) = &sig.constness {
        errors.push(error(constness, "a tool cannot be a `const fn`"));
    }
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        errors.push(error(
            unsafety,
            "a tool cannot be `unsafe`: a model calls it",
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(error(abi, "a tool cannot be `extern`"));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(error(variadic, "a tool cannot be variadic"));
    }
}

/// Which injected parameters were seen already.
#[derive(Default)]
struct Seen {
    state: Option<Span>,
    ctx: Option<Span>,
    call_id: Option<Span>,
}

/// What the last segment of a path type is named, if it is a path.
fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(syn::TypePath {
            qself: None, path, ..
        }) => path.segments.last(),
        syn::Type::Group(g) => last_segment(&g.elem),
        syn::Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

fn named(ty: &syn::Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name)
}

fn classify(typed: &syn::PatType, doc: String, seen: &mut Seen) -> syn::Result<Param> {
    let ty = &*typed.ty;
    let once = |slot: &mut Option<Span>, what: &str| -> syn::Result<()> {
        if slot.is_some() {
            return Err(error(
                ty,
                format!("a tool takes {what} once: remove this parameter"),
            ));
        }
        *slot = Some(ty.span());
        Ok(())
    };
    match ty {
        syn::Type::Reference(r) => {
            let inner = &*r.elem;
            if r.mutability.is_some() {
                return Err(error(
                    ty,
                    "a tool cannot change the state: take it as `&S`, and write through a \
                     returned `Command` (its update)",
                ));
            }
            if named(inner, "Ctx") {
                once(&mut seen.ctx, "the node's context (`Ctx`)")?;
                return Ok(Param::Ctx {
                    ty: inner.clone(),
                    by_ref: true,
                });
            }
            if named(inner, "ToolCallId") {
                once(&mut seen.call_id, "the call's id (`ToolCallId`)")?;
                return Ok(Param::CallId { by_ref: true });
            }
            if named(inner, "str") {
                return Err(error(
                    ty,
                    "a tool's argument is read from the call's JSON: take `String`, not `&str` \
                     (a reference parameter is the graph's state)",
                ));
            }
            if last_segment(inner).is_none() {
                return Err(error(
                    ty,
                    "a tool's argument is read from the call's JSON: take an owned value \
                     (`Vec<T>`, `String`), not a reference (a reference parameter is the \
                     graph's state, `&S`)",
                ));
            }
            once(&mut seen.state, "the state (`&S`)")?;
            Ok(Param::State { ty: inner.clone() })
        }
        _ if named(ty, "Ctx") => {
            once(&mut seen.ctx, "the node's context (`Ctx`)")?;
            Ok(Param::Ctx {
                ty: ty.clone(),
                by_ref: false,
            })
        }
        _ if named(ty, "ToolCallId") => {
            once(&mut seen.call_id, "the call's id (`ToolCallId`)")?;
            Ok(Param::CallId { by_ref: false })
        }
        syn::Type::ImplTrait(_) => Err(error(
            ty,
            "a tool's argument has a concrete type: the model is given its schema",
        )),
        _ => {
            let syn::Pat::Ident(pat) = &*typed.pat else {
                return Err(error(
                    &typed.pat,
                    "name this argument: its name is the field of the call's JSON the model fills",
                ));
            };
            if let Some(at) = &pat.by_ref {
                return Err(error(at, "a tool's argument is taken by value"));
            }
            if let Some((at, _)) = &pat.subpat {
                return Err(error(at, "name this argument with a plain name"));
            }
            Ok(Param::Arg {
                ident: pat.ident.clone(),
                key: pat.ident.unraw().to_string(),
                doc: description_of(&doc),
                ty: ty.clone(),
            })
        }
    }
}

/// `Result<Command<D>, E>`, `Command<D>`, `Result<T, E>` or `T`, as
/// written (a `Result` or `Command` by its last path segment).
fn classify_output(output: &syn::ReturnType) -> Output {
    let syn::ReturnType::Type(_, ty) = output else {
        return Output::Content {
            fallible: false,
            ty: None,
        };
    };
    let ty = (**ty).clone();
    if named(&ty, "Command") {
        return Output::Command { ty };
    }
    if let Some(segment) = last_segment(&ty).filter(|s| s.ident == "Result") {
        let ok = match &segment.arguments {
            syn::PathArguments::AngleBracketed(args) => args.args.first(),
            _ => None,
        };
        if let Some(syn::GenericArgument::Type(ok)) = ok
            && named(ok, "Command")
        {
            return Output::Command { ty };
        }
        return Output::Content {
            fallible: true,
            ty: Some(ty),
        };
    }
    Output::Content {
        fallible: false,
        ty: Some(ty),
    }
}

/// A doc comment as a description: its text before the first heading
/// (`# Errors`, `# Examples`: for people, not for the model), each
/// paragraph's lines joined with spaces, paragraphs with a blank line.
pub fn description_of(docs: &str) -> String {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut fenced = false;
    for line in docs.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') && !fenced {
            break;
        }
        if trimmed.starts_with("```") {
            fenced = !fenced;
        }
        if trimmed.is_empty() {
            if !current.is_empty() {
                paragraphs.push(current.join(" "));
                current.clear();
            }
        } else {
            current.push(trimmed);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current.join(" "));
    }
    paragraphs.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_is_the_prose_before_the_first_heading() {
        let docs = "Get the weather\nfor a city.\n\nIn Celsius.\n\n# Errors\n\nWhen offline.";
        assert_eq!(
            description_of(docs),
            "Get the weather for a city.\n\nIn Celsius."
        );
        assert_eq!(description_of(""), "");
    }

    #[test]
    fn names_follow_the_providers_rule() {
        assert!(check_name("get_weather-2").is_ok());
        assert!(check_name("get weather").is_err());
        assert!(check_name("").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
    }
}
