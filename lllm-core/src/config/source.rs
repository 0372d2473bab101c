//! Reading tactic files: bytes to located raw types, one parse per file, and the `base:` chain.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_saphyr::{DefaultMessageFormatter, Error as YamlError, MessageFormatter};

use super::error::{ConfigError, ConfigErrorKind};
use super::origin::{Origin, Position};
use super::raw::RawTactic;
use super::span::parsing_file;
use super::Limits;
use crate::files::{read_bounded, ReadProblem};
use crate::suggest::closest;

/// Most files in a `base:` chain (the tactic itself not counted).
pub const MAX_BASE_DEPTH: usize = 32;

/// Most YAML events aliases (`*name`) may replay in one file.
pub(crate) const MAX_ALIAS_REPLAYED_EVENTS: usize = 250_000;

/// The error of a file that could not be read, at `origin` (the key that names the file, or the file).
pub(crate) fn read_error(origin: Origin, problem: ReadProblem) -> ConfigError {
    let kind = match problem {
        ReadProblem::Io(e) => ConfigErrorKind::Read(e),
        ReadProblem::NotAFile(what) => ConfigErrorKind::NotAFile { what },
        ReadProblem::TooLarge(limit) => ConfigErrorKind::TooLarge { limit },
    };
    ConfigError::new(origin, kind)
}

/// Reads the tactic file itself: a regular file (or a pipe, such as `<(...)` in a shell) within the
/// size limits.
pub(crate) fn read_tactic(path: &Path, limits: &Limits) -> Result<Vec<u8>, ConfigError> {
    let origin = Origin::new(path.into(), None);
    let bytes =
        read_bounded(path, limits.per_file, true).map_err(|p| read_error(origin.clone(), p))?;
    limits.spend(bytes.len(), &origin)?;
    Ok(bytes)
}

/// Parses one file's bytes into its raw tactic; nothing of its `base:` is read.
pub(crate) fn parse_one(bytes: &[u8], file: &Arc<Path>) -> Result<RawTactic, ConfigError> {
    parse_yaml(bytes, file, ConfigErrorKind::Empty)
}

/// Parses one file's bytes into located raw types `T` with the loader's YAML settings (YAML 1.2
/// booleans, bounded aliases, errors at their line and column); an empty file is `empty`.
pub(crate) fn parse_yaml<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    file: &Arc<Path>,
    empty: ConfigErrorKind,
) -> Result<T, ConfigError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let position = position_of_offset(bytes, e.valid_up_to());
        ConfigError::new(
            Origin::new(file.clone(), Some(position)),
            ConfigErrorKind::NotUtf8,
        )
    })?;
    if text.trim().is_empty() {
        return Err(ConfigError::new(Origin::new(file.clone(), None), empty));
    }
    // YAML 1.2 booleans only: under YAML 1.1 rules an unquoted `n` or `no` (a property or enum value
    // in a JSON Schema, say) would silently become `false`.
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.with_snippet = false;
    // serde-saphyr's default budget bounds depth (64), nodes and events; aliases may replay fewer
    // events than its default, so that an alias bomb stays far from the memory a run may use.
    options.alias_limits.max_total_replayed_events = MAX_ALIAS_REPLAYED_EVENTS;
    // `.inf` and `.nan` reach the value's own rule, which names the field and what it allows
    // (`limits.max_seconds`, `context.compact_at`); free JSON values refuse them where they are
    // written (`json.rs`), so none becomes a silent `null`.
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
    parsing_file(file, || {
        serde_saphyr::from_str_with_options::<T>(text, options)
    })
    .map_err(|e| yaml_error(file, e.without_snippet()))
}

