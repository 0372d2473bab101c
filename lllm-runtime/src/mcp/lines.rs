//! A stdio server's output, cut into messages of at most [`MAX_MESSAGE_BYTES`] and
//! [`MAX_MESSAGE_VALUES`].
//!
//! The SDK's transport drops a longer line silently, so the request it answered would wait for its
//! timeout (a call, `timeout_s`; the tool listing, `startup_timeout_s`) and then be reported as too
//! slow. And a line within the byte limit may still hold hundreds of thousands of tiny JSON objects,
//! which the SDK's parser turns into hundreds of bytes each: 16 MiB of `{"type":"text","text":""}`
//! blocks take most of a GiB. Here a line is passed on while it is within both limits; past one, it
//! is ended early (the transport drops the cut message as unparsable), its rest is read and dropped,
//! and, when it was an answer to a request, an error answer to that request takes its place, saying
//! what was too large. Nothing of it is kept but what finds the answer's `id`.

use std::io::{BufRead, Cursor};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};

/// Most bytes of one message from a server: a JSON-RPC line here, an HTTP body (held to it by the
/// transport's settings).
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The `data.lllm` of the error answer that replaces an oversized one.
pub(crate) const OVERSIZED: &str = "oversized";

/// Most JSON values (objects, arrays, and the items and members after the first, counted by their
/// commas) in one message: a listing of the most tools allowed, with rich schemas, has a few tens of
/// thousands.
pub(crate) const MAX_MESSAGE_VALUES: usize = 200_000;

/// Deepest nesting of a message. The SDK's JSON parser gives up past 128 levels and drops the
/// message silently; here the request gets an error answer instead.
const MAX_MESSAGE_DEPTH: usize = 100;

/// Bytes read from the server at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// A server's stdout, each line at most `limit` bytes (its newline left out), `max_values` values
/// and [`MAX_MESSAGE_DEPTH`] levels.
pub(crate) struct BoundedLines<R> {
    inner: R,
    limit: usize,
    max_values: usize,
    chunk: Box<[u8]>,
    /// The unread part of `chunk`.
    start: usize,
    end: usize,
    /// Bytes of the current line read so far.
    line: usize,
    /// Whether the current line passed the limit, so that its rest is dropped.
    cut: bool,
    scan: Scan,
    /// Bytes to hand out before reading on: the end of a cut line, an error answer.
    out: Vec<u8>,
    out_pos: usize,
}

impl<R> BoundedLines<R> {
    /// `inner` cut at [`MAX_MESSAGE_BYTES`] and [`MAX_MESSAGE_VALUES`].
    pub(crate) fn new(inner: R) -> Self {
        Self::with_limits(inner, MAX_MESSAGE_BYTES, MAX_MESSAGE_VALUES)
    }

    fn with_limits(inner: R, limit: usize, max_values: usize) -> Self {
        BoundedLines {
            inner,
            limit,
            max_values,
            chunk: vec![0; CHUNK_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            line: 0,
            cut: false,
            scan: Scan::default(),
            out: Vec::new(),
            out_pos: 0,
        }
    }

    /// The line that passed a limit has ended after `size` bytes: an error answer when it
    /// answered a request.
    fn oversized(&mut self, size: usize) {
        let scan = std::mem::take(&mut self.scan);
        let Some(id) = scan.answered_id() else {
            tracing::debug!(target: "lllm::mcp", "dropped a message of {size} bytes from an MCP server");
            return;
        };
        let message = if scan.deepest > MAX_MESSAGE_DEPTH {
            format!(
                "the answer is nested more than {MAX_MESSAGE_DEPTH} levels deep, the most an MCP message may be"
            )
        } else if scan.values > self.max_values {
            format!(
                "the answer has more than {} JSON values (objects, arrays, items), the most an MCP message may have",
                self.max_values
            )
        } else {
            format!(
                "the answer has {size} bytes, more than the {} bytes an MCP message may have",
                self.limit
            )
        };
        let answer = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32603,
                "message": message,
                "data": {"lllm": OVERSIZED, "bytes": size},
            },
        });
        self.out = answer.to_string().into_bytes();
        self.out.push(b'\n');
        self.out_pos = 0;
    }
}

