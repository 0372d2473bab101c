//! OpenTelemetry export, configured by the standard `OTEL_*` variables: on when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, over
//! `http/protobuf` (the default), `http/json` or, in a build with the `otlp-grpc` feature, `grpc`
//! (`OTEL_EXPORTER_OTLP_PROTOCOL`), with `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` as usual.
//!
//! Spans leave through a bounded queue on a thread of their own, so a slow or unreachable collector
//! never holds up the run: it gets one warning, and spans that do not fit the queue are dropped. What
//! is queued is sent before lllm exits (also when the run failed, and on a signal), waiting at most
//! [`FLUSH_WAIT`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(feature = "otlp-grpc")]
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData,
};
use opentelemetry_sdk::Resource;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Longest wait for the last spans to leave when lllm exits.
pub(crate) const FLUSH_WAIT: Duration = Duration::from_secs(3);
/// Spans waiting to be sent at most; past it new ones are dropped rather than held in memory.
const MAX_QUEUED_SPANS: usize = 4096;
/// Longest one export may take before it counts as failed.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// A running export: flushed and shut down by [`Export::finish`].
#[derive(Clone)]
pub(crate) struct Export {
    provider: SdkTracerProvider,
}

/// Export is asked for, but cannot be set up.
#[derive(Debug)]
pub(crate) struct SetupError(String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// Whether the environment asks for export.
pub(crate) fn requested() -> bool {
    [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
        && !std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
        && !std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.trim() == "none")
}

/// The protocol asked for: the traces' own variable first, then the general one.
fn protocol() -> String {
    std::env::var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .map(|p| p.trim().to_owned())
        .unwrap_or_else(|_| "http/protobuf".to_owned())
}

impl Export {
    /// Sets up export from the environment, and the tracer the `tracing` layer feeds.
    pub(crate) fn start() -> Result<(Self, opentelemetry_sdk::trace::Tracer), SetupError> {
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Ok(headers) = std::env::var(name) {
                remember_header_values(&headers);
            }
        }
        let exporter = Warned::new(exporter(&protocol())?);
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUED_SPANS)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource())
            .build();
        let tracer = provider.tracer("lllm");
        Ok((Export { provider }, tracer))
    }

    /// Sends what is queued and stops, waiting at most [`FLUSH_WAIT`]: a collector that does not
    /// answer costs the exit that much, never more.
    pub(crate) fn finish(&self) {
        let provider = self.provider.clone();
        let (done, finished) = std::sync::mpsc::channel();
        let flushing = std::thread::Builder::new()
            .name("lllm-otel-flush".into())
            .spawn(move || {
                let outcome = provider.shutdown_with_timeout(FLUSH_WAIT);
                done.send(outcome).ok();
            });
        if flushing.is_err() {
            return;
        }
        match finished.recv_timeout(FLUSH_WAIT + Duration::from_millis(200)) {
            Ok(Ok(())) | Err(_) => {}
            Ok(Err(e)) => tracing::debug!("the last spans were not all sent: {e}"),
        }
    }
}

/// The exporter for `protocol`.
fn exporter(protocol: &str) -> Result<Exporter, SetupError> {
    match protocol {
        protocol @ ("http/protobuf" | "http/json") => SpanExporter::builder()
            .with_http()
            .with_protocol(if protocol == "http/json" {
                Protocol::HttpJson
            } else {
                Protocol::HttpBinary
            })
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map(Exporter::Http)
            .map_err(|e| SetupError(format!("cannot set up OpenTelemetry export: {e}"))),
        #[cfg(feature = "otlp-grpc")]
        "grpc" => {
            // tonic needs a Tokio runtime; the export thread has none, so the exporter brings one.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| SetupError(format!("cannot start the gRPC exporter's runtime: {e}")))?;
            let exporter = {
                let _inside = runtime.enter();
                SpanExporter::builder()
                    .with_tonic()
                    .with_timeout(EXPORT_TIMEOUT)
                    .build()
            }
            .map_err(|e| SetupError(format!("cannot set up OpenTelemetry export over gRPC: {e}")))?;
            Ok(Exporter::Grpc(exporter, Arc::new(runtime)))
        }
        #[cfg(not(feature = "otlp-grpc"))]
        "grpc" => Err(SetupError(
            "OTEL_EXPORTER_OTLP_PROTOCOL is `grpc`, but this build of lllm exports over `http/protobuf` and `http/json` only (build it with the `otlp-grpc` feature for gRPC)".to_owned(),
        )),
        other => Err(SetupError(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL is `{other}`; lllm exports over `http/protobuf` (the default), `http/json` or `grpc`"
        ))),
    }
}

/// The resource: the environment's (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), with
/// `service.name` = `lllm` unless it names one.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    if named {
        builder.build()
    } else {
        builder.with_service_name("lllm").build()
    }
}

