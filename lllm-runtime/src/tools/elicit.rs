//! Questions a tool asks the user during its call (an MCP server's `elicitation/create`): a form
//! of typed fields, or a URL to visit. They reach the user through the agent's [`Confirm`], the
//! path of confirmations (the terminal, `requires_action` on `lllm serve`); without anyone to ask
//! they are declined.
//!
//! [`Confirm`]: super::Confirm

use serde_json::{Map, Value};

/// Most fields of one form.
pub const MAX_FORM_FIELDS: usize = 64;
/// Most choices of one field.
const MAX_CHOICES: usize = 256;
/// Most characters of a field's name, title or description, and of a choice, kept.
const MAX_LABEL_CHARS: usize = 1000;

/// One question to the user.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ElicitRequest<'a> {
    /// The agent whose tool call asks.
    pub agent: &'a str,
    /// Who asks (``MCP server `files` ``).
    pub source: &'a str,
    /// What the server says it needs, made printable.
    pub message: &'a str,
    /// What to answer.
    pub kind: ElicitKind<'a>,
}

/// What a question asks for.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ElicitKind<'a> {
    /// A form to fill: its fields, and the schema they come from (as the server sent it).
    Form {
        /// The fields, checked and bounded.
        form: &'a Form,
        /// The requested schema.
        schema: &'a Value,
    },
    /// A page the user visits by themself: lllm shows it, never opens it.
    Url {
        /// The address, made printable.
        url: &'a str,
    },
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    /// Answered: the form's values (checked against it), or, for a URL, nothing.
    Accept(Map<String, Value>),
    /// Not answered; the tool goes on without.
    Decline,
    /// The user stopped the whole operation.
    Cancel,
}

/// A form: the fields of a requested schema (an object of strings, numbers, integers, booleans and
/// choices, as MCP allows).
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// Its fields, in the schema's order.
    pub fields: Vec<FormField>,
}

/// One field of a [`Form`].
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property's name.
    pub name: String,
    /// Its title, when the schema has one.
    pub title: Option<String>,
    /// Its description, when the schema has one.
    pub description: Option<String>,
    /// Whether an answer needs it.
    pub required: bool,
    /// Its type.
    pub kind: FieldKind,
    /// The schema's default, when it is a valid value.
    pub default: Option<Value>,
}

/// The type of a [`FormField`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FieldKind {
    /// Text, with its bounds and format (`email`, `uri`, `date`, `date-time`).
    Text {
        /// Fewest characters.
        min_len: Option<u64>,
        /// Most characters.
        max_len: Option<u64>,
        /// Its format.
        format: Option<String>,
    },
    /// A number (`integer`: whole).
    Number {
        /// Whether it must be whole.
        integer: bool,
        /// Smallest value.
        minimum: Option<f64>,
        /// Largest value.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of the choices.
    Choice(Vec<Choice>),
    /// Several of the choices.
    Choices {
        /// What can be chosen.
        options: Vec<Choice>,
        /// Fewest chosen.
        min: Option<u64>,
        /// Most chosen.
        max: Option<u64>,
    },
}

/// One choice of a field: its value, and what the user reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The value sent.
    pub value: String,
    /// Its label, when the schema has one.
    pub label: Option<String>,
}

