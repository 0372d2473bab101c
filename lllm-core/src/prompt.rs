//! Prompt templates: inline text or a file under `prompts/`, rendered with minijinja.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior};

use crate::files::{read_bounded, ReadProblem};

/// Work one render of a template may do, in minijinja instructions ("fuel"): far above what any prompt
/// needs (a loop of 10,000 items costs about 50,000), and it stops a template that would loop for hours.
pub const DEFAULT_RENDER_FUEL: u64 = 2_000_000;
/// Most bytes a rendered template may have.
pub const MAX_RENDERED_BYTES: usize = 16 * 1024 * 1024;
/// Deepest nesting of macro calls, loops and conditions while rendering.
pub const MAX_RENDER_RECURSION: usize = 100;

/// Extensions tried, in this order, when a prompt path has none.
pub(crate) const PROMPT_EXTENSIONS: [&str; 3] = ["md", "j2", "txt"];

/// Functions every minijinja environment has; a template may use them without a variable.
const BUILTIN_GLOBALS: [&str; 5] = ["range", "dict", "namespace", "debug", "loop"];

/// Variables a prompt is rendered with.
pub type PromptVars = BTreeMap<String, serde_json::Value>;

/// A prompt could not be found, parsed or rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A prompt path resolves (through a symbolic link) outside the folder it must stay in.
    #[error("prompt `{name}` resolves to {}, outside {}: a prompt must stay inside prompts/ (a symbolic link may not lead out of it)", resolved.display(), root.display())]
    LeavesPrompts {
        /// The path as configured.
        name: Box<str>,
        /// Where it leads.
        resolved: Box<Path>,
        /// The folder it must stay in.
        root: Box<Path>,
    },
    /// A prompt path names something other than a regular file.
    #[error("prompt `{name}`: {} is {what}, not a regular file", path.display())]
    NotAFile {
        /// The path as configured.
        name: Box<str>,
        /// The file.
        path: Box<Path>,
        /// What it is.
        what: &'static str,
    },
    /// A prompt file is larger than the limit.
    #[error("prompt `{name}`: {} has more than {limit} bytes (the limit of a tactic's files; raise it with LLLM_MAX_FILE_BYTES)", path.display())]
    TooLarge {
        /// The path as configured.
        name: Box<str>,
        /// The file.
        path: Box<Path>,
        /// The limit in bytes.
        limit: u64,
    },
    /// Rendering took more work than allowed: a loop too long, or nested loops.
    #[error("prompt `{name}` takes too much work to render (more than {fuel} template instructions): shorten its loops")]
    TooMuchWork {
        /// The prompt's name.
        name: String,
        /// The instructions allowed.
        fuel: u64,
    },
    /// The rendered text is larger than allowed.
    #[error("prompt `{name}` renders to more than {limit} bytes")]
    TooLong {
        /// The prompt's name.
        name: String,
        /// The limit in bytes.
        limit: usize,
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
    #[error(
        "prompt `{name}` uses {}: give a value or remove it from the prompt",
        missing_list(variables)
    )]
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
    /// Shared: a prompt given to many agents (through `global`) is held once.
    template: Arc<str>,
}

impl Prompt {
    /// An inline template. Its name in errors is `inline`.
    pub fn inline(template: impl Into<String>) -> Self {
        Prompt {
            name: "inline".to_owned(),
            template: Arc::from(template.into()),
        }
    }