/// Header values of the exporter are credentials: never printed.
fn remember_header_values(headers: &str) {
    for pair in headers.split(',') {
        if let Some((_, value)) = pair.split_once('=') {
            crate::redact::remember(value);
            if let Some((_scheme, token)) = value.trim().split_once(' ') {
                crate::redact::remember(token);
            }
            if let Some((_scheme, token)) = value.trim().split_once("%20") {
                crate::redact::remember(token);
            }
        }
    }
}

/// The span of a whole run, joined to the trace named by `TRACEPARENT` (and `TRACESTATE`) when
/// lllm was started inside one.
pub(crate) fn workflow_span(tactic: &str) -> Span {
    let span = lllm_runtime::telemetry::workflow_span(tactic);
    if let Ok(traceparent) = std::env::var("TRACEPARENT") {
        let mut carrier = HashMap::from([("traceparent".to_owned(), traceparent)]);
        if let Ok(state) = std::env::var("TRACESTATE") {
            carrier.insert("tracestate".to_owned(), state);
        }
        let context = TraceContextPropagator::new().extract(&carrier);
        if opentelemetry::trace::TraceContextExt::has_active_span(&context) {
            span.set_parent(context).ok();
        } else {
            tracing::warn!("TRACEPARENT is not a W3C trace context (`00-<trace id>-<span id>-<flags>`); the run starts a trace of its own");
        }
    }
    span
}

/// The name a run's span gives its tactic: the file's name without `.yaml`, or its folder's for a
/// file called `tactic.yaml` (`examples/fan_out/tactic.yaml` is `fan_out`).
pub(crate) fn tactic_name(path: &std::path::Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let folder = || {
        std::path::absolute(path).ok().and_then(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .map(|d| d.to_string_lossy().into_owned())
        })
    };
    match stem {
        Some(stem) if stem == "tactic" => folder().unwrap_or(stem),
        Some(stem) => stem,
        None => "tactic".to_owned(),
    }
}

/// Marks a run's span as failed, with the exit class and the message lllm prints (redacted).
pub(crate) fn record_failure(span: &Span, failure: &crate::exit::Failure) {
    let (kind, error) = match failure {
        crate::exit::Failure::Usage(e) => ("usage", e),
        crate::exit::Failure::Run(e) => ("run_failed", e),
        crate::exit::Failure::Paused(e) => ("paused", e),
    };
    let text = crate::redact::redact(&format!("{error:#}"));
    lllm_runtime::telemetry::record_failure(span, kind, &text);
}

/// The exporters lllm can use.
#[derive(Debug)]
enum Exporter {
    Http(SpanExporter),
    #[cfg(feature = "otlp-grpc")]
    Grpc(SpanExporter, Arc<tokio::runtime::Runtime>),
}

/// Warns once when spans cannot be sent; the run goes on either way.
#[derive(Debug)]
struct Warned {
    inner: Exporter,
    warned: AtomicBool,
}

impl Warned {
    fn new(inner: Exporter) -> Self {
        Warned {
            inner,
            warned: AtomicBool::new(false),
        }
    }

    fn exporter(&self) -> &SpanExporter {
        match &self.inner {
            Exporter::Http(e) => e,
            #[cfg(feature = "otlp-grpc")]
            Exporter::Grpc(e, _) => e,
        }
    }
}

impl opentelemetry_sdk::trace::SpanExporter for Warned {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let outcome = match &self.inner {
            Exporter::Http(exporter) => exporter.export(batch).await,
            #[cfg(feature = "otlp-grpc")]
            Exporter::Grpc(exporter, runtime) => runtime.block_on(exporter.export(batch)),
        };
        if let Err(e) = &outcome {
            if !self.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!("cannot send spans to the OpenTelemetry collector ({e}); the run goes on without them");
            }
        }
        outcome
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.exporter().shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.exporter().force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        match &mut self.inner {
            Exporter::Http(e) => e.set_resource(resource),
            #[cfg(feature = "otlp-grpc")]
            Exporter::Grpc(e, _) => e.set_resource(resource),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_export_comes_with_its_feature() {
        #[cfg(feature = "otlp-grpc")]
        assert!(matches!(exporter("grpc"), Ok(Exporter::Grpc(..))));
        #[cfg(not(feature = "otlp-grpc"))]
        {
            let refused = exporter("grpc").err().map(|e| e.to_string());
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|e| e.contains("`otlp-grpc` feature")),
                "{refused:?}"
            );
        }
        assert!(matches!(exporter("http/json"), Ok(Exporter::Http(_))));
        let other = exporter("carrier-pigeon").err().map(|e| e.to_string());
        assert!(other.is_some_and(|e| e.contains("carrier-pigeon")));
    }
}
