//! A section of a tactic file as written (`context:`, `limits:`): its keys, or a value of another
//! kind, kept so that the check names the section and what it takes instead of the parser's words.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::span::At;

/// A section as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Keyed<T> {
    /// A mapping, read key by key (unknown keys are still refused where they are written).
    Keys(T),
    /// Anything else, by its kind (`a list`, `a number`).
    Not(&'static str),
}

impl<T> Keyed<T> {
    /// The upper layer's section over the lower's, merged by `both` when both are mappings. A
    /// section that is not a mapping wins, so that its error is never hidden by a merge.
    pub(crate) fn layered(
        upper: At<Keyed<T>>,
        lower: At<Keyed<T>>,
        both: impl FnOnce(T, T) -> T,
    ) -> At<Keyed<T>> {
        match (upper.value, lower.value) {
            (Keyed::Keys(u), Keyed::Keys(l)) => At {
                value: Keyed::Keys(both(u, l)),
                origin: upper.origin,
            },
            (Keyed::Keys(_), not) => At {
                value: not,
                origin: lower.origin,
            },
            (not, _) => At {
                value: not,
                origin: upper.origin,
            },
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Keyed<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Visit<T> {
            type Value = Keyed<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Keyed<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Keyed::Keys)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Keyed<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Keyed::Not("a list"))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("true or false"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("a number"))
            }
            fn visit_i128<E>(self, _: i128) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("a number"))
            }
            fn visit_u128<E>(self, _: u128) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("a number"))
            }
            fn visit_str<E>(self, _: &str) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("text"))
            }
            fn visit_unit<E>(self) -> Result<Keyed<T>, E> {
                Ok(Keyed::Not("null"))
            }
        }
        deserializer.deserialize_any(Visit(PhantomData))
    }
}

/// The section's own schema: what a file should hold, not what the check tolerates.
impl<T: JsonSchema> JsonSchema for Keyed<T> {
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
