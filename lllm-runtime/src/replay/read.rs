//! Reading a trace as hostile input: bounded lines and file size, every number range-checked, and an
//! error that names the line, the field and what is allowed.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use lllm_core::{InferenceHints, Profile, TraceHeader, TraceRow, AGENTIC_SCHEMA, TRACE_FORMAT};
use serde_json::Value;

use super::agentic::{self, Graph};
use super::limits::{
    MAX_BLOCK_TOKENS, MAX_HASH_ID, MAX_LINE_BYTES, MAX_PROMPT_TOKENS, MAX_ROWS, MAX_SCHEDULE_MS,
    MAX_TOKENS, MAX_TRACE_BYTES,
};
use super::request::{priority_in_range, Request};
use super::text::{describe, kind, plain, plain_in, shorten};
use super::ReplayError;

/// The fields every row needs, as the error for a missing one lists them.
const REQUIRED: &str = "session_id, agent, timestamp, delay, tool_wait_ms, input_length, \
                        output_length, hash_ids and latency_ms";

/// A trace read and checked, ready to replay. An `lllm-trace/1` trace (or header-less Mooncake
/// rows) gives its sessions (in order of their ids), each with its requests in trace order; an
/// agentic trace (`dynamo.agentic_mooncake` version 2) gives its request graph.
#[derive(Debug, Clone)]
pub struct Trace {
    pub(super) block_size: usize,
    pub(super) sessions: Vec<Session>,
    /// The request graph of an agentic trace (then `sessions` is empty).
    pub(super) graph: Option<Graph>,
    requests: usize,
}

/// One recorded chain of requests.
#[derive(Debug, Clone)]
pub(super) struct Session {
    pub(super) id: String,
    pub(super) requests: Vec<Request>,
}

impl Trace {
    /// Reads a trace file. Only a regular file of at most
    /// [`MAX_TRACE_BYTES`](super::limits::MAX_TRACE_BYTES) is read (not a FIFO, a device or a folder).
    /// A trace written without its header (`--trace-rows-only`) is read with blocks of
    /// `default_block` tokens.
    pub fn open(path: &Path, default_block: usize) -> Result<Trace, ReplayError> {
        let file = open_regular(path)?;
        Trace::read(BufReader::new(file), default_block)
    }

    /// Reads a trace from text (see [`Trace::read`]).
    pub fn parse(text: &str, default_block: usize) -> Result<Trace, ReplayError> {
        Trace::read(text.as_bytes(), default_block)
    }

    /// Reads a trace line by line, in either format: `lllm-trace/1` (a first line
    /// `{"format": "lllm-trace/1", ...}`, or rows only) or NVIDIA Dynamo's agentic traces (a first
    /// line `{"schema": "dynamo.agentic_mooncake", "version": 2, ...}`, then one request a line in
    /// any order, each naming the requests it waits for). At most
    /// [`MAX_LINE_BYTES`](super::limits::MAX_LINE_BYTES) a line and
    /// [`MAX_TRACE_BYTES`](super::limits::MAX_TRACE_BYTES) in all, every field checked against
    /// [`limits`](super::limits). Memory grows with the trace's rows, never with a number written in
    /// it. A trace without its header is read with blocks of `default_block` tokens.
    pub fn read(reader: impl BufRead, default_block: usize) -> Result<Trace, ReplayError> {
        Trace::read_within(reader, default_block, MAX_TRACE_BYTES, MAX_ROWS)
    }

    /// [`Trace::read`] with other bounds on the bytes and rows (smaller ones, in tests).
    pub(super) fn read_within(
        reader: impl BufRead,
        default_block: usize,
        max_bytes: u64,
        max_rows: usize,
    ) -> Result<Trace, ReplayError> {
        if check_block_size(default_block).is_err() {
            return Err(ReplayError::BlockSize {
                tokens: default_block,
            });
        }
        let mut lines = Lines::new(reader, max_bytes);
        let mut reading = Reading::new(default_block, max_rows)?;
        while let Some((line, text)) = lines.next()? {
            if text.trim().is_empty() {
                continue;
            }
            reading
                .line(line, text)
                .map_err(|message| ReplayError::Format { line, message })?;
        }
        reading.finish()
    }

