//! Reading a hostile server's JSON: typed errors that name the field at fault, and field types whose
//! memory stays proportional to what is kept (extra choices skipped, tool calls counted, arguments
//! copied as text instead of a tree).

use std::fmt::{self, Write as _};
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};
use serde::Deserialize;

use super::error::{excerpt, printable, Secrets, EXCERPT_CHARS};
use super::service::MAX_TOOL_CALLS;

/// Parses `bytes` as `T`, a JSON object. The error is a printable problem: where the JSON is broken
/// with an excerpt of the body, or which field has the wrong type.
pub(crate) fn parse_json<T: DeserializeOwned>(
    bytes: &[u8],
    secrets: &Secrets,
) -> Result<T, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') && serde_json::from_slice::<IgnoredAny>(bytes).is_ok() {
        // Serde would read a list as a struct's fields in order.
        return Err(format!(
            "it is JSON but not an object: {}",
            excerpt(bytes.trim_ascii(), EXCERPT_CHARS, secrets)
        ));
    }
    // Parsed first without tracking the path of each field: the path is only of use in an error,
    // and tracking it was most of what reading an answer cost (callgrind). A body that fails is
    // parsed again, the same way but tracked, to say where.
    if let Ok(value) = serde_json::from_slice::<T>(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let path = e.path().to_string();
        (Some(path), e.into_inner())
    });
    let parsed = parsed.and_then(|value| de.end().map(|()| value).map_err(|e| (None, e)));
    parsed.map_err(|(path, error)| {
        let problem = |text: &str| printable(&secrets.redact(text), EXCERPT_CHARS, false);
        match error.classify() {
            serde_json::error::Category::Data => match path.filter(|p| p != ".") {
                Some(path) => format!("`{}`: {}", problem(&path), problem(&error.to_string())),
                None => problem(&error.to_string()),
            },
            _ if bytes.iter().all(u8::is_ascii_whitespace) => "it is empty".to_owned(),
            _ => format!(
                "it is not JSON ({}): {}",
                error,
                excerpt(bytes.trim_ascii(), EXCERPT_CHARS, secrets)
            ),
        }
    })
}

/// The first element of a JSON list; the others are skipped without being kept.
#[derive(Debug)]
pub(crate) struct FirstOnly<T>(pub(crate) Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for FirstOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct First<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for First<T> {
            type Value = FirstOnly<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<T>()?;
                if first.is_some() {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                }
                Ok(FirstOnly(first))
            }
        }
        deserializer.deserialize_seq(First(PhantomData))
    }
}

/// A list of tool calls, at most [`MAX_TOOL_CALLS`] of them.
#[derive(Debug)]
pub(crate) struct ToolCallList<T>(pub(crate) Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ToolCallList<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Bounded<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Bounded<T> {
            type Value = ToolCallList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of tool calls")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut calls = Vec::new();
                while let Some(call) = seq.next_element::<T>()? {
                    if calls.len() == MAX_TOOL_CALLS {
                        return Err(de::Error::custom(format!(
                            "more than {MAX_TOOL_CALLS} tool calls in one answer"
                        )));
                    }
                    calls.push(call);
                }
                Ok(ToolCallList(calls))
            }
        }
        deserializer.deserialize_seq(Bounded(PhantomData))
    }
}

/// A message's `content`: a string, or a list of parts whose `text`s are joined (other parts, such
/// as images, are left out). Anything else is an error that names the field.
#[derive(Debug)]
pub(crate) struct Content(pub(crate) String);

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, null or a list of content parts")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                #[derive(Deserialize)]
                struct Part {
                    text: Option<String>,
                }
                let mut text = String::new();
                while let Some(part) = seq.next_element::<Part>()? {
                    text.push_str(part.text.as_deref().unwrap_or_default());
                }
                Ok(Content(text))
            }
        }
        deserializer.deserialize_any(Text)
    }
}