impl Form {
    /// The form of a requested schema; a schema MCP does not allow (not an object of primitive
    /// properties, too many fields) is refused with why.
    pub fn from_schema(schema: &Value) -> Result<Form, String> {
        let properties = match schema.get("properties") {
            None => return Ok(Form { fields: Vec::new() }),
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err("`properties` must be an object".into()),
        };
        if properties.len() > MAX_FORM_FIELDS {
            return Err(format!(
                "lllm asks at most {MAX_FORM_FIELDS} fields in one form; this one has {}",
                properties.len()
            ));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = properties
            .iter()
            .map(|(name, property)| {
                FormField::of(name, property, required.contains(&name.as_str()))
                    .map_err(|why| format!("field `{}`: {why}", label(name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Form { fields })
    }

    /// `content` checked against the form: an object of its fields, each of its type and
    /// bounds, the required ones present. The problem names the field.
    pub fn check(&self, content: &Value) -> Result<Map<String, Value>, String> {
        let Value::Object(content) = content else {
            return Err("`content` must be a JSON object of the form's fields".into());
        };
        if let Some(unknown) = content
            .keys()
            .find(|k| !self.fields.iter().any(|f| &f.name == *k))
        {
            return Err(format!(
                "`content.{}` is not a field of the form",
                label(unknown)
            ));
        }
        for field in &self.fields {
            match content.get(&field.name) {
                None if field.required => {
                    return Err(format!("`content.{}` is required", field.name))
                }
                None => {}
                Some(value) => field
                    .check(value)
                    .map_err(|why| format!("`content.{}`: {why}", field.name))?,
            }
        }
        Ok(content.clone())
    }
}

impl FormField {
    fn of(name: &str, property: &Value, required: bool) -> Result<FormField, String> {
        let text = |key: &str| property.get(key).and_then(Value::as_str).map(label);
        let kind = FieldKind::of(property)?;
        let mut field = FormField {
            name: name.to_owned(),
            title: text("title"),
            description: text("description"),
            required,
            kind,
            default: None,
        };
        field.default = property
            .get("default")
            .filter(|d| field.check(d).is_ok())
            .cloned();
        Ok(field)
    }

    /// A value the user typed: `None` for an empty line (the field left out, or its default).
    /// Numbers, integers and booleans are read as such; several choices are separated by commas.
    pub fn parse(&self, typed: &str) -> Result<Option<Value>, String> {
        let typed = typed.trim();
        if typed.is_empty() {
            return Ok(None);
        }
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(typed.to_owned()),
            FieldKind::Number { integer: true, .. } => typed
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "a whole number, please".to_owned())?,
            FieldKind::Number { .. } => typed
                .parse::<f64>()
                .ok()
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
                .ok_or("a number, please")?,
            FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("yes or no, please".into()),
            },
            FieldKind::Choice(options) => Value::String(pick(options, typed)?),
            FieldKind::Choices { options, .. } => Value::Array(
                typed
                    .split(',')
                    .map(|one| pick(options, one.trim()).map(Value::String))
                    .collect::<Result<_, _>>()?,
            ),
        };
        self.check(&value)?;
        Ok(Some(value))
    }

    /// Whether `value` is of this field's type and within its bounds.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        match (&self.kind, value) {
            (
                FieldKind::Text {
                    min_len,
                    max_len,
                    format,
                },
                Value::String(s),
            ) => {
                let n = s.chars().count() as u64;
                within(
                    n as f64,
                    min_len.map(|m| m as f64),
                    max_len.map(|m| m as f64),
                )
                .map_err(|b| format!("{b} characters"))?;
                format.as_deref().map_or(Ok(()), |f| formatted(s, f))
            }
            (
                FieldKind::Number {
                    integer,
                    minimum,
                    maximum,
                },
                Value::Number(n),
            ) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                if *integer && !(n.is_i64() || n.is_u64()) {
                    return Err("must be a whole number".into());
                }
                within(x, *minimum, *maximum)
            }
            (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
            (FieldKind::Choice(options), Value::String(s)) => chosen(options, s),
            (FieldKind::Choices { options, min, max }, Value::Array(items)) => {
                within(
                    items.len() as f64,
                    min.map(|m| m as f64),
                    max.map(|m| m as f64),
                )
                .map_err(|b| format!("{b} choices"))?;
                items.iter().try_for_each(|item| match item {
                    Value::String(s) => chosen(options, s),
                    _ => Err("the choices must be strings".into()),
                })
            }
            (kind, _) => Err(format!("must be {}", kind.noun())),
        }
    }
}