    /// An inline template with a name for errors.
    pub fn named(name: impl Into<String>, template: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            template: Arc::from(template.into()),
        }
    }

    /// A named template whose text is shared.
    pub(crate) fn shared(name: impl Into<String>, template: Arc<str>) -> Self {
        Prompt {
            name: name.into(),
            template,
        }
    }

    /// Loads `name` (such as `planner/system`) from the first of `dirs` that has it, trying the name as
    /// written and then with `.md`, `.j2`, `.txt`. The file must be a regular file of at most
    /// [`DEFAULT_MAX_FILE_BYTES`](crate::DEFAULT_MAX_FILE_BYTES) bytes that stays inside its
    /// `prompts/` folder once symbolic links are followed (see [`Prompt::find`]).
    pub fn load(name: &str, dirs: &[PathBuf]) -> Result<Self, PromptError> {
        let path = Self::find(name, dirs)?;
        let template = read_prompt(name, &path, crate::files::DEFAULT_MAX_FILE_BYTES)?;
        Ok(Prompt {
            name: name.to_owned(),
            template: template.into(),
        })
    }

    /// The file `name` names: the first candidate (the name as written when it has an extension, then
    /// with `.md`, `.j2`, `.txt`) that exists in the first of `dirs` that has one, with symbolic links
    /// resolved. It must stay inside the folder it was found in, that folder must stay inside the
    /// folder that holds it (a `prompts` link to `/etc` is refused), and it must be a regular file.
    pub fn find(name: &str, dirs: &[PathBuf]) -> Result<PathBuf, PromptError> {
        // A tactic shared with you must not be able to send your other files to a model server.
        let inside = Path::new(name)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside || name.is_empty() || name.contains('\0') {
            return Err(PromptError::OutsidePrompts {
                name: name.to_owned(),
            });
        }
        let mut tried = Vec::new();
        for dir in dirs {
            let read = |path: &Path, source| PromptError::Read {
                path: path.to_owned(),
                source,
            };
            let root = match dir.canonicalize() {
                Ok(root) => root,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    tried.extend(candidates(dir, name));
                    continue;
                }
                Err(e) => return Err(read(dir, e)),
            };
            let holder = dir
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or_else(|| Path::new("."));
            let holder = holder.canonicalize().map_err(|e| read(holder, e))?;
            if !root.starts_with(&holder) || !root.is_dir() {
                return Err(PromptError::LeavesPrompts {
                    name: name.into(),
                    resolved: root.into(),
                    root: holder.into(),
                });
            }
            for candidate in candidates(dir, name) {
                match std::fs::metadata(&candidate) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        tried.push(candidate);
                        continue;
                    }
                    Err(e) => return Err(read(&candidate, e)),
                }
                let resolved = candidate.canonicalize().map_err(|e| read(&candidate, e))?;
                if !resolved.starts_with(&root) {
                    return Err(PromptError::LeavesPrompts {
                        name: name.into(),
                        resolved: resolved.into(),
                        root: root.into(),
                    });
                }
                return Ok(resolved);
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

    /// The template's text when it has no `{{`, `{%` or `{#`: then it renders to itself (trailing
    /// newline kept, as [`environment`] sets), with no variable, no work and no error but its
    /// length, and compiling it (a third of a turn's CPU besides the request in a tactic of plain
    /// steps) is skipped.
    fn literal(&self) -> Option<&str> {
        let text: &str = &self.template;
        is_literal(text).then_some(text)
    }

    /// A literal's render: itself, unless it is longer than [`MAX_RENDERED_BYTES`].
    fn render_literal(&self, text: &str) -> Result<String, PromptError> {
        if text.len() > MAX_RENDERED_BYTES {
            return Err(PromptError::TooLong {
                name: self.name.clone(),
                limit: MAX_RENDERED_BYTES,
            });
        }
        Ok(text.to_owned())
    }

    /// Checks that the template parses.
    pub fn validate(&self) -> Result<(), PromptError> {
        if self.literal().is_some() {
            return Ok(());
        }
        let env = environment(UndefinedBehavior::Strict);
        env.template_from_str(&self.template)
            .map(|_| ())
            .map_err(|e| self.syntax_error(&e))
    }

    /// Renders the template with `vars`. A variable the template uses but `vars` lacks is an error that
    /// names it. Rendering stops after [`DEFAULT_RENDER_FUEL`] instructions, [`MAX_RENDER_RECURSION`]
    /// levels of nesting or [`MAX_RENDERED_BYTES`] of output.
    pub fn render(&self, vars: &PromptVars) -> Result<String, PromptError> {
        if let Some(text) = self.literal() {
            return self.render_literal(text);
        }
        let env = environment(UndefinedBehavior::Strict);
        let template = env
            .template_from_str(&self.template)
            .map_err(|e| self.syntax_error(&e))?;
        let mut out = BoundedWriter::default();
        match template.render_captured_to(vars, &mut out).map(|_| ()) {
            Ok(_) => {}
            Err(e) => {
                if let Some(bound) = self.bound_error(&e, &out) {
                    return Err(bound);
                }
                if e.kind() != minijinja::ErrorKind::UndefinedError {
                    return Err(PromptError::Render {
                        name: self.name.clone(),
                        message: describe(&e),
                    });
                }
                // minijinja does not say which name was undefined; the template's free variables that
                // were not given are the candidates (a name only tested with `is defined` renders fine).
                let mut missing: Vec<String> = template
                    .undeclared_variables(false)
                    .into_iter()
                    .filter(|v| !vars.contains_key(v) && !BUILTIN_GLOBALS.contains(&v.as_str()))
                    .collect();
                missing.sort();
                return Err(match missing.len() {
                    0 => PromptError::Render {
                        name: self.name.clone(),
                        message: describe(&e),
                    },
                    _ => PromptError::MissingVariable {
                        name: self.name.clone(),
                        variables: missing,
                    },
                });
            }
        }
        String::from_utf8(out.bytes).map_err(|_| PromptError::Render {
            name: self.name.clone(),
            message: "the output is not UTF-8".into(),
        })
    }

    /// Renders the template once with `vars`, any variable it lacks standing in as empty, and reports
    /// only what no value given at run time could change much: a render that takes too much work, nests
    /// too deeply or writes too much. Other failures (a filter given an empty value, say) are left to
    /// the render with the real values.
    pub fn check_bounds(&self, vars: &PromptVars) -> Result<(), PromptError> {
        if let Some(text) = self.literal() {
            return self.render_literal(text).map(drop);
        }
        let env = environment(UndefinedBehavior::Chainable);
        let Ok(template) = env.template_from_str(&self.template) else {
            return Ok(()); // `validate` reports it
        };
        let mut out = BoundedWriter::default();
        match template.render_captured_to(vars, &mut out).map(|_| ()) {
            Ok(_) => Ok(()),
            Err(e) => self.bound_error(&e, &out).map_or(Ok(()), Err),
        }
    }

    /// The error of a render stopped by one of the bounds, if it was.
    fn bound_error(&self, error: &minijinja::Error, out: &BoundedWriter) -> Option<PromptError> {
        if out.overflowed {
            return Some(PromptError::TooLong {
                name: self.name.clone(),
                limit: MAX_RENDERED_BYTES,
            });
        }
        if error.kind() == minijinja::ErrorKind::OutOfFuel {
            return Some(PromptError::TooMuchWork {
                name: self.name.clone(),
                fuel: DEFAULT_RENDER_FUEL,
            });
        }
        let recursion = error.kind() == minijinja::ErrorKind::InvalidOperation
            && error
                .detail()
                .is_some_and(|d| d.contains("recursion limit"));
        recursion.then(|| PromptError::Render {
            name: self.name.clone(),
            message: format!(
                "it nests more than {MAX_RENDER_RECURSION} levels deep (macros calling themselves?)"
            ),
        })
    }

    fn syntax_error(&self, error: &minijinja::Error) -> PromptError {
        PromptError::Syntax {
            name: self.name.clone(),
            message: describe(error),
        }
    }
}

