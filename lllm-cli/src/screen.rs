//! The terminal while a run goes: what is shown (streamed text, tool calls, progress) and the
//! first failed write on stdout, which stops the run.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use lllm_runtime::engine::PreparedTactic;
use lllm_runtime::events::{RunEvent, RunObserver};
use lllm_runtime::RunError;
use tokio::sync::Notify;

use crate::exit::{run_failure, stdout_failed, Failure};

/// How a run is shown.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shown {
    /// One JSON object at the end instead of the answer.
    pub(crate) json: bool,
    /// stdout carries request lines (a dry run): answers are diagnostics.
    pub(crate) dry_run: bool,
    /// The answer is printed as it arrives (the built-in chat).
    pub(crate) stream: bool,
    /// Tool calls are shown on stderr as they happen (a person watches a streamed answer).
    pub(crate) show_tools: bool,
    /// Each step's progress is shown on stderr.
    pub(crate) progress: bool,
}

impl Shown {
    /// What a person at a terminal sees by default: progress and tool calls on stderr, a chat's
    /// answer streamed when asked or when stdout is a terminal.
    pub(crate) fn at_terminal(json: bool, dry_run: bool, stream_asked: bool) -> Shown {
        let stderr = std::io::stderr().is_terminal();
        let streamable = !json && !dry_run;
        Shown {
            json,
            dry_run,
            stream: streamable && (stream_asked || std::io::stdout().is_terminal()),
            show_tools: stderr,
            progress: stderr,
        }
    }
}

/// Whether the chat's agent answers JSON matching a schema (shown once valid, never streamed).
pub(crate) fn first_agent_structured(tactic: &PreparedTactic) -> bool {
    tactic
        .spec()
        .agents()
        .first()
        .is_some_and(|a| a.output_schema().is_some())
}

/// `text` with every character that is invisible or acts on the terminal shown escaped
/// (`\u{202e}`), so that a person sees what a tool gets (and, asked to confirm a call, what they
/// approve): marks that reorder text (a right-to-left override turns `exe.txt` around), control
/// characters (serde_json escapes those below U+0020 only), and characters that show nothing
/// (zero-width spaces, tags).
pub(crate) fn visible(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() && c != '\n') || invisible(c) {
            shown.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The characters that reorder text or show nothing: the bidirectional controls, zero-width and
/// other blank format characters, the Hangul fillers, and the tag and variation-selector planes
/// (which can carry text no one sees).
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E0FFF}')
}

#[allow(clippy::print_stderr)]
pub(crate) fn note(text: &str) {
    eprintln!("{text}");
}

/// The terminal while a run goes: its streamed text on stdout, tool calls and steps on stderr. The
/// first failed write on stdout stops the run: nobody reads the rest.
pub(crate) struct Screen {
    shown: Shown,
    closed: Arc<Mutex<Option<std::io::Error>>>,
    stop: Arc<Notify>,
    line: Arc<Mutex<Line>>,
    started: std::time::Instant,
}

impl Screen {
    pub(crate) fn new(shown: Shown) -> Screen {
        Screen {
            shown,
            closed: Arc::default(),
            stop: Arc::new(Notify::new()),
            line: Arc::default(),
            started: std::time::Instant::now(),
        }
    }

    /// The observer that shows the run.
    pub(crate) fn observer(&self) -> RunObserver {
        let (shown, closed, stop, line, started) = (
            self.shown,
            self.closed.clone(),
            self.stop.clone(),
            self.line.clone(),
            self.started,
        );
        let progress = crate::show::progress_lines_since(started);
        RunObserver::new(move |event| {
            if shown.progress {
                progress.notify(event);
                if let Some(line) = tool_progress(event) {
                    show_progress(started, &line);
                }
            }
            if shown.stream {
                show_streamed(event, shown, &closed, &stop, &line);
            }
        })
    }

    /// Runs `run` until it ends or stdout closes.
    pub(crate) async fn watch<T>(
        &self,
        run: impl std::future::Future<Output = Result<T, RunError>>,
    ) -> Result<T, Stopped> {
        let result = tokio::select! {
            result = run => result.map_err(Stopped::Run),
            () = self.stop.notified() => Err(Stopped::Stdout(std::io::Error::from(std::io::ErrorKind::BrokenPipe))),
        };
        match self.closed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(error) => Err(Stopped::Stdout(error)),
            None => result,
        }
    }
}