impl FieldKind {
    fn of(property: &Value) -> Result<FieldKind, String> {
        let bound = |key: &str| property.get(key).and_then(Value::as_f64);
        let count = |key: &str| property.get(key).and_then(Value::as_u64);
        match property.get("type").and_then(Value::as_str) {
            Some("string") => match choices(property)? {
                Some(options) => Ok(FieldKind::Choice(options)),
                None => Ok(FieldKind::Text {
                    min_len: count("minLength"),
                    max_len: count("maxLength"),
                    format: property.get("format").and_then(Value::as_str).map(label),
                }),
            },
            Some(kind @ ("number" | "integer")) => Ok(FieldKind::Number {
                integer: kind == "integer",
                minimum: bound("minimum"),
                maximum: bound("maximum"),
            }),
            Some("boolean") => Ok(FieldKind::Boolean),
            Some("array") => {
                let items = property.get("items").unwrap_or(&Value::Null);
                let options = choices(items)?.ok_or("an array field must list its choices")?;
                Ok(FieldKind::Choices {
                    options,
                    min: count("minItems"),
                    max: count("maxItems"),
                })
            }
            Some(other) => Err(format!("lllm does not ask for `{}` values", label(other))),
            None => Err("it has no `type`".into()),
        }
    }

    fn noun(&self) -> &'static str {
        match self {
            FieldKind::Text { .. } => "a string",
            FieldKind::Number { integer: true, .. } => "an integer",
            FieldKind::Number { .. } => "a number",
            FieldKind::Boolean => "a boolean",
            FieldKind::Choice(_) => "one of its choices (a string)",
            FieldKind::Choices { .. } => "an array of its choices",
        }
    }
}

/// The choices of a property: `enum` (labelled by `enumNames`), or `oneOf`/`anyOf` of
/// `{const, title}`; `None` when it has none.
fn choices(property: &Value) -> Result<Option<Vec<Choice>>, String> {
    let listed = |key: &str| property.get(key).and_then(Value::as_array);
    let options: Vec<Choice> = if let Some(values) = listed("enum") {
        let names = listed("enumNames");
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Choice {
                value: v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string()),
                label: names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(label),
            })
            .collect()
    } else if let Some(values) = listed("oneOf").or_else(|| listed("anyOf")) {
        values
            .iter()
            .filter_map(|v| {
                Some(Choice {
                    value: v.get("const")?.as_str()?.to_owned(),
                    label: v.get("title").and_then(Value::as_str).map(label),
                })
            })
            .collect()
    } else {
        return Ok(None);
    };
    if options.is_empty() || options.len() > MAX_CHOICES {
        return Err(format!("a field needs 1 to {MAX_CHOICES} choices"));
    }
    Ok(Some(options))
}

/// The choice typed: its value, its label, or its number in the list (from 1).
fn pick(options: &[Choice], typed: &str) -> Result<String, String> {
    let by_number = typed
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| options.get(i));
    by_number
        .or_else(|| options.iter().find(|c| c.value == typed))
        .or_else(|| {
            options.iter().find(|c| {
                c.label
                    .as_deref()
                    .is_some_and(|l| l.eq_ignore_ascii_case(typed))
            })
        })
        .map(|c| c.value.clone())
        .ok_or_else(|| "one of the choices, by its number or its value".to_owned())
}

fn chosen(options: &[Choice], value: &str) -> Result<(), String> {
    if options.iter().any(|c| c.value == value) {
        Ok(())
    } else {
        Err(format!("`{}` is not one of its choices", label(value)))
    }
}

/// `x` within `[min, max]`, or which bound it breaks.
fn within(x: f64, min: Option<f64>, max: Option<f64>) -> Result<(), String> {
    match (min, max) {
        (Some(min), _) if x < min => Err(format!("must be at least {min}")),
        (_, Some(max)) if x > max => Err(format!("must be at most {max}")),
        _ if x.is_nan() => Err("must be a number".into()),
        _ => Ok(()),
    }
}

/// A loose check of the string formats MCP names; other formats are not checked.
fn formatted(s: &str, format: &str) -> Result<(), String> {
    let digits = |part: &str, n: usize| part.len() == n && part.bytes().all(|b| b.is_ascii_digit());
    let date = |d: &str| {
        let parts: Vec<&str> = d.split('-').collect();
        parts.len() == 3 && digits(parts[0], 4) && digits(parts[1], 2) && digits(parts[2], 2)
    };
    let ok = match format {
        "email" => s
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
        "uri" => s
            .split_once("://")
            .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty()),
        "date" => date(s),
        "date-time" => s.split_once('T').is_some_and(|(d, _)| date(d)),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a{} {format}",
            if format == "email" { "n" } else { "" }
        ))
    }
}

