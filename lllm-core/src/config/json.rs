//! Free JSON values of a tactic file (`model_args` values, `output_schema`, a tool's `parameters`,
//! `config`): read as `serde_json` reads them, but refusing `.inf` and `.nan`, which JSON cannot
//! carry and `serde_json::Value` would turn into `null` without a word. The parser passes them on
//! (so that the rules of `context:` and `limits:` can name their field); this is where free values
//! refuse them, at their own line and column.

use std::fmt;

use serde::de::{Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::span::At;

/// A JSON value as written in the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Json(pub(crate) Value);

/// `deserialize_with` for an optional located JSON value.
pub(crate) fn optional_at<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<At<Value>>, D::Error> {
    Option::<At<Json>>::deserialize(deserializer).map(|v| v.map(|at| at.map(|json| json.0)))
}

/// Any JSON value, as `serde_json::Value` says.
impl schemars::JsonSchema for Json {
    fn inline_schema() -> bool {
        Value::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visit).map(Json)
    }
}

struct Visit;

impl<'de> Visitor<'de> for Visit {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(n.into())
    }
    // As `serde_json::Value` reads them: a number when it fits, else its error.
    fn visit_i128<E: Error>(self, n: i128) -> Result<Value, E> {
        Value::deserialize(serde::de::value::I128Deserializer::<E>::new(n))
    }
    fn visit_u128<E: Error>(self, n: u128) -> Result<Value, E> {
        Value::deserialize(serde::de::value::U128Deserializer::<E>::new(n))
    }
    fn visit_f64<E: Error>(self, x: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| E::custom(non_finite(x)))
    }
    fn visit_str<E>(self, text: &str) -> Result<Value, E> {
        Ok(Value::String(text.to_owned()))
    }
    fn visit_string<E>(self, text: String) -> Result<Value, E> {
        Ok(Value::String(text))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Json::deserialize(deserializer).map(|json| json.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Json(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some((key, Json(value))) = map.next_entry::<String, Json>()? {
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// What is wrong with a non-finite number, and what to write instead.
fn non_finite(x: f64) -> String {
    let written = crate::values::shown_number(x);
    format!(
        "`{written}` is not a number JSON can carry: write a finite number, or quote it (\"{written}\") to send it as text"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_value_reads_as_serde_json_reads_it_but_no_infinity() {
        let read = |text: &str| serde_saphyr::from_str::<Json>(text).map(|j| j.0);
        let text = "{a: [1, -2, 2.5, true, null, x], b: {c: \"t\"}, d: 18446744073709551615}";
        assert_eq!(
            read(text).expect("json"),
            serde_json::json!({"a": [1, -2, 2.5, true, null, "x"], "b": {"c": "t"}, "d": u64::MAX})
        );
        let options = || {
            let mut options = serde_saphyr::Options::default();
            options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
            options
        };
        for bad in ["{a: .inf}", "[1, -.inf]", ".nan", "{a: {b: [.NaN]}}"] {
            let error = serde_saphyr::from_str_with_options::<Json>(bad, options())
                .expect_err(bad)
                .to_string();
            assert!(
                error.contains("is not a number JSON can carry"),
                "{bad}: {error}"
            );
        }
        assert_eq!(read("'.inf'").expect("text"), serde_json::json!(".inf"));
    }
}
