//! Joining an outer trace: a run started by someone who is tracing (the `TRACEPARENT` variable, an
//! HTTP request's `traceparent` header) becomes part of their trace.

use tracing::Span;

/// Makes `span` a child of the W3C trace context `traceparent` (with its `tracestate`). A value that
/// is not a trace context is reported once in the log, and the span starts a trace of its own.
/// Without the `otel` feature there is no trace to join, and nothing happens.
pub fn join_outer_trace(span: &Span, traceparent: &str, tracestate: Option<&str>) {
    #[cfg(feature = "otel")]
    {
        use std::collections::HashMap;

        use opentelemetry::propagation::TextMapPropagator as _;
        use opentelemetry_sdk::propagation::TraceContextPropagator;
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;

        let mut carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        if let Some(state) = tracestate {
            carrier.insert("tracestate".to_owned(), state.to_owned());
        }
        let context = TraceContextPropagator::new().extract(&carrier);
        if opentelemetry::trace::TraceContextExt::has_active_span(&context) {
            span.set_parent(context).ok();
        } else {
            tracing::warn!("TRACEPARENT is not a W3C trace context (`00-<trace id>-<span id>-<flags>`); the run starts a trace of its own");
        }
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, traceparent, tracestate);
}
