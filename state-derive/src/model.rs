//! The validated input: what the struct declares, with every attribute
//! checked. All errors are found here, with spans; `expand` only generates.

use crate::attrs::{self, FieldAttrs, Scope};
use crate::errors::{Errors, error};
use crate::reducer::{Builtin, Reducer};
use crate::rename::{self, RenameAll};
use proc_macro2::Span;
use syn::ext::IdentExt;
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
    /// The state's own fields (flattened bases excluded).
    pub fields: Vec<Field>,
    /// The `#[state(flatten)]` fields: embedded base states.
    pub bases: Vec<Base>,
    /// The struct's doc comment, lines joined with `\n`.
    pub docs: String,
    /// `#[state(json_schema)]`: also implement `schemars::JsonSchema`.
    pub json_schema: bool,
    /// `#[state(version = N)]`: the schema version of stored data.
    pub version: u32,
    /// `#[state(migrate = path)]`: upgrades older stored data.
    pub migrate: Option<syn::Path>,
    /// `#[state(serde = "user")]`, at its value: the user derives the
    /// state's `Serialize` and `Deserialize`, and the state's JSON goes
    /// through them.
    pub user_serde: Option<proc_macro2::Span>,
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
    /// `#[state(alias = "old")]`: former names of the field.
    pub aliases: Vec<syn::LitStr>,
    /// The field's key: its name, unless `#[serde(rename = "..")]` or the
    /// struct's `#[serde(rename_all = "..")]` says otherwise.
    pub key: String,
    /// Where a clash of the key is reported: the `rename`, else the name.
    pub key_span: Span,
}

/// The item a list field's `push_x` setter takes.
pub enum PushItem<'a> {
    /// `X` of a `Vec<X>` field.
    Of(&'a syn::Type),
    /// `Message`, for a `Messages` field under `add_messages`.
    Message,
}

impl Field {
    /// The item of a list field's `push_x` setter, read off the type as
    /// written: `X` for a `Vec<X>` under `append` or `append_by_id`,
    /// `Message` for `Messages` under `add_messages`. Other collections
    /// (and aliases, and a `Vec` under `add_messages`, whose update is a
    /// projection that need not resolve) have no `push_x`: naming their
    /// item through a projection cost 4% of a crate's compile time.
    pub fn push_item(&self) -> Option<PushItem<'_>> {
        if !self.reducer.pushes() {
            return None;
        }
        let syn::Type::Path(syn::TypePath {
            qself: None, path, ..
        }) = &self.ty
        else {
            return None;
        };
        let last = path.segments.last()?;
        match &last.arguments {
            syn::PathArguments::AngleBracketed(args)
                if last.ident == "Vec"
                    && !matches!(self.reducer, Reducer::Builtin(Builtin::AddMessages, _)) =>
            {
                match args.args.first() {
                    Some(syn::GenericArgument::Type(item)) if args.args.len() == 1 => {
                        Some(PushItem::Of(item))
                    }
                    _ => None,
                }
            }
            syn::PathArguments::None
                if last.ident == "Messages"
                    && matches!(self.reducer, Reducer::Builtin(Builtin::AddMessages, _)) =>
            {
                Some(PushItem::Message)
            }
            _ => None,
        }
    }

    /// The field's type, then the `update = Type` of a custom reducer: the
    /// types the user wrote that values and updates of the field have.
    pub fn written_types(&self) -> impl Iterator<Item = &syn::Type> {
        let update = match &self.reducer {
            Reducer::With {
                update: Some(update),
                ..
            } => Some(&**update),
            _ => None,
        };
        std::iter::once(&self.ty).chain(update)
    }
}

/// A `#[state(flatten)]` field: a base state whose fields are this
/// state's fields.
pub struct Base {
    pub ident: syn::Ident,
    pub vis: syn::Visibility,
    pub ty: syn::Type,
    /// How many of the state's own fields are declared before it.
    pub position: usize,
}

