//! What `#[tool]`'s generated code calls: a tool's parameters described
//! (the JSON Schema the model sees) and read back from a call's
//! arguments, field by field, each error naming its field; and the
//! conversions of a function's return into a [`ToolOutput`]. Ordinary
//! Rust, tested once, so the generated code stays thin.

use crate::error::BoxError;
use crate::tool::{ArgError, ArgsError, ToolError, ToolOutput};
use crate::tool_spec::ToolSpec;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use state_graph::Command;
use std::any::Any;

/// A type a tool's parameter may have: read from the call's JSON
/// (`Deserialize`) and described to the model (`schemars::JsonSchema`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's argument",
    label = "the model cannot fill this parameter",
    note = "a tool's argument is read from the call's JSON and described to the model: derive `serde::Deserialize` and `schemars::JsonSchema` on it",
    note = "the graph's state is taken as `&S`, the node's context as `Ctx<C>`, the call's id as `ToolCallId`: those are not arguments"
)]
pub trait ToolArg: DeserializeOwned + JsonSchema + Send + 'static {}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> ToolArg for T {}

/// One parameter of a tool, as the model sees it and as a call's
/// arguments are read: its name, doc, schema, and how to read it. Made
/// once per parameter (in a `static`), the one place generated code
/// needs its type to be a [`ToolArg`]: one error per wrong type.
#[derive(Clone, Copy)]
pub struct Param {
    name: &'static str,
    doc: &'static str,
    schema: fn(&mut SchemaGenerator) -> Schema,
    decode: fn(Value) -> Result<Decoded, ArgError>,
    optional: fn() -> bool,
}

/// A decoded argument, typed again by [`Args::take`].
type Decoded = Box<dyn Any + Send>;

impl Param {
    /// The parameter `name` of type `T`, described by `doc`.
    pub const fn new<T: ToolArg>(name: &'static str, doc: &'static str) -> Param {
        Param {
            name,
            doc,
            schema: schema_of::<T>,
            decode: decode::<T>,
            optional: accepts_null::<T>,
        }
    }
}

fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// `value` as a `T`; the error names the path inside it that is wrong.
fn decode<T: ToolArg>(value: Value) -> Result<Decoded, ArgError> {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(value) => Ok(Box::new(value)),
        Err(e) => {
            let path = e.path().to_string();
            Err(ArgError {
                field: if path == "." { String::new() } else { path },
                message: e.into_inner().to_string(),
            })
        }
    }
}

/// Whether a missing `T` reads as a value (`None` for an `Option`): then
/// the parameter is not required.
fn accepts_null<T: DeserializeOwned>() -> bool {
    T::deserialize(Value::Null).is_ok()
}

/// The tool's spec: `parameters` is a JSON Schema object with one
/// property per parameter (its doc comment as its description), nested
/// types inlined (providers differ in their support of `$ref`), every
/// parameter that cannot be missing `required`, and no other property
/// (`additionalProperties: false`, which OpenAI's strict mode needs).
pub fn spec(name: &str, description: &str, params: &[Param]) -> ToolSpec {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .for_deserialize()
        .into_generator();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params {
        let mut schema = (param.schema)(&mut generator);
        if !param.doc.is_empty() {
            schema.insert("description".into(), json!(param.doc));
        }
        properties.insert(param.name.to_owned(), schema.to_value());
        if !(param.optional)() {
            required.push(json!(param.name));
        }
    }
    let mut parameters = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    // Recursive types stay references, to definitions given here.
    let definitions = generator.take_definitions(true);
    if !definitions.is_empty() {
        parameters["$defs"] = Value::Object(definitions);
    }
    ToolSpec::new(name, description, parameters)
}

/// A call's arguments being read, parameter by parameter: every error
/// is kept, so the model hears of all of them at once.
pub struct Args {
    map: Map<String, Value>,
    errors: Vec<ArgError>,
    params: &'static [Param],
}

