//! Where a trace's lines go: the header of an `lllm-trace/1` trace is written with the first row, so
//! that it can name the profile the rows' hints were sent with.

use std::io::Write;

use lllm_core::{AgenticRow, Profile, TraceHeader, TraceRow};
use serde::Serialize;

/// One line to write.
pub(super) enum Line {
    /// An `lllm-trace/1` row (also of a rows-only trace), and the profile its request was sent with.
    Row(TraceRow, Option<Profile>),
    /// A row of Dynamo's agentic format.
    Agentic(AgenticRow),
}

/// The trace's writer and the header still to write.
pub(super) struct Output {
    out: Box<dyn Write + Send>,
    /// The `lllm-trace/1` header, until it is written: with the first row, which gives it its
    /// profile, or when the trace is flushed or dropped with no row.
    pending: Option<TraceHeader>,
    /// The profile the header names; a row sent with another names its own.
    profile: Option<Profile>,
}

impl Output {
    /// Writes to `out`, the header `pending` (if any) before the first row.
    pub(super) fn new(out: Box<dyn Write + Send>, pending: Option<TraceHeader>) -> Self {
        Output {
            out,
            pending,
            profile: None,
        }
    }

    /// Writes `line`, after the header if it is still to be written.
    pub(super) fn write(&mut self, line: Line) -> std::io::Result<()> {
        match line {
            Line::Row(mut row, profile) => {
                self.write_header(profile)?;
                if profile != self.profile {
                    row.profile = profile;
                }
                self.write_json(&row)
            }
            Line::Agentic(row) => self.write_json(&row),
        }
    }

    /// Writes the header now, if it still is to be written, naming `profile`.
    pub(super) fn write_header(&mut self, profile: Option<Profile>) -> std::io::Result<()> {
        if let Some(mut header) = self.pending.take() {
            header.profile = profile;
            self.profile = profile;
            self.write_json(&header)?;
        }
        Ok(())
    }

    /// Writes out what is buffered (the header first, when no row came).
    pub(super) fn flush(&mut self) -> std::io::Result<()> {
        self.write_header(None)?;
        self.out.flush()
    }

    /// Writes `line` as one JSON line.
    pub(super) fn write_json<T: Serialize>(&mut self, line: &T) -> std::io::Result<()> {
        let text = serde_json::to_string(line).map_err(std::io::Error::other)?;
        writeln!(self.out, "{text}")
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // A trace with no row still says what it is; the writer itself flushes when dropped.
        self.write_header(None).ok();
    }
}