    /// Tokens per block of its `hash_ids`.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// How many requests (rows) it has.
    pub fn requests(&self) -> usize {
        self.requests
    }

    /// How many sessions it has (in an agentic trace, distinct sessions of each play).
    pub fn sessions(&self) -> usize {
        self.graph
            .as_ref()
            .map_or(self.sessions.len(), |g| g.sessions)
    }

    /// Whether it is an agentic trace (`dynamo.agentic_mooncake`): requests sent when what they
    /// wait for is done, rather than by session.
    pub fn is_agentic(&self) -> bool {
        self.graph.is_some()
    }
}

/// The lines of a trace, each as UTF-8 text with its 1-based number, read within the bounds: at most `max_bytes` in all and [`MAX_LINE_BYTES`] a line.
struct Lines<R> {
    reader: std::io::Take<R>,
    max_bytes: u64,
    buf: Vec<u8>,
    line: usize,
}

impl<R: BufRead> Lines<R> {
    fn new(reader: R, max_bytes: u64) -> Self {
        Lines {
            reader: reader.take(max_bytes.saturating_add(1)),
            max_bytes,
            buf: Vec::new(),
            line: 0,
        }
    }

    /// The next line, or `None` at the end.
    fn next(&mut self) -> Result<Option<(usize, &str)>, ReplayError> {
        if !self.read_line()? {
            return Ok(None);
        }
        Ok(Some((self.line, self.text()?)))
    }