/// A state's own field or flattened base, in declaration order.
pub enum Member<'a> {
    Field(&'a Field),
    Base(&'a Base),
}

impl Model {
    /// Parses and validates, reporting every error found at once.
    pub fn from_input(input: &syn::DeriveInput) -> syn::Result<Model> {
        check_shape(input)?;
        let mut errors = Errors::default();
        let state = errors
            .handle(attrs::parse_state_attrs(&input.attrs))
            .unwrap_or_default();
        check_no_derive_default(&input.attrs, &mut errors);
        let default_scope = state.scope.unwrap_or(Scope::Persistent);
        let user_serde = state.user_serde;
        let rename_all = errors
            .handle(rename::struct_rename_all(
                &input.attrs,
                user_serde.is_some(),
            ))
            .flatten();
        let mut fields: Vec<Field> = Vec::new();
        let mut bases: Vec<Base> = Vec::new();
        if let syn::Data::Struct(data) = &input.data {
            for field in &data.fields {
                let built = build_field(
                    field,
                    default_scope,
                    rename_all.as_ref(),
                    user_serde.is_some(),
                );
                match errors.handle(built) {
                    Some(Built::Field(f)) => fields.push(*f),
                    Some(Built::Base(mut base)) => {
                        base.position = fields.len();
                        bases.push(*base);
                    }
                    None => {}
                }
            }
        }
        let members = fields
            .iter()
            .map(|f| Named {
                ident: &f.ident,
                overwrite: !f.reducer.is_replace(),
                push: f.push_item().is_some(),
            })
            .chain(bases.iter().map(|b| Named {
                ident: &b.ident,
                overwrite: false,
                push: false,
            }))
            .collect::<Vec<_>>();
        check_generated_names(&members, &mut errors);
        check_keys(&fields, &mut errors);
        check_aliases(&fields, &mut errors);
        check_bases(&input.generics, &bases, &mut errors);
        let delta = state
            .delta
            .unwrap_or_else(|| quote::format_ident!("{}Delta", input.ident));
        let krate = state
            .krate
            .unwrap_or_else(|| syn::parse_quote!(::state_core));
        errors.finish_with(Model {
            ident: input.ident.clone(),
            vis: input.vis.clone(),
            generics: input.generics.clone(),
            krate,
            delta,
            fields,
            bases,
            docs: attrs::doc_text(&input.attrs),
            json_schema: state.json_schema,
            version: state.version.unwrap_or(1),
            migrate: state.migrate,
            user_serde,
        })
    }
}

/// A parsed field: the state's own, or a flattened base.
enum Built {
    Field(Box<Field>),
    Base(Box<Base>),
}

fn build_field(
    field: &syn::Field,
    default_scope: Scope,
    rename_all: Option<&RenameAll>,
    user_serde: bool,
) -> syn::Result<Built> {
    let ident = field
        .ident
        .clone()
        .ok_or_else(|| error(&field.ty, "a state field needs a name"))?;
    let rename = rename::field_rename(&field.attrs, user_serde)?;
    let FieldAttrs {
        reducer,
        scope,
        default,
        docs,
        flatten,
        aliases,
    } = attrs::parse_field_attrs(&field.attrs)?;
    if let (Some(_), Some(alias)) = (flatten, aliases.first()) {
        return Err(error(
            alias,
            "a flattened base has no name of its own to rename; put `alias` on the base's fields",
        ));
    }
    if let (Some(_), Some(rename)) = (flatten, &rename) {
        return Err(error(
            rename,
            "a flattened base has no key of its own to rename; its fields keep their keys",
        ));
    }
    if flatten.is_some() {
        return Ok(Built::Base(Box::new(Base {
            ident,
            vis: field.vis.clone(),
            ty: field.ty.clone(),
            position: 0,
        })));
    }
    Ok(Built::Field(Box::new(Field {
        vis: field.vis.clone(),
        ty: field.ty.clone(),
        reducer: reducer.unwrap_or(Reducer::Builtin(Builtin::Replace, Span::call_site())),
        scope: scope.unwrap_or(default_scope),
        default,
        docs,
        aliases,
        key: match (&rename, rename_all) {
            (Some(key), _) => key.value(),
            (None, Some(rule)) => rule.apply(&ident.unraw().to_string()),
            (None, None) => ident.unraw().to_string(),
        },
        key_span: rename.as_ref().map_or(ident.span(), syn::LitStr::span),
        ident,
    })))
}

/// A base must be a concrete state type: its keys, setters and table are
/// the same for every instance of a generic struct. (A base of a type that
/// names the struct's parameters, `Slot<T>`, failed in generated code with
/// seven errors; an instance such as `Slot<u8>` flattens.)
fn check_bases(generics: &syn::Generics, bases: &[Base], errors: &mut Errors) {
    let params = generics
        .type_params()
        .map(|t| t.ident.to_string())
        .collect::<Vec<_>>();
    for base in bases {
        let named = quote::ToTokens::to_token_stream(&base.ty).to_string();
        if params.contains(&named) {
            errors.push(error(
                &base.ty,
                "`#[state(flatten)]` needs a concrete state type, not a type parameter: \
                 the flattened fields must be known to this derive",
            ));
        } else if mentions_param(generics, &base.ty) {
            errors.push(error(
                &base.ty,
                "`#[state(flatten)]` needs a base type that does not use this state's generic \
                 parameters: flatten an instance (`Slot<u8>`, not `Slot<T>`), or hold the base \
                 as a field with `#[reducer(merge)]`",
            ));
        }
    }
}

/// Whether `ty` names one of `generics`' parameters (or `Self`, which only
/// the impls can name).
pub fn mentions_param(generics: &syn::Generics, ty: &impl quote::ToTokens) -> bool {
    let params = generics
        .params
        .iter()
        .map(|param| match param {
            syn::GenericParam::Type(t) => t.ident.to_string(),
            syn::GenericParam::Const(c) => c.ident.to_string(),
            syn::GenericParam::Lifetime(l) => format!("'{}", l.lifetime.ident),
        })
        .chain(["Self".to_owned()])
        .collect::<Vec<_>>();
    mentions(ty.to_token_stream(), &params, &mut false)
}

/// Whether `ty` names `Self`.
pub fn mentions_self(ty: &impl quote::ToTokens) -> bool {
    mentions(ty.to_token_stream(), &["Self".to_owned()], &mut false)
}

/// Whether `tokens` name one of `params` (`'a` for a lifetime).
fn mentions(tokens: proc_macro2::TokenStream, params: &[String], after_quote: &mut bool) -> bool {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Group(group) => {
                if mentions(group.stream(), params, after_quote) {
                    return true;
                }
            }
            proc_macro2::TokenTree::Punct(punct) => {
                *after_quote = punct.as_char() == '\'';
                continue;
            }
            proc_macro2::TokenTree::Ident(ident) => {
                let name = if *after_quote {
                    format!("'{ident}")
                } else {
                    ident.to_string()
                };
                if params.contains(&name) {
                    return true;
                }
            }
            proc_macro2::TokenTree::Literal(_) => {}
        }
        *after_quote = false;
    }
    false
}

