//! A number as written, before its rule reads it.

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A number as written: a scalar of a tactic file, a JSON value of `model_args`, or the text of a
/// flag such as `--limit KEY=VALUE`. A rule reads all of them alike (text is read as a whole number,
/// else as a number), so that `limits: {max_seconds: 1.5}` and `--limit max_seconds=1.5` mean the
/// same thing.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// A whole number (a YAML or JSON integer).
    Whole(i128),
    /// A number with a fraction or an exponent (a YAML or JSON float).
    Fraction(f64),
    /// Text: a flag's value, or a quoted scalar.
    Text(String),
    /// A value of another kind, named for messages (`a list`, `true or false`).
    Other(&'static str),
}

/// A number read from what was written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Whole(i128),
    Fraction(f64),
}

impl Number {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            // Far beyond every range: the loss of precision does not change the outcome.
            Number::Whole(n) => n as f64,
            Number::Fraction(x) => x,
        }
    }
}

/// Most characters of written text repeated in a message.
const MAX_SHOWN_CHARS: usize = 40;

impl Written {
    /// A `model_args` value (a number, or a string: a reference such as `${TIMEOUT}` that did not
    /// expand to a number).
    pub fn from_json(value: &serde_json::Value) -> Written {
        use serde_json::Value;
        match value {
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Written::Whole(i.into()),
                (None, Some(u)) => Written::Whole(u.into()),
                (None, None) => Written::Fraction(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(text) => Written::Text(text.clone()),
            Value::Bool(_) => Written::Other("true or false"),
            Value::Null => Written::Other("null"),
            Value::Array(_) => Written::Other("a list"),
            Value::Object(_) => Written::Other("a mapping"),
        }
    }

    /// The number it holds, when it holds one.
    pub(crate) fn number(&self) -> Option<Number> {
        match self {
            Written::Whole(n) => Some(Number::Whole(*n)),
            Written::Fraction(x) => Some(Number::Fraction(*x)),
            Written::Text(text) => {
                let text = text.trim();
                match text.parse::<i128>() {
                    Ok(n) => Some(Number::Whole(n)),
                    Err(_) => text.parse::<f64>().ok().map(Number::Fraction),
                }
            }
            Written::Other(_) => None,
        }
    }

    /// How a message quotes it: text shortened and without control characters, a number in a form
    /// of a few characters (`1e-300`, never three hundred zeros), another kind by its name.
    pub(crate) fn shown(&self) -> String {
        match self {
            Written::Whole(n) => format!("`{n}`"),
            Written::Fraction(x) => format!("`{}`", shown_number(*x)),
            Written::Text(text) => {
                let mut chars = text.chars().filter(|c| !c.is_control());
                let short: String = chars.by_ref().take(MAX_SHOWN_CHARS).collect();
                let more = if chars.next().is_some() { "…" } else { "" };
                format!("`{short}{more}`")
            }
            Written::Other(kind) => (*kind).to_owned(),
        }
    }
}

/// `x` for a message: as written for usual magnitudes, in exponent form for tiny and huge ones,
/// and infinity and NaN as a tactic file spells them (`.inf`, `-.inf`, `.nan`).
pub(crate) fn shown_number(x: f64) -> String {
    if x.is_nan() {
        ".nan".into()
    } else if x.is_infinite() {
        if x < 0.0 { "-.inf" } else { ".inf" }.into()
    } else if x == 0.0 || (1e-3..1e15).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

impl From<&str> for Written {
    fn from(text: &str) -> Self {
        Written::Text(text.to_owned())
    }
}

impl From<f64> for Written {
    fn from(x: f64) -> Self {
        Written::Fraction(x)
    }
}

impl From<u64> for Written {
    fn from(n: u64) -> Self {
        Written::Whole(n.into())
    }
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

/// Any value, for the rule to judge: a number (`.inf` and `.nan` too, when the parser passes them
/// on), text and booleans read as text, and a list, a mapping or null named by its kind. Nothing is
/// refused here, so that the rule's message names the field and what it allows, never the
/// parser's words.
impl<'de> Deserialize<'de> for Written {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Written;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_i64<E>(self, n: i64) -> Result<Written, E> {
                Ok(Written::Whole(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Written, E> {
                Ok(Written::Whole(n.into()))
            }
            fn visit_i128<E>(self, n: i128) -> Result<Written, E> {
                Ok(Written::Whole(n))
            }
            fn visit_u128<E>(self, n: u128) -> Result<Written, E> {
                Ok(i128::try_from(n).map_or(Written::Fraction(n as f64), Written::Whole))
            }
            fn visit_f64<E>(self, x: f64) -> Result<Written, E> {
                Ok(Written::Fraction(x))
            }
            fn visit_str<E>(self, text: &str) -> Result<Written, E> {
                Ok(Written::Text(text.to_owned()))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Written, E> {
                Ok(Written::Text(b.to_string()))
            }
            fn visit_unit<E>(self) -> Result<Written, E> {
                Ok(Written::Other("null"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Written, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Written::Other("a list"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Written, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Written::Other("a mapping"))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_as_the_number_a_file_would_hold() {
        assert_eq!(Written::from(" 12 ").number(), Some(Number::Whole(12)));
        assert_eq!(Written::from("-3").number(), Some(Number::Whole(-3)));
        assert_eq!(Written::from("1.5").number(), Some(Number::Fraction(1.5)));
        assert_eq!(
            Written::from("1e3").number(),
            Some(Number::Fraction(1000.0))
        );
        assert_eq!(Written::from("ten").number(), None);
        assert_eq!(Written::Other("a list").number(), None);
    }

    #[test]
    fn messages_quote_numbers_in_a_few_characters() {
        assert_eq!(Written::Fraction(1e-300).shown(), "`1e-300`");
        assert_eq!(Written::Fraction(1e300).shown(), "`1e300`");
        assert_eq!(Written::Fraction(0.25).shown(), "`0.25`");
        assert_eq!(Written::Fraction(f64::NAN).shown(), "`.nan`");
        assert_eq!(Written::Fraction(f64::NEG_INFINITY).shown(), "`-.inf`");
        assert_eq!(Written::from("1e-300").shown(), "`1e-300`");
        assert_eq!(Written::from("a\nb").shown(), "`ab`");
        assert_eq!(
            Written::from("x".repeat(50).as_str())
                .shown()
                .chars()
                .count(),
            43
        );
        assert_eq!(Written::Other("a list").shown(), "a list");
    }
}
