//! The loopback redirect of the authorization flow: a listener on 127.0.0.1 at a port the system
//! picks, answering the one redirect it waits for (`GET /callback?code=…&state=…`). Everything it
//! reads is bounded: the request head, the time a connection may take, the time it waits in all.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the authorization server redirects to.
const CALLBACK_PATH: &str = "/callback";
/// Largest request head read from one connection.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Connections answered at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 16;
/// Time one connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A listening redirect endpoint.
pub(crate) struct Loopback {
    listener: TcpListener,
    pub(crate) redirect_uri: String,
}

impl Loopback {
    pub(crate) async fn bind() -> Result<Loopback, String> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1 for the redirect: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        Ok(Loopback {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
        })
    }

    /// The full URL of the first request to the callback path within `wait` (other paths, such
    /// as a browser's favicon, get 404). The page it shows says whether to go back to the terminal.
    /// Connections are answered side by side, at most [`MAX_CONNECTIONS`] at once, so that one that
    /// sends nothing holds up no other.
    /// A callback `ours` does not take (another `state`: not the answer to this login, maybe a
    /// local page probing ports) is answered and ignored, so it cannot end the login.
    pub(crate) async fn callback(
        &self,
        wait: Duration,
        ours: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let mut ignored = 0usize;
        let (found, mut callbacks) = tokio::sync::mpsc::channel::<String>(1);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let base = self.redirect_uri.trim_end_matches(CALLBACK_PATH).to_owned();
        let mut answering = tokio::task::JoinSet::new();
        let waited = tokio::time::timeout(wait, async {
            loop {
                tokio::select! {
                    Some(url) = callbacks.recv() => {
                        if ours(&url) {
                            return url;
                        }
                        ignored += 1;
                    }
                    accepted = self.listener.accept() => {
                        let (Ok((stream, _)), Ok(slot)) = (accepted, slots.clone().try_acquire_owned()) else {
                            continue;
                        };
                        let (found, base) = (found.clone(), base.clone());
                        answering.spawn(async move {
                            if let Some(url) = answer(stream, &base).await {
                                found.try_send(url).ok();
                            }
                            drop(slot);
                        });
                    }
                }
            }
        })
        .await;
        answering.abort_all();
        waited.map_err(|_| {
            let others = match ignored {
                0 => String::new(),
                n => format!(
                    " ({n} redirect(s) carrying another `state` than the one sent were refused: \
                     they are not the answer to this login)"
                ),
            };
            format!(
                "no redirect came back within {} s{others}: open the URL printed above and \
                 approve, or give more time with --wait",
                wait.as_secs()
            )
        })
    }
}

/// Reads one request and answers it; the callback's URL (on `base`) if it is the callback.
async fn answer(mut stream: TcpStream, base: &str) -> Option<String> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream))
        .await
        .ok()
        .flatten()?;
    let target = head
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("GET "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_default()
        .to_owned();
    let is_callback = target == CALLBACK_PATH || target.starts_with("/callback?");
    let (status, text) = if !is_callback {
        ("404 Not Found", "Not found.")
    } else if target.contains("error=") {
        (
            "200 OK",
            "lllm: the authorization was not granted. Go back to the terminal.",
        )
    } else {
        (
            "200 OK",
            "lllm: authorization received. You can close this page and go back to the terminal.",
        )
    };
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{text}",
        text.len()
    );
    tokio::time::timeout(READ_TIMEOUT, async {
        stream.write_all(answer.as_bytes()).await.ok();
        stream.shutdown().await.ok();
    })
    .await
    .ok();
    is_callback.then(|| format!("{base}{target}"))
}

/// The request head (up to the blank line), or `None` past [`MAX_HEAD_BYTES`] or on a closed
/// connection.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buffer).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD_BYTES {
            return None;
        }
        head.extend_from_slice(&buffer[..n]);
    }
    String::from_utf8(head).ok()
}