    /// Reads the next line into `buf`, without its line end; `false` at the end.
    fn read_line(&mut self) -> Result<bool, ReplayError> {
        self.buf.clear();
        let read = (&mut self.reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ReplayError::Format {
                line: self.line + 1,
                message: format!("cannot read the trace: {e}"),
            })?;
        if read == 0 {
            return Ok(false);
        }
        self.line += 1;
        let at = |message: String| ReplayError::Format {
            line: self.line,
            message,
        };
        if self.reader.limit() == 0 {
            return Err(at(format!(
                "the trace is larger than {} bytes ({} MiB); split it into smaller traces",
                self.max_bytes,
                self.max_bytes / (1024 * 1024)
            )));
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > MAX_LINE_BYTES {
            return Err(at(format!(
                "the line is longer than {} MiB; a trace is JSON lines, one request a line",
                MAX_LINE_BYTES / (1024 * 1024)
            )));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(true)
    }

    /// The line read, as text (a byte-order mark on the first line left out).
    fn text(&self) -> Result<&str, ReplayError> {
        let bytes = match self.buf.strip_prefix(b"\xEF\xBB\xBF") {
            Some(rest) if self.line == 1 => rest,
            _ => &self.buf[..],
        };
        std::str::from_utf8(bytes).map_err(|e| ReplayError::Format {
            line: self.line,
            message: format!(
                "not UTF-8 text (an invalid byte at column {}); a trace is JSON lines in UTF-8",
                e.valid_up_to() + 1
            ),
        })
    }
}

/// A trace being read: the header on the first line, if there is one, decides the format of the rows.
struct Reading {
    builder: Builder,
    agentic: Option<agentic::Builder>,
    /// The header's line and block size.
    header: Option<(usize, usize)>,
    first: bool,
    max_rows: usize,
}

impl Reading {
    fn new(default_block: usize, max_rows: usize) -> Result<Reading, ReplayError> {
        Ok(Reading {
            builder: Builder::new(default_block, max_rows)?,
            agentic: None,
            header: None,
            first: true,
            max_rows,
        })
    }

    /// Reads line `line`: the header, or a row of the format it says.
    fn line(&mut self, line: usize, text: &str) -> Result<(), String> {
        if std::mem::take(&mut self.first) {
            match is_header(text)? {
                Some(Header::Lllm) => {
                    let (block, profile) = read_header(text)?;
                    self.header = Some((line, block));
                    self.builder.block_size = block;
                    self.builder.profile = profile;
                    return Ok(());
                }
                Some(Header::Agentic) => {
                    let block = agentic::read_header(text)?;
                    self.header = Some((line, block));
                    self.builder.block_size = block;
                    let ids = self.builder.ids.clone();
                    self.agentic = Some(agentic::Builder::new(block, ids, self.max_rows));
                    return Ok(());
                }
                None => {}
            }
        }
        match &mut self.agentic {
            Some(graph) => graph.row(text, line),
            None => self.builder.row(text),
        }
    }

    /// The trace, once every line is read; a trace with no row is refused.
    fn finish(self) -> Result<Trace, ReplayError> {
        let requests = self
            .agentic
            .as_ref()
            .map_or(self.builder.requests, |g| g.requests());
        match (requests, self.header) {
            (0, Some((header_line, _))) => Err(ReplayError::Format {
                line: header_line,
                message: "the trace has a header but no rows (no request to replay); record one \
                          by tracing a run"
                    .into(),
            }),
            (0, None) => Err(ReplayError::Format {
                line: 1,
                message: format!(
                    "the trace is empty; a trace is JSON lines, starting with {{\"format\": \
                     \"{TRACE_FORMAT}\", ...}} and one row per request (a traced run writes one)"
                ),
            }),
            _ => match self.agentic {
                Some(graph) => {
                    let graph = graph.finish()?;
                    Ok(Trace {
                        block_size: self.builder.block_size,
                        sessions: Vec::new(),
                        requests: graph.nodes.len(),
                        graph: Some(graph),
                    })
                }
                None => Ok(self.builder.finish()),
            },
        }
    }
}

/// Opens `path` only if it is a regular file of an acceptable size. The file is opened without
/// blocking, so a FIFO put in its place between the check and the open cannot hang the reader.
fn open_regular(path: &Path) -> Result<std::fs::File, ReplayError> {
    let shown = path.display();
    let file_error =
        |message: String, source: Option<std::io::Error>| ReplayError::File { message, source };
    let meta = std::fs::metadata(path)
        .map_err(|e| file_error(format!("cannot read the trace {shown}"), Some(e)))?;
    check_file_type(&meta, path)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| file_error(format!("cannot read the trace {shown}"), Some(e)))?;
    let meta = file
        .metadata()
        .map_err(|e| file_error(format!("cannot read the trace {shown}"), Some(e)))?;
    check_file_type(&meta, path)?;
    Ok(file)
}

fn check_file_type(meta: &std::fs::Metadata, path: &Path) -> Result<(), ReplayError> {
    let shown = path.display();
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a folder"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(ReplayError::File {
            message: format!("the trace {shown} is {kind}; give the path of a trace file"),
            source: None,
        });
    }
    if meta.len() > MAX_TRACE_BYTES {
        return Err(ReplayError::File {
            message: format!(
                "the trace {shown} has {} bytes, more than the {} MiB allowed; split it into \
                 smaller traces",
                meta.len(),
                MAX_TRACE_BYTES / (1024 * 1024)
            ),
            source: None,
        });
    }
    Ok(())
}

/// The two kinds of header line.
enum Header {
    /// `{"format": "lllm-trace/1", ...}`.
    Lllm,
    /// `{"schema": "dynamo.agentic_mooncake", ...}`.
    Agentic,
}

/// Whether the first line is a header (an object with a `format` or `schema` key) rather than a
/// row, and which.
fn is_header(text: &str) -> Result<Option<Header>, String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        format: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        schema: Option<serde::de::IgnoredAny>,
    }
    match serde_json::from_str::<Probe>(text) {
        Ok(Probe {
            schema: Some(_), ..
        }) => Ok(Some(Header::Agentic)),
        Ok(Probe {
            format: Some(_), ..
        }) => Ok(Some(Header::Lllm)),
        Ok(_) => Ok(None),
        Err(e) => Err(match serde_json::from_str::<Value>(text) {
            Err(_) => format!(
                "not a trace header or row: not valid JSON ({}); a trace starts with {{\"format\": \"{TRACE_FORMAT}\", ...}}, \
                 {{\"schema\": \"{AGENTIC_SCHEMA}\", ...}} or a row",
                plain_in(&e, text)
            ),
            Ok(value) => format!(
                "not a trace header or row: a trace line must be a JSON object, not {}; a trace \
                 starts with {{\"format\": \
                 \"{TRACE_FORMAT}\", ...}}, {{\"schema\": \"{AGENTIC_SCHEMA}\", ...}} or a row",
                kind(&value)
            ),
        }),
    }
}

