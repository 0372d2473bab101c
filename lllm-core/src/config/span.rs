//! Values read together with where they are written, so that checks made after parsing (and after
//! merging `global` and `base:` files) can still point at the right file, line and column.

use std::borrow::Cow;
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

use super::origin::{Origin, Position};

thread_local! {
    /// The file being parsed on this thread. serde gives a `Deserialize` impl no way to receive
    /// context, and every value of one parse comes from the same file, so it is set around the parse.
    static CURRENT_FILE: RefCell<Option<Arc<Path>>> = const { RefCell::new(None) };
}

/// Runs `parse` with `file` as the file every [`At`] read inside it comes from.
pub(crate) fn parsing_file<R>(file: &Arc<Path>, parse: impl FnOnce() -> R) -> R {
    let previous = CURRENT_FILE.with(|f| f.replace(Some(file.clone())));
    let result = parse();
    CURRENT_FILE.with(|f| *f.borrow_mut() = previous);
    result
}

fn current_file() -> Arc<Path> {
    CURRENT_FILE
        .with(|f| f.borrow().clone())
        .unwrap_or_else(|| Arc::from(Path::new("<tactic>")))
}

/// A value and where it is written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct At<T> {
    pub(crate) value: T,
    pub(crate) origin: Origin,
}

impl<T> At<T> {
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> At<U> {
        At {
            value: f(self.value),
            origin: self.origin,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for At<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = serde_saphyr::Spanned::<T>::deserialize(deserializer)?;
        let location = spanned.referenced;
        let position = (location.line() > 0).then(|| Position {
            line: usize::try_from(location.line()).unwrap_or(usize::MAX),
            column: usize::try_from(location.column()).unwrap_or(usize::MAX),
        });
        Ok(At {
            value: spanned.value,
            origin: Origin::new(current_file(), position),
        })
    }
}

impl<T: JsonSchema> JsonSchema for At<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}