/// Why a watched run has no answer.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The run failed (or paused).
    Run(RunError),
    /// Standard output closed while the answer was streamed: the rest would go nowhere.
    Stdout(std::io::Error),
}

impl Stopped {
    pub(crate) fn into_failure(self) -> Failure {
        match self {
            Stopped::Run(error) => run_failure(error),
            Stopped::Stdout(error) => stdout_failed(error),
        }
    }
}

/// Where the streamed text's last line is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Ended by the text itself (or nothing written yet).
    #[default]
    Closed,
    /// Open: text without its newline yet.
    Open,
    /// Ended here before a tool call's line: the break before the next round's text (which the
    /// run streams, so that the pieces add up to the answer) has one newline less.
    EndedHere,
}

/// One event of a streamed answer: text on stdout, tool calls on stderr.
#[allow(clippy::print_stderr)]
fn show_streamed(
    event: &RunEvent,
    shown: Shown,
    closed: &Mutex<Option<std::io::Error>>,
    stop: &Notify,
    line: &Mutex<Line>,
) {
    let write = |bytes: &[u8]| {
        let mut stdout = std::io::stdout();
        if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
            closed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
            stop.notify_one();
        }
    };
    let mut line = line.lock().unwrap_or_else(|p| p.into_inner());
    match event {
        RunEvent::Text { text, .. } => {
            let text = match *line {
                Line::EndedHere => text.strip_prefix('\n').unwrap_or(text),
                Line::Closed | Line::Open => text,
            };
            if !text.is_empty() {
                write(text.as_bytes());
                *line = if text.ends_with('\n') {
                    Line::Closed
                } else {
                    Line::Open
                };
            }
        }
        RunEvent::ToolCall { call, .. } => {
            // Text before a tool call (the model thinking aloud) ends its line before the call's.
            if *line == Line::Open {
                write(b"\n");
                *line = Line::EndedHere;
            }
            if shown.show_tools {
                let line = format!("· {}({})", visible(&call.name), visible(&call.arguments));
                eprintln!("{}", crate::redact::redact(&line));
            }
        }
        RunEvent::ToolResult {
            is_error: true,
            content,
            ..
        } if shown.show_tools => eprintln!("  {}", crate::redact::redact(&visible(content))),
        RunEvent::ToolProgress { .. } if shown.show_tools && !shown.progress => {
            if let Some(line) = tool_progress(event) {
                eprintln!("  {}", crate::redact::redact(&line));
            }
        }
        _ => {}
    }
}

/// The line of a tool's progress (an MCP task or progress notification), made visible.
fn tool_progress(event: &RunEvent) -> Option<String> {
    let RunEvent::ToolProgress {
        agent,
        tool,
        status,
        message,
        progress,
        total,
        ..
    } = event
    else {
        return None;
    };
    let message = message.as_deref().unwrap_or_default();
    let done = match (progress, total) {
        (Some(p), Some(t)) => format!("{p}/{t} "),
        (Some(p), None) => format!("{p} "),
        _ => String::new(),
    };
    let line = format!("… {agent}: {tool} {status} {done}{message}");
    Some(visible(line.trim_end()))
}

/// A tool's progress among the step lines, timed like them.
#[allow(clippy::print_stderr)]
fn show_progress(started: std::time::Instant, line: &str) {
    let at = started.elapsed().as_secs_f64();
    eprintln!("{at:6.1}s {}", crate::redact::redact(line));
}

#[cfg(test)]
mod tests {
    use super::visible;

    #[test]
    fn invisible_and_reordering_characters_are_shown_escaped() {
        assert_eq!(
            visible(
                "invoice\u{202e}fdp.exe \u{2066}a\u{2069} \u{200b}\u{7f}\u{9b}\u{e0041} é 👍\n"
            ),
            "invoice\\u{202e}fdp.exe \\u{2066}a\\u{2069} \\u{200b}\\u{7f}\\u{9b}\\u{e0041} é 👍\n"
        );
    }
}