impl Args {
    /// The arguments `value` of a tool whose parameters are `params`: an
    /// object (`null` reads as an empty one).
    pub fn new(value: Value, params: &'static [Param]) -> Result<Args, ToolError> {
        let map = match value {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::InvalidArgs(ArgsError {
                    errors: vec![ArgError {
                        field: String::new(),
                        message: format!("expected an object of arguments, got {}", kind(&other)),
                    }],
                }));
            }
        };
        Ok(Args {
            map,
            errors: Vec::new(),
            params,
        })
    }

    /// Argument `index` (a `T`, the type its [`Param`] was made with), or
    /// `None` with its error kept: a missing one reads as JSON `null` (so
    /// an `Option` is `None`), and is `missing` when that does not fit.
    pub fn take<T: Any>(&mut self, index: usize) -> Option<T> {
        let param = &self.params[index];
        let (value, missing) = match self.map.remove(param.name) {
            Some(value) => (value, false),
            None => (Value::Null, true),
        };
        match (param.decode)(value) {
            Ok(value) => value.downcast::<T>().ok().map(|v| *v),
            Err(_) if missing => {
                self.errors.push(ArgError {
                    field: param.name.to_owned(),
                    message: "missing".to_owned(),
                });
                None
            }
            Err(mut e) => {
                e.field = if e.field.is_empty() {
                    param.name.to_owned()
                } else {
                    format!("{}.{}", param.name, e.field)
                };
                self.errors.push(e);
                None
            }
        }
    }

    /// Ok when every argument read and none is unknown; otherwise every
    /// error, in the order of the parameters, unknown fields last.
    pub fn finish(mut self) -> Result<(), ToolError> {
        for key in self.map.keys() {
            let expected = if self.params.is_empty() {
                "the tool takes no arguments".to_owned()
            } else {
                format!(
                    "expected one of {}",
                    self.params
                        .iter()
                        .map(|p| format!("`{}`", p.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            self.errors.push(ArgError {
                field: key.clone(),
                message: format!("unknown field; {expected}"),
            });
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ToolError::InvalidArgs(ArgsError {
                errors: self.errors,
            }))
        }
    }
}

/// A value [`Args::take`] read, once [`Args::finish`] said all did.
pub fn got<T>(value: Option<T>) -> Result<T, ToolError> {
    value.ok_or_else(|| ToolError::failed("an argument was not read"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A tool's error type: any `std::error::Error + Send + Sync + 'static`,
/// a `String` or `&str`, an `anyhow::Error` (anything `Into<BoxError>`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error",
    label = "the error of this tool",
    note = "a tool's error is any `std::error::Error + Send + Sync + 'static`, a `String` or an `anyhow::Error`: its text is what the model reads"
)]
pub trait IntoToolError {
    /// The error, boxed.
    fn into_tool_error(self) -> ToolError;
}

impl<E: Into<BoxError>> IntoToolError for E {
    fn into_tool_error(self) -> ToolError {
        ToolError::Failed(self.into())
    }
}

/// The content of a tool's answer: a string as it is, anything else as
/// its JSON text.
pub fn content<D, T: Serialize>(value: T) -> Result<ToolOutput<D>, ToolError> {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => Ok(ToolOutput::content(text)),
        Ok(other) => Ok(ToolOutput::content(other.to_string())),
        Err(e) => Err(ToolError::failed(format!(
            "the tool's result cannot be written as JSON: {e}"
        ))),
    }
}

/// [`content`] of a fallible tool's value, or its error.
pub fn fallible<D, T: Serialize, E: IntoToolError>(
    result: Result<T, E>,
) -> Result<ToolOutput<D>, ToolError> {
    match result {
        Ok(value) => content(value),
        Err(e) => Err(e.into_tool_error()),
    }
}

/// What a tool returning a [`Command`] may return: `Command<D>` or a
/// `Result` of it, `D` the graph's delta.
#[diagnostic::on_unimplemented(
    message = "this tool's `{Self}` does not fit a graph whose delta is `{D}`",
    label = "the return of this tool",
    note = "a tool returning a Command fits graphs whose delta it writes: `Command<{D}>`, or a `Result` of it"
)]
pub trait ToolReturn<D> {
    /// The command as the tool's output.
    fn into_output(self) -> Result<ToolOutput<D>, ToolError>;
}

impl<D> ToolReturn<D> for Command<D> {
    fn into_output(self) -> Result<ToolOutput<D>, ToolError> {
        Ok(ToolOutput::Command(self))
    }
}

impl<D, E: IntoToolError> ToolReturn<D> for Result<Command<D>, E> {
    fn into_output(self) -> Result<ToolOutput<D>, ToolError> {
        match self {
            Ok(command) => Ok(ToolOutput::Command(command)),
            Err(e) => Err(e.into_tool_error()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Range {
        start: u32,
        end: u32,
    }

    fn errors(result: Result<(), ToolError>) -> Vec<String> {
        match result {
            Err(ToolError::InvalidArgs(e)) => e.errors.iter().map(ToString::to_string).collect(),
            other => panic!("{other:?}"),
        }
    }

    static PARAMS: [Param; 4] = [
        Param::new::<String>("city", ""),
        Param::new::<Range>("range", ""),
        Param::new::<u8>("days", ""),
        Param::new::<Option<String>>("units", ""),
    ];

    #[test]
    fn every_wrong_field_is_named_with_its_path() {
        let mut args = Args::new(
            json!({"city": 3, "range": {"start": 1, "end": "x"}, "extra": true}),
            &PARAMS,
        )
        .unwrap();
        assert!(args.take::<String>(0).is_none());
        assert!(args.take::<Range>(1).is_none());
        assert!(args.take::<u8>(2).is_none());
        assert_eq!(args.take::<Option<String>>(3), Some(None));
        assert_eq!(
            errors(args.finish()),
            [
                "city: invalid type: integer `3`, expected a string",
                "range.end: invalid type: string \"x\", expected u32",
                "days: missing",
                "extra: unknown field; expected one of `city`, `range`, `days`, `units`",
            ]
        );
    }

    #[test]
    fn arguments_that_are_not_an_object_are_one_error() {
        let Err(ToolError::InvalidArgs(e)) = Args::new(json!([1]), &[]) else {
            panic!()
        };
        assert_eq!(
            e.to_string(),
            "expected an object of arguments, got an array"
        );
        assert!(Args::new(Value::Null, &[]).unwrap().finish().is_ok());
        let mut args = Args::new(json!({"units": null}), &PARAMS[3..]).unwrap();
        assert_eq!(args.take::<Option<String>>(0), Some(None));
    }

    #[test]
    fn a_string_is_the_content_as_is_anything_else_its_json() {
        let text = |out: Result<ToolOutput<()>, ToolError>| match out {
            Ok(ToolOutput::Content(c)) => c.text(),
            _ => panic!(),
        };
        assert_eq!(text(content("sunny")), "sunny");
        assert_eq!(text(content(json!({"t": 21}))), r#"{"t":21}"#);
        assert_eq!(text(content(21)), "21");
        let Err(e) = fallible::<(), String, _>(Err("no such city")) else {
            panic!()
        };
        assert_eq!(e.to_string(), "no such city");
    }
}
