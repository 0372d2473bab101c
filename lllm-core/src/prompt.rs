//! Prompt templates: inline text or a file under `prompts/`, rendered with minijinja.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::{Environment, UndefinedBehavior};

/// Extensions tried, in this order, when a prompt path has none.
pub(crate) const PROMPT_EXTENSIONS: [&str; 3] = ["md", "j2", "txt"];

/// Functions every minijinja environment has; a template may use them without a variable.
const BUILTIN_GLOBALS: [&str; 5] = ["range", "dict", "namespace", "debug", "loop"];

/// Variables a prompt is rendered with.
pub type PromptVars = BTreeMap<String, serde_json::Value>;

/// A prompt could not be found, parsed or rendered.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// No file matched a prompt path.
    #[error("prompt `{name}` not found: tried {}", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotFound {
        /// The path as configured.
        name: String,
        /// Every file looked for.
        tried: Vec<PathBuf>,
    },
    /// A prompt path leaves the prompt folders (absolute, or with `..`).
    #[error(
        "prompt `{name}`: a prompt path must stay inside prompts/ (no absolute path, no `..`)"
    )]
    OutsidePrompts {
        /// The path as configured.
        name: String,
    },
    /// A prompt file exists but could not be read.
    #[error("cannot read prompt file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The template does not parse.
    #[error("prompt `{name}` is not a valid template: {message}")]
    Syntax {
        /// The prompt's name.
        name: String,
        /// minijinja's explanation, with the line.
        message: String,
    },
    /// The template uses a variable it was not given.
    #[error("prompt `{name}` uses {}: pass a value (for example `--var {}=...`) or remove it from the prompt", missing_list(variables), variables.first().map_or("NAME", String::as_str))]
    MissingVariable {
        /// The prompt's name.
        name: String,
        /// The template's variables that were not given, sorted; at least one of them was needed.
        variables: Vec<String>,
    },
    /// Rendering failed for another reason.
    #[error("prompt `{name}` failed to render: {message}")]
    Render {
        /// The prompt's name.
        name: String,
        /// minijinja's explanation.
        message: String,
    },
}

/// A prompt template and the name errors refer to it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    name: String,
    template: String,
}

impl Prompt {
    /// An inline template. Its name in errors is `inline`.
    pub fn inline(template: impl Into<String>) -> Self {
        Prompt {
            name: "inline".to_owned(),
            template: template.into(),
        }
    }

    /// An inline template with a name for errors.
    pub fn named(name: impl Into<String>, template: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            template: template.into(),
        }
    }

    /// Loads `name` (such as `planner/system`) from the first of `dirs` that has it, trying the name as
    /// written and then with `.md`, `.j2`, `.txt`.
    pub fn load(name: &str, dirs: &[PathBuf]) -> Result<Self, PromptError> {
        // A tactic shared with you must not be able to send your other files to a model server.
        let inside = Path::new(name)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside || name.is_empty() {
            return Err(PromptError::OutsidePrompts {
                name: name.to_owned(),
            });
        }
        let mut tried = Vec::new();
        for dir in dirs {
            for candidate in candidates(dir, name) {
                if candidate.is_file() {
                    let template = std::fs::read_to_string(&candidate).map_err(|source| {
                        PromptError::Read {
                            path: candidate.clone(),
                            source,
                        }
                    })?;
                    return Ok(Prompt {
                        name: name.to_owned(),
                        template,
                    });
                }
                tried.push(candidate);
            }
        }
        Err(PromptError::NotFound {
            name: name.to_owned(),
            tried,
        })
    }

    /// The name errors refer to.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The template text.
    pub fn template(&self) -> &str {
        &self.template
    }

    /// Checks that the template parses.
    pub fn validate(&self) -> Result<(), PromptError> {
        let env = environment();
        env.template_from_str(&self.template)
            .map(|_| ())
            .map_err(|e| self.syntax_error(&e))
    }

    /// Renders the template with `vars`. A variable the template uses but `vars` lacks is an error that
    /// names it.
    pub fn render(&self, vars: &PromptVars) -> Result<String, PromptError> {
        let env = environment();
        let template = env
            .template_from_str(&self.template)
            .map_err(|e| self.syntax_error(&e))?;
        template.render(vars).map_err(|e| {
            if e.kind() != minijinja::ErrorKind::UndefinedError {
                return PromptError::Render {
                    name: self.name.clone(),
                    message: describe(&e),
                };
            }
            // minijinja does not say which name was undefined; the template's free variables that were
            // not given are the candidates (a name only tested with `is defined` renders fine).
            let mut missing: Vec<String> = template
                .undeclared_variables(false)
                .into_iter()
                .filter(|v| !vars.contains_key(v) && !BUILTIN_GLOBALS.contains(&v.as_str()))
                .collect();
            missing.sort();
            match missing.len() {
                0 => PromptError::Render {
                    name: self.name.clone(),
                    message: describe(&e),
                },
                _ => PromptError::MissingVariable {
                    name: self.name.clone(),
                    variables: missing,
                },
            }
        })
    }

    fn syntax_error(&self, error: &minijinja::Error) -> PromptError {
        PromptError::Syntax {
            name: self.name.clone(),
            message: describe(error),
        }
    }
}