impl Model {
    /// The first own field with the same type and reducer as field `index`
    /// (`index` itself when none comes before it): such fields share what
    /// is generated once per type, their reducer function, its where-clause
    /// fact and their nested-schema arm.
    pub fn first_alike(&self, index: usize) -> usize {
        let field = &self.fields[index];
        self.fields[..index]
            .iter()
            .position(|other| other.ty == field.ty && other.reducer.same_as(&field.reducer))
            .unwrap_or(index)
    }

    /// For each own field, the first own field of the same type (itself
    /// when none comes before it): such fields share what is decided by
    /// the type alone, an autoref probe's answer.
    pub fn first_of_each_type(&self) -> Vec<usize> {
        (0..self.fields.len())
            .map(|i| {
                let ty = &self.fields[i].ty;
                self.fields[..i]
                    .iter()
                    .position(|other| other.ty == *ty)
                    .unwrap_or(i)
            })
            .collect()
    }

    /// The own fields and the bases, in declaration order.
    pub fn members(&self) -> Vec<Member<'_>> {
        let mut out = Vec::with_capacity(self.fields.len() + self.bases.len());
        let mut bases = self.bases.iter().peekable();
        for (i, field) in self.fields.iter().enumerate() {
            while let Some(base) = bases.next_if(|b| b.position == i) {
                out.push(Member::Base(base));
            }
            out.push(Member::Field(field));
        }
        out.extend(bases.map(Member::Base));
        out
    }

    /// `<Base as State>::Delta`, the delta slot type of a base.
    pub fn base_delta(&self, base: &Base) -> proc_macro2::TokenStream {
        let krate = &self.krate;
        let ty = &base.ty;
        quote::quote!(<#ty as #krate::__private::State>::Delta)
    }
}

/// The methods of `Delta` a delta is used through: a field's setter of the
/// same name would shadow them.
const DELTA_METHODS: [&str; 4] = ["merge", "fields", "is_empty", "from_json"];

/// A field or flattened base, as the delta's methods name it: its setter
/// has its name, and it may have an `overwrite_` and a `push_` setter.
struct Named<'a> {
    ident: &'a syn::Ident,
    overwrite: bool,
    push: bool,
}