/// The block size and the profile (when it says) of an `lllm-trace/1` header.
fn read_header(text: &str) -> Result<(usize, Option<Profile>), String> {
    let header: TraceHeader =
        serde_json::from_str(text).map_err(|e| match serde_json::from_str::<Value>(text) {
            Err(_) => format!("not valid JSON ({})", plain_in(&e, text)),
            Ok(value) => diagnose(
                &value,
                HEADER_FIELDS,
                "the header needs format, block_size and blocks",
            )
            .unwrap_or_else(|| format!("not a trace header: {}", plain(&e))),
        })?;
    if header.format != TRACE_FORMAT {
        return Err(format!(
            "field `format`: `{}` is not `{TRACE_FORMAT}`; this lllm reads `{TRACE_FORMAT}` traces",
            shorten(&header.format)
        ));
    }
    check_block_size(header.block_size)?;
    Ok((header.block_size, header.profile))
}

fn check_block_size(block: usize) -> Result<(), String> {
    if (1..=MAX_BLOCK_TOKENS).contains(&block) {
        Ok(())
    } else {
        Err(format!(
            "field `block_size`: {block} is out of range; use a whole number of tokens from 1 to \
             {MAX_BLOCK_TOKENS}"
        ))
    }
}

/// Sessions as rows arrive, with each session's schedule so far.
struct Builder {
    block_size: usize,
    /// The header's profile: what rows that name none were sent with.
    profile: Option<Profile>,
    /// Hints that send session ids, to check that each recorded id can go into a header.
    ids: InferenceHints,
    max_rows: usize,
    index: HashMap<String, usize>,
    sessions: Vec<Session>,
    schedule: Vec<u64>,
    requests: usize,
}

impl Builder {
    fn new(block_size: usize, max_rows: usize) -> Result<Builder, ReplayError> {
        let ids = InferenceHints::builder().profile(Profile::Dynamo).build()?;
        Ok(Builder {
            block_size,
            profile: None,
            ids,
            max_rows,
            index: HashMap::new(),
            sessions: Vec::new(),
            schedule: Vec::new(),
            requests: 0,
        })
    }

    fn row(&mut self, text: &str) -> Result<(), String> {
        let row: TraceRow = serde_json::from_str(text).map_err(|e| row_error(text, &e))?;
        if self.requests >= self.max_rows {
            return Err(format!(
                "more than {} requests; split the trace into smaller ones",
                self.max_rows
            ));
        }
        let mut request = check_row(&row, self.block_size, &self.ids)?;
        request.sent_with = row.profile.or(self.profile);
        let session = match self.index.get(&row.session_id) {
            Some(i) => *i,
            None => {
                let i = self.sessions.len();
                self.index.insert(row.session_id.clone(), i);
                self.sessions.push(Session {
                    id: row.session_id,
                    requests: Vec::new(),
                });
                self.schedule.push(0);
                i
            }
        };
        // A session starts at its first timestamp and then waits its delays: together they must stay
        // within the longest schedule (each is at most that, so the sum cannot overflow).
        let first = self.sessions[session].requests.is_empty();
        let (field, step) = if first {
            ("timestamp", request.timestamp)
        } else {
            ("delay", request.delay)
        };
        let total = self.schedule[session].saturating_add(step);
        if total > MAX_SCHEDULE_MS {
            return Err(format!(
                "field `{field}`: session `{}` would run for {total} ms (its first timestamp plus \
                 its delays), more than the {MAX_SCHEDULE_MS} ms (7 days) a replay may last; \
                 shorten the delays",
                shorten(&self.sessions[session].id)
            ));
        }
        self.schedule[session] = total;
        self.sessions[session].requests.push(request);
        self.requests += 1;
        Ok(())
    }

