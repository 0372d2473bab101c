//! Reading tactic files: bytes to located raw types, one parse per file, and the `base:` chain.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_saphyr::{DefaultMessageFormatter, Error as YamlError, MessageFormatter};

use super::error::{ConfigError, ConfigErrorKind, Origin, Position};
use super::raw::RawTactic;
use super::span::parsing_file;
use crate::suggest::closest;

/// Largest tactic file read: far above any real tactic, and it keeps a wrong path (such as a device
/// or a log) from being read whole.
pub(crate) const MAX_TACTIC_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a file of at most [`MAX_TACTIC_BYTES`].
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, ConfigError> {
    let file = std::fs::File::open(path).map_err(|e| ConfigError::read(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_TACTIC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ConfigError::read(path, e))?;
    if bytes.len() as u64 > MAX_TACTIC_BYTES {
        return Err(ConfigError::new(
            Origin::new(path.into(), None),
            ConfigErrorKind::TooLarge {
                limit: MAX_TACTIC_BYTES,
            },
        ));
    }
    Ok(bytes)
}

/// Parses one file's bytes into its raw tactic; nothing of its `base:` is read.
pub(crate) fn parse_one(bytes: &[u8], file: &Arc<Path>) -> Result<RawTactic, ConfigError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let position = position_of_offset(bytes, e.valid_up_to());
        ConfigError::new(
            Origin::new(file.clone(), Some(position)),
            ConfigErrorKind::NotUtf8,
        )
    })?;
    if text.trim().is_empty() {
        return Err(ConfigError::new(
            Origin::new(file.clone(), None),
            ConfigErrorKind::Empty,
        ));
    }
    // YAML 1.2 booleans only: under YAML 1.1 rules an unquoted `n` or `no` (a property or enum value
    // in a JSON Schema, say) would silently become `false`.
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.with_snippet = false;
    parsing_file(file, || {
        serde_saphyr::from_str_with_options::<RawTactic>(text, options)
    })
    .map_err(|e| yaml_error(file, e.without_snippet()))
}

/// Reads `raw`'s `base:` chain and merges it under `raw`. `chain` holds the files being read, to catch
/// cycles.
pub(crate) fn with_bases(
    mut raw: RawTactic,
    chain: &mut Vec<PathBuf>,
) -> Result<RawTactic, ConfigError> {
    let Some(base) = raw.base.take() else {
        return Ok(raw);
    };
    let at = |kind: ConfigErrorKind| ConfigError::new(base.origin.clone(), kind).in_field("base");
    let base_path = base
        .origin
        .file()
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(&base.value);
    let canonical = base_path
        .canonicalize()
        .map_err(|e| at(ConfigErrorKind::Read(e)))?;
    if chain.contains(&canonical) {
        let mut files: Vec<String> = chain.iter().map(|p| p.display().to_string()).collect();
        files.push(canonical.display().to_string());
        return Err(at(ConfigErrorKind::BaseCycle {
            base: base.value,
            chain: files.join(" → "),
        }));
    }
    if !canonical.is_file() {
        return Err(at(ConfigErrorKind::Invalid(
            "a base must be a regular file (a tactic YAML file)",
        )));
    }
    let bytes = read_file(&base_path)?;
    let base_file: Arc<Path> = base_path.as_path().into();
    let parent = parse_one(&bytes, &base_file)?;
    chain.push(canonical);
    let parent = with_bases(parent, chain)?;
    chain.pop();
    Ok(raw.over(parent))
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
