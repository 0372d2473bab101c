//! Tools as the model sees them, and command tools as a tactic file declares them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest tool name the OpenAI API accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Default time a command tool may run.
pub const DEFAULT_COMMAND_TIMEOUT_S: f64 = 30.0;
/// Default limit of a command tool's output.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// Largest output limit a command tool may set: output is held in memory.
pub const MAX_OUTPUT_BYTES_LIMIT: usize = 64 * 1024 * 1024;

/// What the model is told about a tool: its name, what it does, and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name, made of `[A-Za-z0-9_-]`, at most 64 characters.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments; an object schema.
    pub parameters: Value,
}

impl ToolSpec {
    /// The entry of the request's `tools` list.
    pub fn to_request_json(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// Why a tool name is not acceptable, if it is not.
pub fn tool_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > MAX_TOOL_NAME_LEN {
        Some(format!(
            "`{name}` must have 1 to {MAX_TOOL_NAME_LEN} characters"
        ))
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Some(format!(
            "`{name}` may only contain letters, digits, `_` and `-`"
        ))
    } else {
        None
    }
}

/// Why `schema` is not an object schema, if it is not.
pub fn object_schema_problem(schema: &Value) -> Option<String> {
    let Some(map) = schema.as_object() else {
        return Some(
            "must be a JSON Schema mapping such as {type: object, properties: {...}}".into(),
        );
    };
    match map.get("type") {
        Some(Value::String(t)) if t == "object" => None,
        _ => Some("must be an object schema: `type: object`".into()),
    }
}

/// A tool that runs a program, as declared under an agent's `tools:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandToolConfig {
    /// Tool name, `[A-Za-z0-9_-]`.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// The program and its arguments. Items may use `{{ arg }}` to insert an argument; no shell is used.
    pub command: Vec<String>,
    /// Seconds the program may run, within [`SecondsRange::TOOL`](crate::SecondsRange::TOOL)
    /// (a millisecond to a day).
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Most bytes of output kept; more is an error result.
    #[serde(default = "default_max_output")]
    pub max_output_bytes: usize,
    /// Environment variables passed to the program besides `PATH`, `HOME`, `LANG`, `LC_ALL`, `LC_CTYPE`,
    /// `TZ` and `TMPDIR` (the environment is otherwise cleared, so credentials do not reach tools).
    #[serde(default)]
    pub env: Vec<String>,
    /// Ask the user before each call (see the runtime's confirmation callback).
    #[serde(default)]
    pub confirm: bool,
    /// Running a call again has the same effect as running it once: a call a crash interrupted runs
    /// again when the run is resumed.
    #[serde(default)]
    pub idempotent: bool,
    /// Where the program runs: the tactic file's folder when loaded from one, else the current one.
    #[serde(skip)]
    pub working_dir: Option<std::path::PathBuf>,
}

pub(crate) fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn default_timeout() -> f64 {
    DEFAULT_COMMAND_TIMEOUT_S
}

fn default_max_output() -> usize {
    DEFAULT_MAX_OUTPUT_BYTES
}

impl CommandToolConfig {
    /// What the model is told about this tool.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }

