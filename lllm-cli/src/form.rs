//! A server's question on the terminal (MCP elicitation): its message, then one prompt per field of
//! the requested form, each answer read by the field's type and checked before the next; or a URL
//! shown for the user to open (lllm never opens it).

use std::io::{BufRead, Write};

use lllm_runtime::tools::{ElicitKind, ElicitRequest, Elicited, FieldKind, Form, FormField};
use serde_json::{Map, Value};

/// Tries at one prompt before the question is cancelled.
const MAX_TRIES: usize = 3;

/// A question, owned, to be asked on a blocking thread.
pub(crate) struct Question {
    heading: String,
    kind: Kind,
}

enum Kind {
    Form(Form),
    Url(String),
}

impl Question {
    pub(crate) fn of(request: &ElicitRequest<'_>) -> Question {
        let heading = format!(
            "\nlllm: {} asks (for agent `{}`):\n  {}\n",
            request.source,
            request.agent,
            crate::screen::visible(request.message).replace('\n', "\n  ")
        );
        let kind = match request.kind {
            ElicitKind::Form { form, .. } => Kind::Form(form.clone()),
            ElicitKind::Url { url } => Kind::Url(crate::screen::visible(url)),
            _ => Kind::Url(String::new()),
        };
        Question { heading, kind }
    }

    /// Asks on stderr and reads stdin; end of input or a read error cancels.
    pub(crate) fn ask(&self) -> Elicited {
        let mut terminal = Terminal {
            out: std::io::stderr().lock(),
            input: std::io::stdin().lock(),
        };
        if write!(terminal.out, "{}", self.heading).is_err() {
            return Elicited::Cancel;
        }
        match &self.kind {
            Kind::Url(url) => terminal.url(url).unwrap_or(Elicited::Cancel),
            Kind::Form(form) => terminal.form(form).unwrap_or(Elicited::Cancel),
        }
    }
}

struct Terminal<W, R> {
    out: W,
    input: R,
}

/// The user stopped answering (end of input, a read error, too many unclear answers).
struct Gone;

impl<W: Write, R: BufRead> Terminal<W, R> {
    /// One line after `prompt`, trimmed.
    fn line(&mut self, prompt: &str) -> Result<String, Gone> {
        write!(self.out, "{prompt}")
            .and_then(|()| self.out.flush())
            .map_err(|_| Gone)?;
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                writeln!(self.out).ok();
                Err(Gone)
            }
            Ok(_) => Ok(line.trim().to_owned()),
        }
    }

    /// Yes, no or cancel; `yes` names what yes does.
    fn choose(&mut self, yes: &str) -> Result<Elicited, Gone> {
        for _ in 0..MAX_TRIES {
            let prompt = format!("Answer? [y]es ({yes}) / [n]o (decline) / [c]ancel: ");
            match self.line(&prompt)?.to_ascii_lowercase().as_str() {
                "y" | "yes" => return Ok(Elicited::Accept(Map::new())),
                "n" | "no" => return Ok(Elicited::Decline),
                "c" | "cancel" => return Ok(Elicited::Cancel),
                _ => {}
            }
        }
        Err(Gone)
    }

    fn url(&mut self, url: &str) -> Result<Elicited, Gone> {
        writeln!(
            self.out,
            "  Open this address yourself (lllm does not open it):\n  {url}"
        )
        .map_err(|_| Gone)?;
        self.choose("I have done it")
    }

    fn form(&mut self, form: &Form) -> Result<Elicited, Gone> {
        let answer = self.choose("fill the form")?;
        if answer != Elicited::Accept(Map::new()) {
            return Ok(answer);
        }
        let mut content = Map::new();
        for field in &form.fields {
            if let Some(value) = self.field(field)? {
                content.insert(field.name.clone(), value);
            }
        }
        Ok(Elicited::Accept(content))
    }

    /// One field's value: typed, or its default on an empty line; `None` when an optional field
    /// is left empty.
    fn field(&mut self, field: &FormField) -> Result<Option<Value>, Gone> {
        writeln!(self.out, "{}", describe(field)).map_err(|_| Gone)?;
        for _ in 0..MAX_TRIES {
            let typed = self.line(&format!("  {}: ", field.name))?;
            match field.parse(&typed) {
                Ok(Some(value)) => return Ok(Some(value)),
                Ok(None) if field.default.is_some() => return Ok(field.default.clone()),
                Ok(None) if !field.required => return Ok(None),
                Ok(None) => writeln!(self.out, "  (required)"),
                Err(why) => writeln!(self.out, "  ({why})"),
            }
            .map_err(|_| Gone)?;
        }
        Err(Gone)
    }
}