/// Field names the generated delta needs for itself: the methods of
/// `Delta`, the `get_x` accessor of every field or flattened base `x`, the
/// `overwrite_x` setter of a reducer field `x` and the `push_x` setter of
/// a list field `x`.
fn check_generated_names(members: &[Named<'_>], errors: &mut Errors) {
    for member in members {
        let ident = member.ident;
        let name = ident.unraw().to_string();
        let clash = |prefix: &str, has: fn(&Named<'_>) -> bool| {
            let base = name.strip_prefix(prefix)?;
            members
                .iter()
                .find(|other| has(other) && other.ident.unraw() == base)
                .map(|other| other.ident.unraw().to_string())
        };
        let message = if DELTA_METHODS.contains(&name.as_str()) {
            Some(format!(
                "a field named `{name}` would shadow `Delta::{name}` on the generated delta \
                 (its setter has the field's name); rename this field"
            ))
        } else if let Some(other) = clash("get_", |_| true) {
            Some(format!(
                "the setter of this field, `{name}`, would clash with the accessor that reads \
                 what a delta writes to `{other}`; rename this field"
            ))
        } else if let Some(other) = clash("overwrite_", |m| m.overwrite) {
            Some(format!(
                "the setter of this field, `{name}`, would clash with the one that \
                 overwrites the reducer field `{other}` (bypassing its reducer); rename this field"
            ))
        } else {
            clash("push_", |m| m.push).map(|other| {
                format!(
                    "the setter of this field, `{name}`, would clash with the one that adds \
                     one item to the list field `{other}`; rename this field"
                )
            })
        };
        if let Some(message) = message {
            errors.push(error(ident, message));
        }
    }
}

/// Two fields with one key would be one entry in JSON and one `get` key.
fn check_keys(fields: &[Field], errors: &mut Errors) {
    for (i, field) in fields.iter().enumerate() {
        if let Some(first) = fields[..i].iter().find(|f| f.key == field.key) {
            errors.push(error(
                &field.key_span,
                format!(
                    "the key `{}` is already the key of field `{}`; give each field its own \
                     key (`#[serde(rename = \"...\")]`)",
                    field.key,
                    first.ident.unraw()
                ),
            ));
        }
    }
}

/// A former name must not be any field's key or another field's former
/// name: stored data would be ambiguous.
fn check_aliases(fields: &[Field], errors: &mut Errors) {
    let mut seen: Vec<String> = Vec::new();
    for field in fields {
        for alias in &field.aliases {
            let name = alias.value();
            let taken = fields.iter().find(|f| f.key == name);
            let message = match taken {
                Some(f) if f.ident == field.ident => {
                    format!("`{name}` is this field's own name; an alias is a former name")
                }
                Some(_) => format!(
                    "`{name}` is the name of another field; stored data under it would be ambiguous"
                ),
                None if seen.contains(&name) => {
                    format!(
                        "`{name}` is already a former name of a field; each alias names one field"
                    )
                }
                None => {
                    seen.push(name);
                    continue;
                }
            };
            errors.push(error(alias, message));
        }
    }
}

/// Only structs with named fields can be states; say so at the keyword.
fn check_shape(input: &syn::DeriveInput) -> syn::Result<()> {
    let (what, span) = match &input.data {
        syn::Data::Struct(s) => match &s.fields {
            syn::Fields::Named(_) => return Ok(()),
            syn::Fields::Unnamed(f) => ("a tuple struct", f.span()),
            syn::Fields::Unit => ("a unit struct", input.ident.span()),
        },
        syn::Data::Enum(e) => ("an enum", e.enum_token.span),
        syn::Data::Union(u) => ("a union", u.union_token.span),
    };
    Err(error(
        &span,
        format!(
            "`AgentState` cannot be derived for {what}; it needs a struct with named fields, \
             one per state key: `struct MyState {{ messages: Messages, next: String }}`"
        ),
    ))
}

/// Whether the struct also derives `Default` in an attribute the macro can
/// see: a `#[derive(...)]` written after `#[derive(AgentState)]`. One written
/// before it, or beside it in the same list, has been taken off the item by
/// then; rustc reports that one as conflicting implementations of `Default`.
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
fn check_no_derive_default(attrs: &[syn::Attribute], errors: &mut Errors) {
    for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Default")
            {
                errors.push(error(
                    &meta.path,
                    "remove `Default` from this derive: `AgentState` implements `Default` \
                     itself, from the fields' `#[default(...)]` values",
                ));
            }
            Ok(())
        });
    }
}