/// Whether `text` has no `{{`, `{%` or `{#`: minijinja reads it as plain text, with no variable and
/// nothing that can fail to parse, so it need not be compiled.
pub(crate) fn is_literal(text: &str) -> bool {
    !text
        .as_bytes()
        .windows(2)
        .any(|pair| matches!(pair, [b'{', b'{' | b'%' | b'#']))
}

fn missing_list(variables: &[String]) -> String {
    let quoted: Vec<String> = variables.iter().map(|v| format!("`{v}`")).collect();
    match quoted.as_slice() {
        [one] => format!("the variable {one}, which was not given"),
        _ => format!("the variables {}, which were not given", quoted.join(", ")),
    }
}

fn environment(undefined: UndefinedBehavior) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(undefined);
    // Prompts are plain text: keep a trailing newline the author wrote.
    env.set_keep_trailing_newline(true);
    env.set_fuel(Some(DEFAULT_RENDER_FUEL));
    env.set_recursion_limit(MAX_RENDER_RECURSION);
    env
}

/// Collects rendered output up to [`MAX_RENDERED_BYTES`]; past that every write fails.
#[derive(Default)]
struct BoundedWriter {
    bytes: Vec<u8>,
    overflowed: bool,
}

impl std::io::Write for BoundedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > MAX_RENDERED_BYTES {
            self.overflowed = true;
            return Err(std::io::Error::other("the rendered text is too long"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads the prompt file at `path` (already found by [`Prompt::find`]) as text of at most `limit`
/// bytes.
pub(crate) fn read_prompt(name: &str, path: &Path, limit: u64) -> Result<String, PromptError> {
    let bytes = read_bounded(path, limit, false).map_err(|problem| match problem {
        ReadProblem::Io(source) => PromptError::Read {
            path: path.to_owned(),
            source,
        },
        ReadProblem::NotAFile(what) => PromptError::NotAFile {
            name: name.into(),
            path: path.into(),
            what,
        },
        ReadProblem::TooLarge(limit) => PromptError::TooLarge {
            name: name.into(),
            path: path.into(),
            limit,
        },
    })?;
    String::from_utf8(bytes).map_err(|_| PromptError::Read {
        path: path.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the file is not valid UTF-8; save it as UTF-8",
        ),
    })
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
    fn text_without_tags_renders_as_minijinja_renders_it() {
        for text in [
            "You are a concise assistant.",
            "ends with a newline\n",
            "two newlines\r\n\r\n",
            "braces { } }} %} #} { { {\t% and a lone {",
            "ünïcode — ✓ {",
            "",
        ] {
            let prompt = Prompt::inline(text);
            assert!(prompt.literal().is_some(), "{text:?}");
            let by_minijinja = environment(UndefinedBehavior::Strict)
                .render_str(text, ())
                .expect("renders");
            assert_eq!(prompt.render(&PromptVars::new()).ok(), Some(by_minijinja));
            assert!(prompt.validate().is_ok());
            assert!(prompt.check_bounds(&PromptVars::new()).is_ok());
        }
        for tagged in ["{{ x }}", "a {% if 1 %}b{% endif %}", "{# note #}", "{{"] {
            assert!(Prompt::inline(tagged).literal().is_none(), "{tagged}");
        }
    }

    #[test]
    fn a_literal_longer_than_the_bound_is_too_long() {
        let prompt = Prompt::inline("x".repeat(MAX_RENDERED_BYTES + 1));
        let err = prompt.render(&PromptVars::new()).expect_err("too long");
        assert!(matches!(err, PromptError::TooLong { .. }), "{err}");
        let err = prompt
            .check_bounds(&PromptVars::new())
            .expect_err("too long");
        assert!(matches!(err, PromptError::TooLong { .. }), "{err}");
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