/// Where `byte` first is in `data`, found with the standard library's `memchr` (fast even in a
/// debug build, which matters for lines of 100 MiB).
fn find(byte: u8, data: &[u8]) -> Option<usize> {
    let skipped = Cursor::new(data).skip_until(byte).unwrap_or(data.len());
    (skipped > 0 && data[skipped - 1] == byte).then(|| skipped - 1)
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.hand_out(buf) {
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end && !ready!(this.poll_fill(cx))? {
                // The server's output ended.
                return Poll::Ready(Ok(()));
            }
            if this.cut {
                this.drop_cut();
            } else if this.pass_on(buf) {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    /// Reads the next chunk of the server's output; false at its end.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<bool>> {
        let mut read = ReadBuf::new(&mut self.chunk);
        ready!(Pin::new(&mut self.inner).poll_read(cx, &mut read))?;
        let n = read.filled().len();
        self.start = 0;
        self.end = n;
        Poll::Ready(Ok(n > 0))
    }
}

impl<R> BoundedLines<R> {
    /// Hands out what waits in `out` (the end of a cut line, an error answer); false when nothing
    /// waits.
    fn hand_out(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        if self.out_pos >= self.out.len() {
            return false;
        }
        let n = (self.out.len() - self.out_pos).min(buf.remaining());
        buf.put_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        true
    }

    /// Drops the chunk's part of a line over a limit, looking for its `id` on the way; where the
    /// line ends, an error answer takes its place.
    fn drop_cut(&mut self) {
        let data = &self.chunk[self.start..self.end];
        let newline = find(b'\n', data);
        let content = newline.unwrap_or(data.len());
        self.scan.feed(&data[..content]);
        self.line += content;
        self.start += newline.map_or(content, |i| i + 1);
        if newline.is_some() {
            let size = self.line;
            self.cut = false;
            self.line = 0;
            self.oversized(size);
        }
    }

    /// Passes on the chunk's part of the current line while it stays within the limits; true when
    /// `buf` got bytes (or has no room), false when the line was cut instead.
    fn pass_on(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        let data = &self.chunk[self.start..self.end];
        let newline = find(b'\n', data);
        let content = newline.unwrap_or(data.len());
        if self.line + content > self.limit {
            // Ends the line the transport has begun: it drops it as unparsable.
            self.cut = true;
            self.out.push(b'\n');
            return false;
        }
        let whole = newline.map_or(content, |i| i + 1);
        let n = whole.min(buf.remaining());
        if n == 0 {
            return true;
        }
        let fed = n.min(content);
        self.scan.feed(&data[..fed]);
        if self.scan.values > self.max_values || self.scan.deepest > MAX_MESSAGE_DEPTH {
            // Too many values or levels: what was fed is dropped, and so is the rest of the line.
            self.start += fed;
            self.line += fed;
            self.cut = true;
            self.out.push(b'\n');
            return false;
        }
        buf.put_slice(&data[..n]);
        self.start += n;
        if n == whole && newline.is_some() {
            self.line = 0;
            self.scan = Scan::default();
        } else {
            self.line += n;
        }
        true
    }
}

/// What a line says about itself, read as it streams by: whether it is a JSON object, and its
/// top-level `id` and `method` (an answer has an `id` and no `method`). Keys and values below the
/// top level are skipped; so are long strings, quickly.
#[derive(Debug, Default)]
struct Scan {
    state: State,
    /// Nesting depth inside the top-level object (1: its own keys).
    depth: usize,
    /// Inside a string: what it is; and whether the previous byte was an escaping backslash.
    string: Option<Text>,
    escaped: bool,
    /// At the top level, whether the next string is a key, and the key whose value comes next.
    key_next: bool,
    key: Vec<u8>,
    value_of: Key,
    /// The raw text of the `id` value (a number or a string, quotes included).
    id: Vec<u8>,
    /// Whether `id` is being read (a number), or was read.
    reading_id: bool,
    /// Objects and arrays, and the commas between items and members, seen so far.
    values: usize,
    /// The deepest nesting seen so far.
    deepest: usize,
    has_id: bool,
    has_method: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first byte that is not white space.
    #[default]
    Start,
    Object,
    /// Not an object, or after its end: nothing more to learn.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    Key,
    Id,
    Other,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Key {
    #[default]
    Other,
    Id,
    Method,
}

/// Longest `id` text kept; a longer one is not answered.
const MAX_ID_BYTES: usize = 256;
/// Longest key text kept (`method` is the longest wanted).
const MAX_KEY_BYTES: usize = 16;

impl Scan {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() && self.state != State::Done {
            if self.string == Some(Text::Other) {
                data = self.skip_string(data);
                continue;
            }
            let byte = data[0];
            data = &data[1..];
            self.byte(byte);
        }
    }

    /// Skips the inside of a string nobody needs up to its closing quote, using `find`.
    fn skip_string<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        let Some(quote) = find(b'"', data) else {
            // The string goes on; remember whether it ends in an escaping backslash.
            let run = data.iter().rev().take_while(|b| **b == b'\\').count();
            let carried = if run == data.len() {
                usize::from(self.escaped)
            } else {
                0
            };
            self.escaped = (run + carried) % 2 == 1;
            return &[];
        };
        let run = data[..quote]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        let carried = if run == quote {
            usize::from(self.escaped)
        } else {
            0
        };
        self.escaped = false;
        if (run + carried) % 2 == 0 {
            self.string = None;
        }
        &data[quote + 1..]
    }

    fn byte(&mut self, byte: u8) {
        if let Some(text) = self.string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.string = None;
                match text {
                    Text::Key => {
                        self.value_of = match self.key.as_slice() {
                            b"id" => Key::Id,
                            b"method" => Key::Method,
                            _ => Key::Other,
                        };
                        self.has_method |= self.value_of == Key::Method;
                    }
                    Text::Id => self.push_id(byte),
                    Text::Other => {}
                }
                return;
            }
            match text {
                // A longer key is kept cut, one byte too long to be a wanted one.
                Text::Key if self.key.len() <= MAX_KEY_BYTES => self.key.push(byte),
                Text::Id => self.push_id(byte),
                Text::Key | Text::Other => {}
            }
            return;
        }
        match self.state {
            State::Start => match byte {
                b' ' | b'\t' | b'\r' | 0xEF | 0xBB | 0xBF => {}
                b'{' => {
                    self.state = State::Object;
                    self.depth = 1;
                    self.deepest = 1;
                    self.key_next = true;
                    self.values = 1;
                }
                _ => self.state = State::Done,
            },
            State::Object if self.depth == 1 => self.top_level(byte),
            State::Object => match byte {
                b'"' => self.string = Some(Text::Other),
                b'{' | b'[' => {
                    self.depth += 1;
                    self.deepest = self.deepest.max(self.depth);
                    self.values += 1;
                }
                b'}' | b']' => self.depth -= 1,
                b',' => self.values += 1,
                _ => {}
            },
            State::Done => {}
        }
    }

    /// A byte of the top-level object, outside strings.
    fn top_level(&mut self, byte: u8) {
        if self.reading_id {
            if matches!(byte, b',' | b'}' | b' ' | b'\t' | b'\r') {
                self.reading_id = false;
            } else {
                self.push_id(byte);
                return;
            }
        }
        match byte {
            b'"' if self.key_next => {
                self.key.clear();
                self.key_next = false;
                self.string = Some(Text::Key);
            }
            b'"' if self.value_of == Key::Id => {
                self.start_id();
                self.push_id(byte);
                self.string = Some(Text::Id);
            }
            b'"' => self.string = Some(Text::Other),
            b',' => {
                self.key_next = true;
                self.value_of = Key::Other;
                self.values += 1;
            }
            b'{' | b'[' => {
                if self.value_of == Key::Id {
                    self.value_of = Key::Other; // an id is a number or a string
                }
                self.depth += 1;
                self.deepest = self.deepest.max(self.depth);
                self.values += 1;
            }
            b'}' => self.state = State::Done,
            b' ' | b'\t' | b'\r' | b':' => {}
            _ if self.value_of == Key::Id && !self.reading_id => {
                self.start_id();
                self.reading_id = true;
                self.push_id(byte);
            }
            _ => {}
        }
    }

    fn start_id(&mut self) {
        self.id.clear();
        self.has_id = true;
        self.value_of = Key::Other;
    }

    fn push_id(&mut self, byte: u8) {
        if self.id.len() <= MAX_ID_BYTES {
            self.id.push(byte);
        }
    }

    /// The `id` of the request this line answered, when it is an answer with a usable one.
    fn answered_id(&self) -> Option<Value> {
        if !self.has_id || self.has_method || self.id.len() > MAX_ID_BYTES {
            return None;
        }
        match serde_json::from_slice::<Value>(&self.id).ok()? {
            id @ (Value::Number(_) | Value::String(_)) => Some(id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn scanned(text: &[u8], pieces: usize) -> Option<Value> {
        let mut scan = Scan::default();
        let size = text.len().div_ceil(pieces.max(1)).max(1);
        for piece in text.chunks(size) {
            scan.feed(piece);
        }
        scan.answered_id()
    }

    #[test]
    fn the_id_of_an_answer_is_found_wherever_it_is() {
        for pieces in [1, 2, 3, 7, 1000] {
            let answer = br#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"a \"quoted\" \\ id: 5"}]}}"#;
            assert_eq!(scanned(answer, pieces), Some(json!(17)), "{pieces}");
            let last = br#"{"result":{"id":99,"text":"x\\\\","list":[{"id":3}]}, "jsonrpc":"2.0", "id" : "req-\"7\""}"#;
            assert_eq!(scanned(last, pieces), Some(json!("req-\"7\"")), "{pieces}");
            let request =
                br#"{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}"#;
            assert_eq!(scanned(request, pieces), None, "requests are not answered");
            assert_eq!(scanned(b"zzzz not json", pieces), None);
            assert_eq!(
                scanned(br#"[{"id":1}]"#, pieces),
                None,
                "batches are not answered"
            );
            assert_eq!(scanned(br#"{"id":{"x":1},"result":{}}"#, pieces), None);
            assert_eq!(scanned(br#"{"id":null,"error":{}}"#, pieces), None);
        }
    }

    #[test]
    fn escaped_quotes_at_piece_boundaries_do_not_end_strings() {
        let text = br#"{"result":{"text":"ab\\\"cd\\\\"},"id":5}"#;
        for cut in 1..text.len() {
            let mut scan = Scan::default();
            scan.feed(&text[..cut]);
            scan.feed(&text[cut..]);
            assert_eq!(scan.answered_id(), Some(json!(5)), "cut at {cut}");
        }
    }

    /// A reader that hands out at most `piece` bytes at a time.
    struct Trickle<'a> {
        data: &'a [u8],
        piece: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = self.piece.min(self.data.len()).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Poll::Ready(Ok(()))
        }
    }

    /// What the transport gets from `input` read `piece` bytes at a time: the lines that parse as
    /// JSON (a cut line does not).
    async fn messages(input: &[u8], piece: usize, limit: usize, values: usize) -> Vec<Value> {
        let mut lines = BoundedLines::with_limits(Trickle { data: input, piece }, limit, values);
        let mut out = Vec::new();
        lines.read_to_end(&mut out).await.expect("read");
        out.split(|b| *b == b'\n')
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect()
    }

    #[tokio::test]
    async fn long_lines_become_error_answers_however_they_arrive() {
        let input = b"{\"id\":1,\"result\":{}}\n{\"id\":2,\"result\":{\"text\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}\njunk junk junk junk junk junk junk junk\n{\"id\":3,\"result\":{}}\n";
        for piece in [1, 2, 5, 29, 30, 31, 64, 1 << 20] {
            let parsed = messages(input, piece, 30, 1000).await;
            assert_eq!(parsed.len(), 3, "{piece}: {parsed:?}");
            assert_eq!(parsed[0], json!({"id": 1, "result": {}}));
            assert_eq!(parsed[1]["id"], 2, "{piece}");
            assert_eq!(
                parsed[1]["error"]["data"],
                json!({"lllm": OVERSIZED, "bytes": 61})
            );
            assert!(
                parsed[1]["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("61 bytes, more than the 30")),
                "{}",
                parsed[1]
            );
            assert_eq!(
                parsed[2],
                json!({"id": 3, "result": {}}),
                "junk is dropped, not answered"
            );
        }
    }

    #[tokio::test]
    async fn lines_nested_too_deep_become_error_answers() {
        let deep = format!(
            "{{\"id\":7,\"result\":{}{}}}\n{{\"id\":8,\"result\":{}{}}}\n",
            "[".repeat(MAX_MESSAGE_DEPTH),
            "]".repeat(MAX_MESSAGE_DEPTH),
            "[".repeat(MAX_MESSAGE_DEPTH - 1),
            "]".repeat(MAX_MESSAGE_DEPTH - 1),
        );
        for piece in [1, 50, 1 << 20] {
            let parsed = messages(deep.as_bytes(), piece, 100_000, 100_000).await;
            assert_eq!(parsed.len(), 2, "{piece}: {parsed:?}");
            assert_eq!(parsed[0]["id"], 7);
            assert!(
                parsed[0]["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("nested more than 100 levels")),
                "{}",
                parsed[0]
            );
            assert_eq!(parsed[1]["id"], 8, "100 levels pass");
            assert!(parsed[1]["result"].is_array());
        }
    }

    #[tokio::test]
    async fn lines_of_too_many_values_become_error_answers() {
        let blocks = [r#"{"type":"text","text":""}"#; 12].join(",");
        let input = format!(
            "{{\"id\":\"a\",\"result\":{{\"content\":[{blocks}]}}}}\n{{\"id\":\"b\",\"result\":[1,2,3]}}\n"
        );
        for piece in [1, 7, 100, 1 << 20] {
            let parsed = messages(input.as_bytes(), piece, 1000, 12).await;
            assert_eq!(parsed.len(), 2, "{piece}: {parsed:?}");
            assert_eq!(parsed[0]["id"], "a");
            assert!(
                parsed[0]["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("more than 12 JSON values")),
                "{}",
                parsed[0]
            );
            assert_eq!(parsed[1], json!({"id": "b", "result": [1, 2, 3]}));
        }
    }
}