/// Tool-call `arguments`: a string as it is, any other JSON value as compact JSON text. The text is
/// written while reading, so no tree of the value is ever built.
#[derive(Debug)]
pub(crate) struct Arguments(pub(crate) String);

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Top;
        impl<'de> Visitor<'de> for Top {
            type Value = Arguments;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("tool-call arguments")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Arguments, E> {
                Ok(Arguments(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Arguments, E> {
                Ok(Arguments(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Arguments, A::Error> {
                let mut out = String::new();
                Transcode(&mut out).visit_map(map)?;
                Ok(Arguments(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Arguments, A::Error> {
                let mut out = String::new();
                Transcode(&mut out).visit_seq(seq)?;
                Ok(Arguments(out))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Arguments, E> {
                Ok(Arguments(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Arguments, E> {
                Ok(Arguments(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Arguments, E> {
                Ok(Arguments(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Arguments, E> {
                Ok(Arguments(number(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Arguments, E> {
                Ok(Arguments(String::new()))
            }
        }
        deserializer.deserialize_any(Top)
    }
}

fn number(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| "null".to_owned(), |n| n.to_string())
}

/// Writes the JSON value it reads into a string, compactly.
struct Transcode<'a>(&'a mut String);

impl Transcode<'_> {
    fn quoted(&mut self, text: &str) {
        // Serialising a string cannot fail.
        self.0
            .push_str(&serde_json::to_string(text).unwrap_or_default());
    }
}

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.0.push_str(&number(v));
        Ok(())
    }
    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<(), E> {
        self.quoted(v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.push_str("null");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push('[');
        let mut first = true;
        loop {
            let mark = self.0.len();
            if !first {
                self.0.push(',');
            }
            if seq.next_element_seed(Transcode(self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
        }
        self.0.push(']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.0.push('{');
        let mut first = true;
        while let Some(key) = map.next_key::<String>()? {
            if !first {
                self.0.push(',');
            }
            first = false;
            self.quoted(&key);
            self.0.push(':');
            map.next_value_seed(Transcode(self.0))?;
        }
        self.0.push('}');
        Ok(())
    }
}

/// An `error` member of an answer: its message when it has one, else a placeholder. Nothing else of
/// it is kept.
#[derive(Debug)]
pub(crate) struct ErrorField(pub(crate) String);

impl<'de> Deserialize<'de> for ErrorField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Message;
        impl<'de> Visitor<'de> for Message {
            type Value = ErrorField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an error")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ErrorField, E> {
                Ok(ErrorField(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ErrorField, A::Error> {
                let mut message = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "message" && message.is_none() {
                        message = map.next_value::<Option<Content>>()?.map(|c| c.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ErrorField(
                    message.unwrap_or_else(|| "(no message)".to_owned()),
                ))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ErrorField, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ErrorField("(no message)".to_owned()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<ErrorField, E> {
                Ok(ErrorField("(no message)".to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ErrorField, E> {
                Ok(ErrorField(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ErrorField, E> {
                Ok(ErrorField(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ErrorField, E> {
                Ok(ErrorField(number(v)))
            }
        }
        deserializer.deserialize_any(Message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Probe {
        first: Option<FirstOnly<u8>>,
        content: Option<Content>,
        arguments: Option<Arguments>,
        #[allow(dead_code)]
        calls: Option<ToolCallList<IgnoredAny>>,
    }

    fn probe(text: &str) -> Result<Probe, String> {
        parse_json(text.as_bytes(), &Secrets::default())
    }

    #[test]
    fn fields_are_read_with_bounded_memory_and_named_when_wrong() {
        let p = probe(r#"{"first": [1, {"x": [2]}, "skipped"], "content": [{"text": "a"}, {"type": "image"}, {"text": "b"}],
                         "arguments": {"a": [1, 2.5, null, true, "q\"uote"], "b": {}}}"#)
        .expect("parses");
        assert_eq!(p.first.and_then(|f| f.0), Some(1));
        assert_eq!(p.content.map(|c| c.0).as_deref(), Some("ab"));
        assert_eq!(
            p.arguments.map(|a| a.0).as_deref(),
            Some(r#"{"a":[1,2.5,null,true,"q\"uote"],"b":{}}"#)
        );
        let wrong = probe(r#"{"content": 42}"#).expect_err("wrong type");
        assert!(
            wrong.starts_with("`content`: invalid type: integer `42`"),
            "{wrong}"
        );
        let many = format!(
            r#"{{"calls": [{}]}}"#,
            vec!["{}"; MAX_TOOL_CALLS + 1].join(",")
        );
        let many = probe(&many).expect_err("too many");
        assert!(many.contains("more than 1024 tool calls"), "{many}");
        let html = probe("<html>\n<body>hi</body></html>").expect_err("not json");
        assert!(
            html.starts_with("it is not JSON (expected value at line 1 column 1): <html>\\n<body>"),
            "{html}"
        );
        assert_eq!(probe("  ").expect_err("empty"), "it is empty");
        let trailing = probe("{} x").expect_err("trailing");
        assert!(
            trailing.starts_with("it is not JSON (trailing characters"),
            "{trailing}"
        );
    }
}
