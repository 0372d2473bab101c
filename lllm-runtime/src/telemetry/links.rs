//! A fork's first span links to the latest span of the dialog it was forked from, so a trace viewer
//! can walk from a branch back to where it started (the two may even be in different traces).

use lllm_core::DialogId;
use tracing::Span;

#[cfg(feature = "otel")]
mod table {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    use lllm_core::DialogId;
    use opentelemetry::trace::{SpanContext, TraceContextExt};
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// Dialogs remembered at most: past it the table starts again, which costs only links of forks
    /// made from dialogs older than that.
    const MAX_DIALOGS: usize = 65_536;

    fn latest() -> &'static Mutex<HashMap<DialogId, SpanContext>> {
        static LATEST: OnceLock<Mutex<HashMap<DialogId, SpanContext>>> = OnceLock::new();
        LATEST.get_or_init(Default::default)
    }

    fn context(span: &Span) -> Option<SpanContext> {
        let context = span.context();
        let span_context = context.span().span_context().clone();
        span_context.is_valid().then_some(span_context)
    }

    pub(super) fn follow_fork(span: &Span, dialog: DialogId, parent: DialogId) {
        let table = latest().lock().unwrap_or_else(|p| p.into_inner());
        if table.contains_key(&dialog) {
            return;
        }
        if let Some(parent) = table.get(&parent).cloned() {
            drop(table);
            span.add_link(parent);
        }
    }

    pub(super) fn remember(span: &Span, dialog: DialogId) {
        let Some(context) = context(span) else {
            return;
        };
        let mut table = latest().lock().unwrap_or_else(|p| p.into_inner());
        if table.len() >= MAX_DIALOGS && !table.contains_key(&dialog) {
            table.clear();
        }
        table.insert(dialog, context);
    }
}

/// Links `span` (the first respond of `dialog`) to the latest span of `parent`, when `dialog` has
/// none of its own yet.
pub(crate) fn follow_fork(span: &Span, dialog: DialogId, parent: Option<DialogId>) {
    #[cfg(feature = "otel")]
    if let Some(parent) = parent {
        table::follow_fork(span, dialog, parent);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, dialog, parent);
}

/// Remembers `span` as the latest of `dialog`, for the forks made from it later.
pub(crate) fn remember(span: &Span, dialog: DialogId) {
    #[cfg(feature = "otel")]
    table::remember(span, dialog);
    #[cfg(not(feature = "otel"))]
    let _ = (span, dialog);
}