    fn finish(mut self) -> Trace {
        self.sessions.sort_by(|a, b| a.id.cmp(&b.id));
        Trace {
            block_size: self.block_size,
            sessions: self.sessions,
            graph: None,
            requests: self.requests,
        }
    }
}

/// Range checks of a row that parsed, and what replay keeps of it.
fn check_row(row: &TraceRow, block: usize, ids: &InferenceHints) -> Result<Request, String> {
    if let Err(e) = ids.session_ids(&row.session_id, None) {
        return Err(format!("field `session_id`: {e}"));
    }
    if let Some(parent) = &row.parent_session_id {
        if let Err(e) = ids.session_ids(parent, None) {
            return Err(format!("field `parent_session_id`: {e}"));
        }
    }
    for (field, value) in [
        ("timestamp", row.timestamp),
        ("delay", row.delay),
        ("tool_wait_ms", row.tool_wait_ms),
        ("latency_ms", row.latency_ms),
    ]
    .into_iter()
    .chain(row.ttft_ms.map(|t| ("ttft_ms", t)))
    {
        at_most(field, value, MAX_SCHEDULE_MS)?;
    }
    for (field, value) in [
        ("input_length", row.input_length),
        ("output_length", row.output_length),
    ]
    .into_iter()
    .chain(row.cached_tokens.map(|t| ("cached_tokens", t)))
    .chain(row.osl.map(|t| ("osl", t)))
    {
        at_most(field, value, MAX_TOKENS)?;
    }
    let most_ids = MAX_PROMPT_TOKENS / block as u64;
    if row.hash_ids.len() as u64 > most_ids {
        return Err(format!(
            "field `hash_ids`: {} blocks of {block} tokens is more than the {MAX_PROMPT_TOKENS} \
             tokens a replayed prompt may have (at most {most_ids} ids at this block size)",
            row.hash_ids.len()
        ));
    }
    if let Some((i, id)) = row
        .hash_ids
        .iter()
        .enumerate()
        .find(|(_, id)| **id > MAX_HASH_ID)
    {
        return Err(format!(
            "field `hash_ids`, item {}: {id} is out of range; block ids are whole numbers from 0 \
             to {MAX_HASH_ID}",
            i + 1
        ));
    }
    let priority = priority_in_range(row.priority, "field `priority`")?;
    Ok(Request {
        parent: row.parent_session_id.as_deref().map(Arc::from),
        timestamp: row.timestamp,
        delay: row.delay,
        output_length: row.output_length,
        hash_ids: row.hash_ids.clone().into_boxed_slice(),
        priority,
        // Checked against u32::MAX with the row's fields.
        strict_priority: row.strict_priority.and_then(|t| u32::try_from(t).ok()),
        // Checked against MAX_TOKENS above, which is below u32::MAX.
        osl: row
            .osl
            .and_then(|o| u32::try_from(o).ok())
            .filter(|o| *o > 0),
        sent_with: None,
        last_block: None,
    })
}

fn at_most(field: &str, value: u64, max: u64) -> Result<(), String> {
    if value <= max {
        Ok(())
    } else {
        Err(format!(
            "field `{field}`: {value} is out of range; use a whole number from 0 to {max}{}",
            unit(field)
        ))
    }
}

fn unit(field: &str) -> &'static str {
    match field {
        "timestamp" | "delay" | "tool_wait_ms" | "latency_ms" | "ttft_ms" => {
            " (ms, at most 7 days)"
        }
        "input_length" | "output_length" | "cached_tokens" | "osl" => " (tokens)",
        _ => "",
    }
}

/// What a field must hold, for the message when a row or header does not parse.
#[derive(Clone, Copy)]
enum Expect {
    Text,
    Whole(u64),
    Integer,
    Flag,
    Ids,
    Profile,
}

const HEADER_FIELDS: &[(&str, Expect, bool)] = &[
    ("format", Expect::Text, true),
    ("block_size", Expect::Whole(MAX_BLOCK_TOKENS as u64), true),
    ("blocks", Expect::Text, true),
    ("profile", Expect::Profile, false),
];