    /// Checks everything that can be checked before running: the name, the schema, the command, the
    /// limits, and that argv templates parse and name only declared arguments.
    pub fn validate(&self) -> Result<(), ToolConfigError> {
        let err = |field: &str, problem: String| {
            Err(ToolConfigError {
                tool: self.name.clone(),
                field: field.to_owned(),
                problem,
            })
        };
        if let Some(problem) = tool_name_problem(&self.name) {
            return err("name", problem);
        }
        if let Some(problem) = object_schema_problem(&self.parameters) {
            return err("parameters", problem);
        }
        if let Err(e) = crate::schema::Schema::compile(&self.parameters) {
            return err("parameters", e.to_string());
        }
        if self.command.is_empty() || self.command[0].trim().is_empty() {
            return err(
                "command",
                "must name a program: a list such as [python3, count.py]".into(),
            );
        }
        if let Err(e) = crate::SecondsRange::TOOL.check(self.timeout_s) {
            return err("timeout_s", e.to_string());
        }
        if self.max_output_bytes == 0 || self.max_output_bytes > MAX_OUTPUT_BYTES_LIMIT {
            return err(
                "max_output_bytes",
                format!("must be from 1 to {MAX_OUTPUT_BYTES_LIMIT} bytes"),
            );
        }
        if self.command[0].contains("{{") || self.command[0].contains("{%") {
            return err(
                "command[0]",
                "the program must be written out: templates may only fill its arguments".into(),
            );
        }
        if let Some(bad) = self.env.iter().find(|name| {
            name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) {
            return err(
                "env",
                format!("`{bad}` is not an environment variable name"),
            );
        }
        self.check_templates()
    }

    /// Checks that the program can be started as the tool would start it: a name without `/` must be an
    /// executable file in a folder of `PATH`; a path with `/` must be an executable file, relative to
    /// the tool's working folder. A tactic loader calls it; it reads the file system.
    pub fn check_program(&self) -> Result<(), ToolConfigError> {
        let Some(program) = self.command.first() else {
            return Ok(()); // `validate` reports it
        };
        match program_problem(program, self.working_dir.as_deref()) {
            None => Ok(()),
            Some(problem) => Err(ToolConfigError {
                tool: self.name.clone(),
                field: "command[0]".into(),
                problem,
            }),
        }
    }

    /// Each argv item must parse and use only declared arguments.
    fn check_templates(&self) -> Result<(), ToolConfigError> {
        let declared: Vec<&str> = self
            .parameters
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let env = minijinja::Environment::new();
        for (i, item) in self.command.iter().enumerate() {
            let err = |problem: String| ToolConfigError {
                tool: self.name.clone(),
                field: format!("command[{i}]"),
                problem,
            };
            let template = env
                .template_from_str(item)
                .map_err(|e| err(format!("is not a valid template: {e}")))?;
            let mut used: Vec<String> = template.undeclared_variables(false).into_iter().collect();
            used.sort();
            if let Some(unknown) = used.iter().find(|v| !declared.contains(&v.as_str())) {
                return Err(err(format!(
                    "uses `{unknown}`, which is not among the parameters' properties ({})",
                    declared.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// Why `program` cannot be started from `working_dir`, if it cannot: a name without `/` must be an
/// executable file in a folder of `PATH`; a path with `/` an executable file, relative to the folder.
pub(crate) fn program_problem(
    program: &str,
    working_dir: Option<&std::path::Path>,
) -> Option<String> {
    if program.contains('\0') {
        return Some("contains a NUL character".into());
    }
    if program.contains('/') {
        let path = std::path::Path::new(program);
        let path = match working_dir {
            Some(dir) if path.is_relative() && !dir.as_os_str().is_empty() => dir.join(path),
            _ => path.to_path_buf(),
        };
        return executable(&path)
            .err()
            .map(|why| format!("`{}` {why}", path.display()));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .any(|dir| executable(&dir.join(program)).is_ok());
    (!found).then(|| format!("`{program}` is not an executable program in any folder of PATH"))
}

/// Whether `path` is an executable regular file (symbolic links followed), and why not.
fn executable(path: &std::path::Path) -> Result<(), &'static str> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist",
        std::io::ErrorKind::PermissionDenied => "cannot be reached (permission denied)",
        _ => "cannot be read",
    })?;
    if !meta.is_file() {
        return Err("is not a regular file");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err("is not executable (no x permission)");
        }
    }
    Ok(())
}

/// A command tool's declaration is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}`: {field} {problem}")]
#[non_exhaustive]
pub struct ToolConfigError {
    /// The tool's name as declared.
    pub tool: String,
    /// The field at fault, such as `command[1]`.
    pub field: String,
    /// What is wrong and what to do.
    pub problem: String,
}

/// The JSON Schema given for structured answers (`output_schema:`), checked to be a mapping.
pub fn output_schema_problem(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(map) if !map.is_empty() => None,
        _ => {
            Some("must be a JSON Schema mapping, such as {type: object, properties: {...}}".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(command: &[&str], parameters: Value) -> CommandToolConfig {
        CommandToolConfig {
            name: "word_count".into(),
            description: "count".into(),
            parameters,
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            timeout_s: 5.0,
            max_output_bytes: 100,
            env: Vec::new(),
            confirm: false,
            idempotent: false,
            working_dir: None,
        }
    }

    #[test]
    fn validates_names_schemas_commands_and_templates() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        assert_eq!(tool(&["wc", "-w"], schema.clone()).validate(), Ok(()));
        assert_eq!(
            tool(&["echo", "{{ text }}"], schema.clone()).validate(),
            Ok(())
        );
        assert_eq!(
            tool(&["{{ text }}"], schema.clone())
                .validate()
                .map_err(|e| e.field),
            Err("command[0]".into())
        );
        let error = tool(&["echo", "{{ txt }}"], schema.clone())
            .validate()
            .expect_err("unknown arg");
        assert_eq!(error.field, "command[1]");
        assert!(error.problem.contains("`txt`"), "{error}");
        assert_eq!(
            tool(&[], schema.clone()).validate().map_err(|e| e.field),
            Err("command".into())
        );
        assert_eq!(
            tool(&["wc"], json!({"type": "string"}))
                .validate()
                .map_err(|e| e.field),
            Err("parameters".into())
        );
        let mut bad_name = tool(&["wc"], schema);
        bad_name.name = "word count".into();
        assert_eq!(bad_name.validate().map_err(|e| e.field), Err("name".into()));
    }

    #[test]
    fn request_json_has_the_function_shape() {
        let spec = tool(&["wc"], json!({"type": "object"})).spec();
        assert_eq!(
            spec.to_request_json(),
            json!({"type": "function", "function": {"name": "word_count", "description": "count", "parameters": {"type": "object"}}})
        );
    }
}
