//! A hostile HTTP server for tests: a raw TCP listener on 127.0.0.1 that answers every connection with
//! scripted bytes (endless bodies, slow drips, redirects, lies), and records what it received.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Most bytes of one request the server reads and records.
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// What a [`HostileServer`] answers to every connection.
#[derive(Debug, Clone)]
pub enum HostileReply {
    /// These bytes, exactly, then the connection is closed.
    Bytes(Vec<u8>),
    /// `head`, then `chunk` again and again until the client goes away.
    Endless {
        /// The status line, headers and blank line (and any start of the body).
        head: Vec<u8>,
        /// What is repeated.
        chunk: Vec<u8>,
    },
    /// `head`, then the bytes of `body` one at a time, `every` apart, over and over.
    Drip {
        /// The status line, headers and blank line.
        head: Vec<u8>,
        /// The bytes dripped, repeated without end.
        body: Vec<u8>,
        /// The pause between two bytes.
        every: Duration,
    },
    /// An answer with `status` whose body is the request's head as received (request line and
    /// headers), as a server that echoes credentials back in its error would.
    EchoHead {
        /// The status code.
        status: u16,
    },
    /// Reads the request and never answers.
    Silent,
}

impl HostileReply {
    /// An HTTP/1.1 answer with `status`, `headers` and `body`; `Content-Length` is added unless the
    /// headers give a length or a transfer encoding of their own.
    pub fn http(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        HostileReply::Bytes(http_bytes(status, headers, body.into()))
    }

    /// 200 with a JSON body.
    pub fn json(body: &str) -> Self {
        Self::http(200, &[("content-type", "application/json")], body)
    }

    /// 200 with an event stream of these `data:` payloads, each its own event; nothing more.
    pub fn sse(events: &[&str]) -> Self {
        let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        Self::http(
            200,
            &[
                ("content-type", "text/event-stream"),
                ("connection", "close"),
            ],
            body,
        )
    }

    /// 200 with a body that never ends (no length: the body runs until the connection closes).
    pub fn endless_body(content_type: &str) -> Self {
        HostileReply::Endless {
            head: head(
                200,
                &[("content-type", content_type), ("connection", "close")],
            ),
            chunk: vec![b'a'; 16 * 1024],
        }
    }

    /// 200 with an event stream that repeats `event` (a complete event, blank line included) forever,
    /// never sending `[DONE]`.
    pub fn endless_sse(event: &str) -> Self {
        HostileReply::Endless {
            head: head(
                200,
                &[
                    ("content-type", "text/event-stream"),
                    ("connection", "close"),
                ],
            ),
            chunk: event
                .repeat((16 * 1024 / event.len().max(1)).max(1))
                .into_bytes(),
        }
    }

    /// 200 whose body comes one byte of `body` at a time, `every` apart, forever.
    pub fn drip(content_type: &str, body: &str, every: Duration) -> Self {
        HostileReply::Drip {
            head: head(
                200,
                &[("content-type", content_type), ("connection", "close")],
            ),
            body: body.as_bytes().to_vec(),
            every,
        }
    }

    /// A redirect with `status` to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::http(status, &[("location", location)], "")
    }
}

fn head(status: u16, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} Hostile\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

fn http_bytes(status: u16, headers: &[(&str, &str)], body: Vec<u8>) -> Vec<u8> {
    let has_length = headers.iter().any(|(n, _)| {
        n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
    });
    let length = body.len().to_string();
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if !has_length {
        all.push(("content-length", &length));
    }
    let mut out = head(status, &all);
    out.extend_from_slice(&body);
    out
}

/// A raw TCP server on 127.0.0.1 that answers every connection with one [`HostileReply`] and records
/// the requests it read. Stops when dropped.
#[derive(Debug)]
pub struct HostileServer {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
    task: JoinHandle<()>,
}

impl HostileServer {
    /// Starts a server on a free port.
    pub async fn start(reply: HostileReply) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let connections = connections.clone();
            let received = received.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(answer(stream, reply.clone(), received.clone()));
                }
            }
        });
        Ok(HostileServer {
            addr,
            connections,
            received,
            task,
        })
    }

    /// The API base to point a client at, such as `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The requests read so far (head and body, as bytes), in order of arrival.
    pub fn received(&self) -> Vec<Vec<u8>> {
        self.received
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request (head, then as much body as `Content-Length` says), records it, answers.
async fn answer(mut stream: TcpStream, reply: HostileReply, received: Arc<Mutex<Vec<Vec<u8>>>>) {
    let request = read_request(&mut stream).await;
    let head_end = find(&request, b"\r\n\r\n").unwrap_or(request.len());
    let request_head = request[..head_end].to_vec();
    received
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(request);
    // Write errors mean the client went away, which ends the answer.
    let _ = match reply {
        HostileReply::Bytes(bytes) => stream.write_all(&bytes).await,
        HostileReply::Endless { head, chunk } => {
            async {
                stream.write_all(&head).await?;
                loop {
                    stream.write_all(&chunk).await?;
                }
            }
            .await
        }
        HostileReply::Drip { head, body, every } => {
            async {
                stream.write_all(&head).await?;
                for byte in body.iter().cycle() {
                    stream.write_all(&[*byte]).await?;
                    stream.flush().await?;
                    tokio::time::sleep(every).await;
                }
                Ok(())
            }
            .await
        }
        HostileReply::EchoHead { status } => {
            stream
                .write_all(&http_bytes(
                    status,
                    &[("content-type", "text/plain")],
                    request_head,
                ))
                .await
        }
        HostileReply::Silent => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
    };
    let _ = stream.shutdown().await;
}

async fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    let mut request = Vec::new();
    let mut buf = [0u8; 8192];
    let mut head_end = None;
    loop {
        if head_end.is_none() {
            head_end = find(&request, b"\r\n\r\n");
        }
        if let Some(end) = head_end {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if request.len() >= end + 4 + length.min(MAX_REQUEST_BYTES) {
                return request;
            }
        }
        if request.len() >= MAX_REQUEST_BYTES {
            return request;
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return request,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Parses a chat completion body as [`OpenAiInvoker`](crate::OpenAiInvoker) does, with the default
/// limits: for fuzzing the parser. Every outcome is an answer or a typed error.
pub fn parse_completion(body: &[u8]) -> Result<crate::ChatResponse, crate::InvokeError> {
    crate::invoker::parse_completion_for_tests(body)
}

/// Feeds the pieces of an event stream, as they would arrive, to the streaming parser of
/// [`OpenAiInvoker`](crate::OpenAiInvoker) with `limits`; returns the answer and the text reported
/// as it streamed. For fuzzing the parser.
pub fn parse_event_stream(
    pieces: &[&[u8]],
    limits: &crate::invoker::ResponseLimits,
) -> (Result<crate::ChatResponse, crate::InvokeError>, String) {
    crate::invoker::parse_event_stream_for_tests(pieces, limits)
}