const ROW_FIELDS: &[(&str, Expect, bool)] = &[
    ("session_id", Expect::Text, true),
    ("parent_session_id", Expect::Text, false),
    ("profile", Expect::Profile, false),
    ("agent", Expect::Text, true),
    ("timestamp", Expect::Whole(MAX_SCHEDULE_MS), true),
    ("delay", Expect::Whole(MAX_SCHEDULE_MS), true),
    ("tool_wait_ms", Expect::Whole(MAX_SCHEDULE_MS), true),
    ("input_length", Expect::Whole(MAX_TOKENS), true),
    ("output_length", Expect::Whole(MAX_TOKENS), true),
    ("lengths_estimated", Expect::Flag, false),
    ("cached_tokens", Expect::Whole(MAX_TOKENS), false),
    ("hash_ids", Expect::Ids, true),
    ("priority", Expect::Integer, false),
    ("strict_priority", Expect::Whole(u32::MAX as u64), false),
    ("osl", Expect::Whole(MAX_TOKENS), false),
    ("latency_ms", Expect::Whole(MAX_SCHEDULE_MS), true),
    ("ttft_ms", Expect::Whole(MAX_SCHEDULE_MS), false),
];

/// The message for a row that did not parse.
fn row_error(text: &str, error: &serde_json::Error) -> String {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => return format!("not valid JSON ({})", plain_in(error, text)),
    };
    if value.get("format").is_some() {
        return "a second header; a trace has one header, on its first line (were two traces \
                joined? replay them one at a time)"
            .into();
    }
    diagnose(&value, ROW_FIELDS, &format!("every row needs {REQUIRED}"))
        .unwrap_or_else(|| format!("not a trace row: {}", plain(error)))
}

/// Names the first field of `value` that is missing or of the wrong kind, if one is.
fn diagnose(value: &Value, fields: &[(&str, Expect, bool)], needs: &str) -> Option<String> {
    let Some(object) = value.as_object() else {
        return Some(format!(
            "a trace line must be a JSON object, not {}",
            kind(value)
        ));
    };
    for (name, expect, required) in fields {
        let found = match object.get(*name) {
            None if *required => return Some(format!("missing field `{name}`; {needs}")),
            None => continue,
            Some(Value::Null) if !*required => continue,
            Some(found) => found,
        };
        if let Some(problem) = mismatch(found, *expect) {
            return Some(format!("field `{name}`: {problem}"));
        }
    }
    None
}

fn mismatch(found: &Value, expect: Expect) -> Option<String> {
    let whole = |v: &Value, max: u64| match v.as_u64() {
        Some(n) if n <= max => None,
        _ => Some(format!(
            "expected a whole number from 0 to {max}, found {}",
            describe(v)
        )),
    };
    match expect {
        Expect::Text if found.is_string() => None,
        Expect::Text => Some(format!("expected a string, found {}", describe(found))),
        Expect::Flag if found.is_boolean() => None,
        Expect::Flag => Some(format!("expected true or false, found {}", describe(found))),
        Expect::Whole(max) => whole(found, max),
        Expect::Integer if found.is_i64() => None,
        Expect::Integer => Some(format!(
            "expected a whole number from {} to {}, found {}",
            i32::MIN,
            i32::MAX,
            describe(found)
        )),
        Expect::Profile => {
            let known = Profile::ALL
                .iter()
                .any(|p| found.as_str() == Some(p.as_str()));
            (!known).then(|| {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.as_str()).collect();
                format!(
                    "expected the profile the hints were sent with, one of {}, found {}",
                    names.join(", "),
                    describe(found)
                )
            })
        }
        Expect::Ids => match found.as_array() {
            None => Some(format!(
                "expected an array of block ids, found {}",
                describe(found)
            )),
            Some(items) => items.iter().enumerate().find_map(|(i, item)| {
                whole(item, MAX_HASH_ID).map(|m| format!("item {}: {m}", i + 1))
            }),
        },
    }
}