/// What the user reads before typing a field: its title and description, its type, its choices.
fn describe(field: &FormField) -> String {
    let shown = |s: &str| crate::screen::visible(s);
    let mut text = format!("- {}", shown(field.title.as_deref().unwrap_or(&field.name)));
    if let Some(description) = &field.description {
        text.push_str(&format!(": {}", shown(description)));
    }
    let kind = match &field.kind {
        FieldKind::Text {
            format: Some(f), ..
        } => format!("text, {}", shown(f)),
        FieldKind::Text { .. } => "text".to_owned(),
        FieldKind::Number { integer: true, .. } => "whole number".to_owned(),
        FieldKind::Number { .. } => "number".to_owned(),
        FieldKind::Boolean => "yes or no".to_owned(),
        FieldKind::Choice(_) => "one choice, by number or value".to_owned(),
        FieldKind::Choices { .. } => "choices separated by commas".to_owned(),
        _ => "value".to_owned(),
    };
    let need = if field.required {
        "required"
    } else {
        "optional"
    };
    text.push_str(&format!(" ({kind}, {need}"));
    if let Some(default) = &field.default {
        text.push_str(&format!("; empty for {}", shown(&default.to_string())));
    }
    text.push(')');
    if let FieldKind::Choice(options) | FieldKind::Choices { options, .. } = &field.kind {
        for (i, choice) in options.iter().enumerate() {
            let label = choice.label.as_deref().unwrap_or(&choice.value);
            text.push_str(&format!("\n    {}) {}", i + 1, shown(label)));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(form: &Form, typed: &str) -> (Option<Elicited>, String) {
        let mut terminal = Terminal {
            out: Vec::new(),
            input: typed.as_bytes(),
        };
        let answer = terminal.form(form).ok();
        (answer, String::from_utf8(terminal.out).expect("text"))
    }

    #[test]
    fn a_form_is_filled_field_by_field_and_wrong_answers_are_asked_again() {
        let form = Form::from_schema(&json!({"properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "maximum": 99, "default": 5},
            "pet": {"type": "string", "enum": ["cat", "dog"]},
            "note": {"type": "string"}
        }, "required": ["name", "pet"]}))
        .expect("form");
        // Fields in the schema's order (age, name, note, pet).
        let (got, shown) = answer(&form, "y\nold\n120\n\n\nAnn\n\n2\n");
        let expected: Map<String, Value> =
            serde_json::from_value(json!({"name": "Ann", "age": 5, "pet": "dog"})).expect("map");
        assert_eq!(got, Some(Elicited::Accept(expected)));
        assert!(shown.contains("(required)"), "{shown}");
        assert!(shown.contains("(a whole number, please)"), "{shown}");
        assert!(shown.contains("(must be at most 99)"), "{shown}");
        assert!(shown.contains("    2) dog"), "{shown}");
        assert_eq!(answer(&form, "n\n").0, Some(Elicited::Decline));
        assert_eq!(answer(&form, "c\n").0, Some(Elicited::Cancel));
        assert_eq!(answer(&form, "y\nAnn\n").0, None, "end of input");
    }
}