/// A label from a server, cut, without control characters (a terminal shows it; the CLI also
/// drops the marks that reorder text).
fn label(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .take(MAX_LABEL_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Form {
        Form::from_schema(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2},
                "age": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                "ok": {"type": "boolean"},
                "pet": {"type": "string", "enum": ["cat", "dog"], "enumNames": ["Cats", "Dogs"]},
                "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
                "fish": {"type": "array", "maxItems": 2,
                         "items": {"anyOf": [{"const": "f1"}, {"const": "f2"}, {"const": "f3"}]}},
                "mail": {"type": "string", "format": "email"}
            },
            "required": ["name"]
        }))
        .expect("form")
    }

    #[test]
    fn content_is_checked_field_by_field() {
        let form = form();
        assert_eq!(form.fields.len(), 7);
        let age = form.fields.iter().find(|f| f.name == "age").expect("age");
        assert_eq!(age.default, Some(json!(42)));
        let good = json!({"name": "Ann", "age": 7, "ok": true, "pet": "dog", "hero": "h1",
                          "fish": ["f1", "f3"], "mail": "a@b.c"});
        assert!(form.check(&good).is_ok());
        for (bad, why) in [
            (json!({"age": 3}), "`content.name` is required"),
            (
                json!({"name": "A"}),
                "`content.name`: must be at least 2 characters",
            ),
            (
                json!({"name": "Ann", "age": 3.5}),
                "`content.age`: must be a whole number",
            ),
            (
                json!({"name": "Ann", "age": 300}),
                "`content.age`: must be at most 100",
            ),
            (
                json!({"name": "Ann", "ok": "yes"}),
                "`content.ok`: must be a boolean",
            ),
            (
                json!({"name": "Ann", "pet": "cow"}),
                "`content.pet`: `cow` is not one of its choices",
            ),
            (
                json!({"name": "Ann", "fish": ["f1", "f2", "f3"]}),
                "`content.fish`: must be at most 2 choices",
            ),
            (
                json!({"name": "Ann", "mail": "nope"}),
                "`content.mail`: must be an email",
            ),
            (
                json!({"name": "Ann", "extra": 1}),
                "`content.extra` is not a field of the form",
            ),
            (json!("Ann"), "`content` must be a JSON object"),
        ] {
            let problem = form.check(&bad).expect_err("refused");
            assert!(problem.starts_with(why), "{problem} / {why}");
        }
    }

    #[test]
    fn typed_answers_are_read_by_type() {
        let form = form();
        let field = |name: &str| form.fields.iter().find(|f| f.name == name).expect("field");
        assert_eq!(field("age").parse("12"), Ok(Some(json!(12))));
        assert!(field("age").parse("twelve").is_err());
        assert!(field("age").parse("0").is_err(), "below its minimum");
        assert_eq!(field("ok").parse("Yes"), Ok(Some(json!(true))));
        assert_eq!(field("pet").parse("2"), Ok(Some(json!("dog"))));
        assert_eq!(field("pet").parse("cats"), Ok(Some(json!("cat"))));
        assert_eq!(field("fish").parse("1, f3"), Ok(Some(json!(["f1", "f3"]))));
        assert_eq!(field("name").parse("  "), Ok(None));
    }

    #[test]
    fn schemas_mcp_does_not_allow_are_refused() {
        let nested = json!({"properties": {"a": {"type": "object"}}});
        assert!(Form::from_schema(&nested)
            .expect_err("refused")
            .starts_with("field `a`: lllm does not ask for `object` values"));
        let many: Map<String, Value> = (0..=MAX_FORM_FIELDS)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        assert!(Form::from_schema(&json!({ "properties": many }))
            .expect_err("refused")
            .contains("at most 64 fields"));
    }
}
