//! One limit set to one value, typed where it is written (`--limit KEY=VALUE`) and carried so to the
//! run and its journal.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::limits::{Limit, LimitError, RunLimits, SetLimit};
use crate::values::Written;

/// One limit and its value (`max_requests=5`), read by the rule of `limits:`
/// ([`RunLimits::set_limit`]): valid once made, so a run given one cannot fail on it later.
///
/// It is read from `KEY=VALUE` ([`FromStr`], which clap takes for `--limit`) and shown so again
/// ([`Display`](fmt::Display)). In JSON it is the one-key object a `limits:` entry is
/// (`{"max_requests": 5}`); a string `"KEY=VALUE"` is read too, as older journals hold them.
///
/// ```
/// use lllm_core::{LimitSetting, RunLimits};
///
/// let setting: LimitSetting = "max_seconds=2.5".parse().unwrap();
/// let mut limits = RunLimits::default();
/// setting.apply(&mut limits);
/// assert_eq!(limits.max_seconds, Some(2.5));
/// assert_eq!(setting.to_string(), "max_seconds=2.5");
/// assert!("max_requests=-1".parse::<LimitSetting>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitSetting(SetLimit);

impl LimitSetting {
    /// `limit` set to `value` as written, by the rule of `limits:`.
    pub fn new(limit: Limit, value: &Written) -> Result<LimitSetting, LimitError> {
        SetLimit::read(limit, value)
            .map(LimitSetting)
            .map_err(|problem| LimitError::Invalid {
                name: limit.name(),
                problem,
            })
    }

    /// The limit `name` set to `value` as written.
    pub fn named(name: &str, value: &Written) -> Result<LimitSetting, LimitError> {
        let limit = Limit::named(name).ok_or_else(|| LimitError::Unknown {
            // Shortened: a journal's text is as hostile as any input.
            name: name.chars().filter(|c| !c.is_control()).take(40).collect(),
        })?;
        LimitSetting::new(limit, value)
    }

    /// The limit it sets.
    pub fn limit(&self) -> Limit {
        self.0.limit()
    }

    /// Sets its limit in `limits`, over what they held.
    pub fn apply(&self, limits: &mut RunLimits) {
        self.0.apply(limits);
    }
}

impl FromStr for LimitSetting {
    type Err = LimitError;

    /// `KEY=VALUE`, as `--limit` takes it: a name of [`RunLimits::NAMES`] and a value as its rule
    /// reads text.
    fn from_str(text: &str) -> Result<Self, LimitError> {
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| LimitError::NotKeyValue {
                written: Written::from(text).shown(),
            })?;
        LimitSetting::named(key.trim(), &Written::from(value))
    }
}

impl fmt::Display for LimitSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.limit().name();
        match self.0 {
            SetLimit::Requests(n) | SetLimit::TotalTokens(n) | SetLimit::ToolCalls(n) => {
                write!(f, "{name}={n}")
            }
            SetLimit::Seconds(s) => write!(f, "{name}={s}"),
        }
    }
}

impl Serialize for LimitSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        let name = self.limit().name();
        match self.0 {
            SetLimit::Requests(n) | SetLimit::TotalTokens(n) | SetLimit::ToolCalls(n) => {
                map.serialize_entry(name, &n)?;
            }
            SetLimit::Seconds(s) => map.serialize_entry(name, &s)?,
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for LimitSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = LimitSetting;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a limit and its value, such as {\"max_requests\": 5}")
            }
            /// `"KEY=VALUE"`, as journals held them before they were typed.
            fn visit_str<E: de::Error>(self, text: &str) -> Result<LimitSetting, E> {
                text.parse().map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LimitSetting, A::Error> {
                let Some((name, value)) = map.next_entry::<String, Written>()? else {
                    return Err(de::Error::custom(
                        "a limit setting names one limit, not none",
                    ));
                };
                if map.next_key::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(
                        "a limit setting names one limit: write each in an object of its own",
                    ));
                }
                LimitSetting::named(&name, &value).map_err(de::Error::custom)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_round_trip() {
        for text in [
            "max_requests=5",
            "max_total_tokens=0",
            "max_tool_calls=18446744073709551615",
            "max_seconds=2.5",
            "max_seconds=0.001",
            "max_seconds=1000000000",
        ] {
            let setting: LimitSetting = text.parse().expect(text);
            assert_eq!(setting.to_string(), text);
            let json = serde_json::to_string(&setting).expect("json");
            let back: LimitSetting = serde_json::from_str(&json).expect(&json);
            assert_eq!(back, setting, "{json}");
        }
        let json = serde_json::to_value("max_requests=5".parse::<LimitSetting>().expect("parse"));
        assert_eq!(json.expect("json"), serde_json::json!({"max_requests": 5}));
    }

    #[test]
    fn the_text_journals_held_before_still_reads() {
        let old: Vec<LimitSetting> =
            serde_json::from_str(r#"["max_requests=3", " max_seconds = 60"]"#).expect("old form");
        let mut limits = RunLimits::default();
        for setting in &old {
            setting.apply(&mut limits);
        }
        assert_eq!(limits.max_requests, Some(3));
        assert_eq!(limits.max_seconds, Some(60.0));
    }

    #[test]
    fn bad_settings_say_what_to_write() {
        let cases = [
            (
                "max_requests",
                "is not KEY=VALUE: write a limit and its value",
            ),
            (
                "max_tokens=5",
                "unknown limit `max_tokens`; the limits are max_requests",
            ),
            (
                "max_requests=-1",
                "max_requests must be a whole number from 0",
            ),
            ("max_seconds=0", "max_seconds must be"),
            ("max_requests=1.5", "not `1.5`"),
        ];
        for (text, expected) in cases {
            let error = text.parse::<LimitSetting>().expect_err(text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
        for json in [
            r#"{}"#,
            r#"{"max_requests": 1, "max_seconds": 2}"#,
            r#"{"max_requests": -1}"#,
            r#"{"max_requests": "many"}"#,
            r#"["max_requests", 1]"#,
            r#""max_requests""#,
        ] {
            assert!(
                serde_json::from_str::<LimitSetting>(json).is_err(),
                "{json}"
            );
        }
    }
}
