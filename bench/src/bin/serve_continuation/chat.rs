//! A stateless chat client, as the frameworks that resend the whole history are: its messages, one
//! turn asked over HTTP and timed, and the check that the server took the path the leg measures
//! (`x-lllm-session-source`), so that a leg timing the wrong path fails instead of reporting it.

use std::time::Instant;

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

/// Characters of each user message.
pub(crate) const MESSAGE_CHARS: usize = 400;

/// What the stand-in server answers to a user message: the same text a client sends back.
pub(crate) fn stub_answer(user: &str) -> String {
    format!("stub answer to: {user}")
}

/// `chars` characters of words from the bench vocabulary (ASCII, so any cut is a char boundary).
pub(crate) fn text(rng: &mut fastrand::Rng, chars: usize) -> String {
    let mut text = lllm_bench::random_words(rng, chars / 3 + 1);
    text.truncate(chars);
    text
}

/// The messages of turn `turn` (1-based) of a conversation nobody had yet: `turn - 1` user messages
/// each with the stand-in's answer, then the new user message (`2 * turn - 1` messages).
pub(crate) fn history(rng: &mut fastrand::Rng, turn: usize) -> Vec<Value> {
    let mut messages = Vec::with_capacity(2 * turn);
    for _ in 1..turn {
        let user = text(rng, MESSAGE_CHARS);
        let answer = stub_answer(&user);
        messages.push(json!({"role": "user", "content": user}));
        messages.push(json!({"role": "assistant", "content": answer}));
    }
    messages.push(json!({"role": "user", "content": text(rng, MESSAGE_CHARS)}));
    messages
}

/// Appends the answer of the turn just asked and the next user message.
pub(crate) fn next_turn(rng: &mut fastrand::Rng, messages: &mut Vec<Value>, answer: String) {
    messages.push(json!({"role": "assistant", "content": answer}));
    messages.push(json!({"role": "user", "content": text(rng, MESSAGE_CHARS)}));
}

/// A keep-alive client of one server's `POST /v1/chat/completions`.
pub(crate) struct Client {
    http: reqwest::Client,
    url: String,
}

/// One turn as the client saw it.
pub(crate) struct Answered {
    /// From sending the body to the last byte of the answer.
    pub(crate) ms: f64,
    /// The answer's text.
    pub(crate) text: String,
}

impl Client {
    /// A client of the server at `base` (`http://ADDRESS`).
    pub(crate) fn new(base: &str) -> Self {
        Client {
            http: reqwest::Client::new(),
            url: format!("{base}/v1/chat/completions"),
        }
    }

    /// Asks `messages` of the model `helper`, with the session header `session` if given; the
    /// response must say its conversation came from `source`.
    pub(crate) async fn turn(
        &self,
        messages: &[Value],
        session: Option<&str>,
        source: &str,
    ) -> anyhow::Result<Answered> {
        let body = json!({"model": "helper", "messages": messages}).to_string();
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json");
        if let Some(session) = session {
            request = request.header("x-session-id", session);
        }
        let started = Instant::now();
        let response = request.body(body).send().await?;
        let status = response.status();
        let came_from = response
            .headers()
            .get("x-lllm-session-source")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let bytes = response.bytes().await?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        if !status.is_success() {
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&bytes));
        }
        if came_from.as_deref() != Some(source) {
            bail!(
                "a turn of {} messages went the `{}` way, not `{source}`: the leg would measure the wrong path",
                messages.len(),
                came_from.as_deref().unwrap_or("(no x-lllm-session-source)")
            );
        }
        let answer: Value = serde_json::from_slice(&bytes).context("the answer is not JSON")?;
        let text = answer["choices"][0]["message"]["content"]
            .as_str()
            .context("the answer has no choices[0].message.content")?
            .to_owned();
        Ok(Answered { ms, text })
    }
}
