//! OpenTelemetry export, configured by the standard `OTEL_*` variables: on when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, over
//! `http/protobuf` (the default), `http/json` or, in a build with the `otlp-grpc` feature, `grpc`
//! (`OTEL_EXPORTER_OTLP_PROTOCOL`), with `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` as usual.
//!
//! Spans leave through a bounded queue on a thread of their own, so a slow or unreachable collector
//! never holds up the run: it gets one warning, and spans that do not fit the queue are dropped. What
//! is queued is sent before lllm exits (also when the run failed, and on a signal), waiting at most
//! [`FLUSH_WAIT`]; a collector that has not taken them by then gets the same one warning.
//!
//! No redirect is followed over HTTP: one would take the spans and the `OTEL_EXPORTER_OTLP_HEADERS`
//! values to another host. The endpoints' own credentials (`http://user:password@host`) are
//! secrets like those header values: never printed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData,
};
use opentelemetry_sdk::Resource;

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
    /// Whether the one warning about undelivered spans was given (shared with [`Warned`]).
    warned: Arc<AtomicBool>,
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
        check_endpoints()?;
        let warned = Arc::new(AtomicBool::new(false));
        let exporter = Warned::new(exporter(&protocol())?, warned.clone());
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
        Ok((Export { provider, warned }, tracer))
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
        let late = format!("it did not take them within {} s", FLUSH_WAIT.as_secs());
        match finished.recv_timeout(FLUSH_WAIT + Duration::from_millis(200)) {
            // Shut down already: this is the second call (a signal came during the first).
            Ok(Ok(()) | Err(OTelSdkError::AlreadyShutdown)) => {}
            // A failed export has warned already; what is left is a collector that is too slow
            // (the processor's error wraps its timeout).
            Ok(Err(_)) | Err(_) => warn_once(&self.warned, &late),
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
            .with_http_client(no_redirect_client()?)
            .build()
            .map(Exporter::Http)
            .map_err(|e| SetupError(format!("cannot set up OpenTelemetry export: {}", without_endpoints(&e.to_string())))),
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
            .map_err(|e| SetupError(format!("cannot set up OpenTelemetry export over gRPC: {}", without_endpoints(&e.to_string()))))?;
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

/// `plan`, joined to the trace named by `TRACEPARENT` (and `TRACESTATE`) when lllm was started
/// inside one.
pub(crate) fn with_outer_trace(plan: lllm_runtime::RunPlan) -> lllm_runtime::RunPlan {
    match std::env::var("TRACEPARENT") {
        Ok(traceparent) => plan.traceparent(traceparent, std::env::var("TRACESTATE").ok()),
        Err(_) => plan,
    }
}

/// Says once that spans cannot be delivered, and why; the run goes on either way.
fn warn_once(warned: &AtomicBool, why: &str) {
    if !warned.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "cannot send spans to the OpenTelemetry collector ({why}); the run goes on without them"
        );
    }
}

/// The endpoint variables, whose values name the collector.
const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// Remembers the endpoints' credentials as secrets, and refuses an endpoint that is not an
/// http(s) URL with a message that quotes it without them (nor its query).
fn check_endpoints() -> Result<(), SetupError> {
    for name in ENDPOINT_VARIABLES {
        let Ok(value) = std::env::var(name) else {
            continue;
        };
        crate::redact::remember_url(&value);
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        if let Err(e) = lllm_runtime::config::check_http_url(value) {
            return Err(SetupError(format!(
                "{name} ({}) {e}",
                lllm_runtime::config::secret::redact_url(value)
            )));
        }
    }
    Ok(())
}

/// `message` with every endpoint it quotes shown as [`redact_url`](lllm_runtime::config::secret::redact_url)
/// shows it: the exporter's own errors quote the value whole.
fn without_endpoints(message: &str) -> String {
    ENDPOINT_VARIABLES
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .filter(|value| !value.is_empty())
        .fold(message.to_owned(), |message, value| {
            message.replace(&value, &lllm_runtime::config::secret::redact_url(&value))
        })
}

/// The HTTP exporter's client: it follows no redirect (a redirect answer is a failed export) and
/// gives up after [`EXPORT_TIMEOUT`]. Built on a thread of its own, as the exporter builds its
/// default one: a blocking client may not be made inside an async runtime.
fn no_redirect_client() -> Result<reqwest::blocking::Client, SetupError> {
    let failed = |e: &dyn std::fmt::Display| {
        SetupError(format!(
            "cannot set up OpenTelemetry export: no HTTP client: {e}"
        ))
    };
    std::thread::spawn(|| {
        reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(EXPORT_TIMEOUT)
            .connect_timeout(EXPORT_TIMEOUT)
            .build()
    })
    .join()
    .map_err(|_| failed(&"its set-up panicked"))?
    .map_err(|e| failed(&e))
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
    warned: Arc<AtomicBool>,
}

impl Warned {
    fn new(inner: Exporter, warned: Arc<AtomicBool>) -> Self {
        Warned { inner, warned }
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
            warn_once(&self.warned, &e.to_string());
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