fn missing_list(variables: &[String]) -> String {
    let quoted: Vec<String> = variables.iter().map(|v| format!("`{v}`")).collect();
    match quoted.as_slice() {
        [one] => format!("the variable {one}, which was not given"),
        _ => format!("the variables {}, which were not given", quoted.join(", ")),
    }
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Prompts are plain text: keep a trailing newline the author wrote.
    env.set_keep_trailing_newline(true);
    env
}

fn describe(error: &minijinja::Error) -> String {
    match error.line() {
        Some(line) => format!(
            "{} (line {line})",
            error.detail().unwrap_or(&error.to_string())
        ),
        None => error.to_string(),
    }
}

fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    let base = dir.join(name);
    let mut out = Vec::with_capacity(1 + PROMPT_EXTENSIONS.len());
    if Path::new(name).extension().is_some() {
        out.push(base.clone());
    }
    out.extend(
        PROMPT_EXTENSIONS
            .iter()
            .map(|ext| PathBuf::from(format!("{}.{ext}", base.display()))),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> PromptVars {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
            .collect()
    }

    #[test]
    fn renders_variables() {
        let prompt = Prompt::inline("You plan for {{ team }}.");
        assert_eq!(
            prompt.render(&vars(&[("team", "ops")])).ok().as_deref(),
            Some("You plan for ops.")
        );
    }

    #[test]
    fn missing_variable_names_variable_and_prompt() {
        let prompt = Prompt::named("planner/system", "Hello {{ user }} and {{ team }}");
        let err = prompt.render(&vars(&[("team", "x")])).expect_err("missing");
        let text = err.to_string();
        assert!(text.contains("`user`"), "{text}");
        assert!(text.contains("planner/system"), "{text}");
    }

    #[test]
    fn variables_tested_with_is_defined_are_optional() {
        let prompt = Prompt::inline("Hi{% if topic is defined %} {{ topic }}{% endif %}.");
        assert_eq!(
            prompt.render(&PromptVars::new()).ok().as_deref(),
            Some("Hi.")
        );
        assert_eq!(
            prompt.render(&vars(&[("topic", "x")])).ok().as_deref(),
            Some("Hi x.")
        );
    }

    #[test]
    fn loops_and_builtins_are_not_missing_variables() {
        let prompt = Prompt::inline("{% for i in range(2) %}{{ i }}{% endfor %}");
        assert_eq!(
            prompt.render(&PromptVars::new()).ok().as_deref(),
            Some("01")
        );
    }

    #[test]
    fn syntax_errors_are_reported() {
        let err = Prompt::inline("{{ unclosed").validate().expect_err("bad");
        assert!(matches!(err, PromptError::Syntax { .. }), "{err}");
    }

    #[test]
    fn load_tries_extensions_in_order() {
        let dir = std::env::temp_dir().join(format!("lllm-prompt-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("planner")).expect("dir");
        std::fs::write(dir.join("planner/system.txt"), "from txt").expect("write");
        std::fs::write(dir.join("planner/system.j2"), "from j2").expect("write");
        let prompt = Prompt::load("planner/system", std::slice::from_ref(&dir)).expect("found");
        assert_eq!(prompt.template(), "from j2");
        let err = Prompt::load("nope", std::slice::from_ref(&dir)).expect_err("absent");
        assert!(err.to_string().contains("nope.md"), "{err}");
        for outside in ["../planner/system", "/etc/passwd", "planner/../../x", ""] {
            let err = Prompt::load(outside, std::slice::from_ref(&dir)).expect_err(outside);
            assert!(
                matches!(err, PromptError::OutsidePrompts { .. }),
                "{outside}: {err}"
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