/// Reads `raw`'s `base:` chain and merges it under `raw`. `root` is the folder of the top tactic file
/// (canonical): every base must resolve inside it. `chain` holds the files being read, to catch
/// cycles.
pub(crate) fn with_bases(
    mut raw: RawTactic,
    root: Option<&Path>,
    chain: &mut Vec<PathBuf>,
    limits: &Limits,
) -> Result<RawTactic, ConfigError> {
    // Read iteratively: each file's base, until a file has none; then merge from the bottom up.
    let mut layers: Vec<RawTactic> = Vec::new();
    while let Some(base) = raw.base.take() {
        let at =
            |kind: ConfigErrorKind| ConfigError::new(base.origin.clone(), kind).in_field("base");
        if layers.len() >= MAX_BASE_DEPTH {
            return Err(at(ConfigErrorKind::BaseTooDeep {
                limit: MAX_BASE_DEPTH,
            }));
        }
        let base_path = base
            .origin
            .file()
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(&base.value);
        let outside = |resolved: PathBuf| {
            at(ConfigErrorKind::Outside {
                what: "the base",
                resolved,
                root: root
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("the tactic's folder")),
            })
        };
        // As written first (`/dev/stdin` or `../x` need not exist to be outside), then with links
        // followed.
        let folder = base
            .origin
            .file()
            .parent()
            .unwrap_or_else(|| Path::new("."));
        let written = lexically_absolute(folder, &base.value);
        if !root.is_some_and(|root| written.as_ref().is_some_and(|w| w.starts_with(root))) {
            return Err(outside(written.unwrap_or(base_path)));
        }
        let canonical = base_path
            .canonicalize()
            .map_err(|e| at(ConfigErrorKind::Read(e)))?;
        if !root.is_some_and(|root| canonical.starts_with(root)) {
            return Err(outside(canonical));
        }
        if chain.contains(&canonical) {
            let mut files: Vec<String> = chain.iter().map(|p| p.display().to_string()).collect();
            files.push(canonical.display().to_string());
            return Err(at(ConfigErrorKind::BaseCycle {
                base: base.value,
                chain: files.join(" → "),
            }));
        }
        let bytes = read_bounded(&canonical, limits.per_file, false)
            .map_err(|p| read_error(base.origin.clone(), p).in_field("base"))?;
        limits.spend(bytes.len(), &base.origin)?;
        let base_file: Arc<Path> = base_path.as_path().into();
        let parent = parse_one(&bytes, &base_file)?;
        chain.push(canonical);
        layers.push(std::mem::replace(&mut raw, parent));
    }
    while let Some(upper) = layers.pop() {
        raw = upper.over(raw);
    }
    Ok(raw)
}

/// Where `written` (a path as written in a file in `dir`) says it leads: `dir` with its links
/// resolved, then `written`'s parts applied as written (`..` taken out), without following the links
/// of those parts.
fn lexically_absolute(dir: &Path, written: &str) -> Option<PathBuf> {
    use std::path::Component;
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut out = dir.canonicalize().ok()?;
    for part in Path::new(written).components() {
        match part {
            Component::Prefix(_) | Component::RootDir => out = PathBuf::from(part.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Some(out)
}

/// The parser's error, at its position, with a suggestion for a misspelt key or value.
fn yaml_error(file: &Arc<Path>, error: &YamlError) -> ConfigError {
    let position = error.location().and_then(|l| {
        (l.line() > 0).then(|| Position {
            line: usize::try_from(l.line()).unwrap_or(usize::MAX),
            column: usize::try_from(l.column()).unwrap_or(usize::MAX),
        })
    });
    let origin = Origin::new(file.clone(), position);
    let kind = match error {
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => ConfigErrorKind::UnknownKey {
            key: field.clone(),
            expected: expected.clone(),
            suggestion: closest(field, expected.iter().copied()),
        },
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => ConfigErrorKind::UnknownValue {
            value: variant.clone(),
            expected: expected.clone(),
            suggestion: closest(variant, expected.iter().copied()),
        },
        YamlError::InvalidScalar { ty, .. } => ConfigErrorKind::WrongType {
            expected: type_name(ty),
        },
        other => ConfigErrorKind::Yaml {
            message: DefaultMessageFormatter
                .format_message(other)
                .chars()
                .filter(|c| !c.is_control())
                .collect(),
        },
    };
    ConfigError::new(origin, kind)
}

/// The 1-based line and column of byte `offset`.
fn position_of_offset(bytes: &[u8], offset: usize) -> Position {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    Position { line, column }
}

/// How a Rust scalar type is described to someone writing YAML.
fn type_name(ty: &str) -> &'static str {
    match ty {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of 0 or more",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "bool" => "true or false",
        _ => "a value of another type",
    }
}
