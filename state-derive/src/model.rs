//! The validated input: what the struct declares, with every attribute
//! checked. All errors are found here, with spans; `expand` only generates.

use crate::attrs::{self, FieldAttrs, Scope};
use darling::{FromDeriveInput, FromField, FromMeta, ast};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// A state struct, ready to expand.
pub struct Model {
    pub ident: syn::Ident,
    pub vis: syn::Visibility,
    pub generics: syn::Generics,
    /// The path to the runtime crate (`::state_core` unless renamed).
    pub krate: syn::Path,
    /// The name of the generated delta type.
    pub delta: syn::Ident,
    /// The hidden companion type holding a delta's rare writes.
    pub more: syn::Ident,
    pub fields: Vec<Field>,
    /// The struct's doc comment, lines joined with `\n`.
    pub docs: String,
    /// `#[state(json_schema)]`: also implement `schemars::JsonSchema`.
    pub json_schema: bool,
}

/// One field of the state.
pub struct Field {
    pub ident: syn::Ident,
    pub vis: syn::Visibility,
    pub ty: syn::Type,
    pub reducer: Reducer,
    pub scope: Scope,
    pub default: Option<syn::Expr>,
    /// The doc comment, lines joined with `\n`.
    pub docs: String,
}

/// How a field reduces its updates.
pub enum Reducer {
    Builtin(Builtin, Span),
    /// `with = path`: a function or a unit-struct reducer value, with the
    /// update type (the field's own type unless `update = Type` is given).
    With {
        path: syn::Path,
        update: Option<syn::Type>,
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

impl Reducer {
    /// Last-write-wins fields: no overwrite marker, and two writes conflict.
    pub fn is_replace(&self) -> bool {
        matches!(self, Reducer::Builtin(Builtin::Replace, _))
    }

    /// How the schema and docs name this reducer.
    pub fn describe(&self) -> String {
        match self {
            Reducer::Builtin(b, _) => b.name().to_owned(),
            Reducer::With { path, .. } => {
                let path = quote::ToTokens::to_token_stream(path).to_string();
                format!("with = {}", path.replace(' ', ""))
            }
        }
    }
}

#[derive(FromDeriveInput)]
#[darling(attributes(state), forward_attrs(derive, doc))]
struct RawState {
    ident: syn::Ident,
    vis: syn::Visibility,
    generics: syn::Generics,
    data: ast::Data<darling::util::Ignored, RawField>,
    attrs: Vec<syn::Attribute>,
    #[darling(rename = "crate")]
    krate: Option<syn::Path>,
    scope: Option<Scope>,
    delta: Option<syn::Ident>,
    json_schema: darling::util::Flag,
}

#[derive(FromField)]
#[darling(forward_attrs(reducer, scope, default, doc, state))]
struct RawField {
    ident: Option<syn::Ident>,
    vis: syn::Visibility,
    ty: syn::Type,
    attrs: Vec<syn::Attribute>,
}

impl FromMeta for Scope {
    fn from_expr(expr: &syn::Expr) -> darling::Result<Self> {
        match expr {
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                attrs::parse_scope_ident(p.path.get_ident().unwrap_or_else(|| unreachable!()))
                    .map_err(|e| e.with_span(expr))
            }
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Self::from_string(&s.value()).map_err(|e| e.with_span(s)),
            _ => Err(
                darling::Error::custom("expected `scope = turn` or `scope = persistent`")
                    .with_span(expr),
            ),
        }
    }

    fn from_string(value: &str) -> darling::Result<Self> {
        attrs::parse_scope_name(value)
    }
}

impl Model {
    /// Parses and validates, reporting every error found at once.
    pub fn from_input(input: &syn::DeriveInput) -> darling::Result<Model> {
        check_shape(input)?;
        let mut errors = darling::Error::accumulator();
        let raw = errors.handle(RawState::from_derive_input(input));
        let Some(raw) = raw else {
            // Field attributes are still worth checking: report them too.
            if let syn::Data::Struct(data) = &input.data {
                for field in &data.fields {
                    errors.handle(attrs::parse_field_attrs(&field.attrs));
                }
            }
            return Err(errors
                .finish()
                .err()
                .unwrap_or_else(|| darling::Error::custom("invalid input")));
        };
        check_no_derive_default(&raw.attrs, &mut errors);
        let default_scope = raw.scope.unwrap_or(Scope::Persistent);
        let fields = match raw.data {
            ast::Data::Struct(fields) => fields.fields,
            ast::Data::Enum(_) => Vec::new(),
        };
        let fields = fields
            .into_iter()
            .filter_map(|f| errors.handle(build_field(f, default_scope)))
            .collect();
        let delta = raw
            .delta
            .unwrap_or_else(|| quote::format_ident!("{}Delta", raw.ident));
        let more = quote::format_ident!("__{}More", delta);
        let krate = raw.krate.unwrap_or_else(|| syn::parse_quote!(::state_core));
        let docs = attrs::doc_text(&raw.attrs);
        errors.finish_with(Model {
            ident: raw.ident,
            vis: raw.vis,
            generics: raw.generics,
            krate,
            delta,
            more,
            fields,
            docs,
            json_schema: raw.json_schema.is_present(),
        })
    }
}

fn build_field(raw: RawField, default_scope: Scope) -> darling::Result<Field> {
    let span = raw.ty.span();
    let ident = raw
        .ident
        .ok_or_else(|| darling::Error::custom("a state field needs a name").with_span(&span))?;
    let FieldAttrs {
        reducer,
        scope,
        default,
        docs,
    } = attrs::parse_field_attrs(&raw.attrs)?;
    Ok(Field {
        ident,
        vis: raw.vis,
        ty: raw.ty,
        reducer: reducer.unwrap_or(Reducer::Builtin(Builtin::Replace, Span::call_site())),
        scope: scope.unwrap_or(default_scope),
        default,
        docs,
    })
}

/// Only structs with named fields can be states; say so at the keyword.
fn check_shape(input: &syn::DeriveInput) -> darling::Result<()> {
    let (what, span) = match &input.data {
        syn::Data::Struct(s) => match &s.fields {
            syn::Fields::Named(_) => return Ok(()),
            syn::Fields::Unnamed(f) => ("a tuple struct", f.span()),
            syn::Fields::Unit => ("a unit struct", input.ident.span()),
        },
        syn::Data::Enum(e) => ("an enum", e.enum_token.span),
        syn::Data::Union(u) => ("a union", u.union_token.span),
    };
    Err(darling::Error::custom(format!(
        "`AgentState` cannot be derived for {what}; it needs a struct with named fields, \
         one per state key: `struct MyState {{ messages: Messages, next: String }}`"
    ))
    .with_span(&span))
}

/// Whether the struct also derives `Default` (visible when that derive is
/// listed after ours).
pub fn derives_default(input: &syn::DeriveInput) -> bool {
    let mut found = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let _ = attr.parse_nested_meta(|meta| {
            found |= meta
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Default");
            Ok(())
        });
    }
    found
}

/// The macro writes `Default` from the `#[default]` attributes, so a derived
/// `Default` would be a second, conflicting impl.
fn check_no_derive_default(attrs: &[syn::Attribute], errors: &mut darling::error::Accumulator) {
    for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Default")
            {
                errors.push(
                    darling::Error::custom(
                        "remove `Default` from this derive: `AgentState` implements `Default` \
                         itself, from the fields' `#[default(...)]` values",
                    )
                    .with_span(&meta.path),
                );
            }
            Ok(())
        });
    }
}
