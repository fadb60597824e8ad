//! Export of the engine's spans over OTLP/HTTP (feature `otel`).
//!
//! [`layer`] returns a [`tracing_subscriber::Layer`] that collects the engine's spans
//! ([`RUN_SPAN`], [`STEP_SPAN`], [`SUBTASK_SPAN`], [`EXCHANGE_SPAN`], see
//! [`crate::telemetry`]) and hands each one, when it closes, to the OpenTelemetry SDK's batch
//! span processor, which sends them to an OTLP collector over HTTP (protobuf) from a thread of
//! its own. The host adds the layer to the subscriber it installs:
//!
//! ```no_run
//! # fn main() -> Result<(), a2at_driver::otel::OtelError> {
//! use tracing_subscriber::layer::SubscriberExt;
//! let (layer, guard) = a2at_driver::otel::layer(
//!     a2at_driver::otel::OtlpConfig::new("http://127.0.0.1:4318"),
//! )?;
//! let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
//! // ... run workflows ...
//! guard.shutdown()?; // sends what is still queued
//! # Ok(())
//! # }
//! ```
//!
//! The engine never installs it itself: a library that set the process's subscriber would take
//! that choice from the host, which usually has its own layers (logs, its own OpenTelemetry
//! pipeline) and must decide where they all go.
//!
//! **Ids.** An exported span carries the ids the agents saw: the trace id is the run's
//! `trace_id` field (the trace of every `traceparent` the run sends) and an exchange's span id
//! is its `span_id` field (the parent id of the `traceparent` its request carried), so a trace
//! viewer joins the agents' own spans under the exchanges. Runs, steps and subtasks send no
//! header; their span ids are random. Parent links follow the `tracing` tree, skipping spans
//! that are not the engine's (a span of the host between a run and its exchanges is not
//! exported, and a run is exported as the root of its trace).
//!
//! **What is exported.** Only the engine's four spans, with their fields as attributes
//! (`trace_id`, `span_id` and `otel.status_code` become the ids and the status instead); events
//! and the host's own spans are not. The fields are those documented in [`crate::telemetry`]
//! and hold no credential, so neither does the export. The headers of [`OtlpConfig`] (a
//! collector's API key) are sent to the collector only: they are never logged, and
//! [`OtlpConfig`]'s `Debug` masks their values.
//!
//! **Transport.** `opentelemetry-otlp`'s HTTP exporter over reqwest's blocking client: it runs
//! on the batch processor's own thread, so the export needs no async runtime and works the same
//! under tokio, smol or none. Only `http://` endpoints are supported (a local collector or
//! agent); an `https://` endpoint is refused with [`OtelError::InvalidEndpoint`] rather than
//! failing at every export.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, IdGenerator, RandomIdGenerator, SpanData, SpanEvents, SpanLinks,
    SpanProcessor,
};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, field::Field};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::telemetry::{
    EXCHANGE_SPAN, OTEL_STATUS_CODE, RUN_SPAN, SPAN_ID, STEP_SPAN, SUBTASK_SPAN, TRACE_ID,
};

/// Where and how to export spans.
#[derive(Clone)]
#[non_exhaustive]
pub struct OtlpConfig {
    /// The collector's OTLP/HTTP URL, `http://` only. A URL without a path (or with `/`) gets
    /// the standard traces path `/v1/traces` appended; a URL with a path is used as it is.
    pub endpoint: String,
    /// The `service.name` resource attribute of every exported span (`a2at` by default).
    pub service_name: String,
    /// Extra HTTP headers for the collector (e.g. its API key). Never logged.
    pub headers: Vec<(String, String)>,
}

impl OtlpConfig {
    /// Export to `endpoint` as service `a2at`, with no extra header.
    pub fn new(endpoint: impl Into<String>) -> OtlpConfig {
        OtlpConfig {
            endpoint: endpoint.into(),
            service_name: "a2at".to_owned(),
            headers: Vec::new(),
        }
    }

    /// The `service.name` of the exported spans.
    pub fn service_name(mut self, name: impl Into<String>) -> OtlpConfig {
        self.service_name = name.into();
        self
    }

    /// Adds a header sent with every export request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> OtlpConfig {
        self.headers.push((name.into(), value.into()));
        self
    }
}

impl fmt::Debug for OtlpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values are often credentials: only their names are shown.
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, _)| (n.as_str(), "***"))
            .collect();
        f.debug_struct("OtlpConfig")
            .field("endpoint", &a2at_core::redact::redact_url(&self.endpoint))
            .field("service_name", &self.service_name)
            .field("headers", &headers)
            .finish()
    }
}

/// Why the export could not be set up or flushed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The endpoint is not a usable `http://` URL; `reason` says what is wrong with it.
    #[error("invalid OTLP endpoint: {reason}")]
    InvalidEndpoint {
        /// What is wrong with the URL (the URL itself is not repeated: it may hold a token).
        reason: &'static str,
    },
    /// A header name or value is not valid HTTP.
    #[error("invalid OTLP header {name:?}: not a valid HTTP header name or value")]
    InvalidHeader {
        /// The header's name (its value is not repeated).
        name: String,
    },
    /// The OpenTelemetry exporter could not be built.
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
    /// Sending the queued spans at a flush or shutdown failed.
    #[error("exporting spans to the OTLP collector failed: {0}")]
    Export(String),
}

/// Builds the export: the layer to add to the host's subscriber, and the guard that flushes.
///
/// Nothing is sent until a span of the engine closes. Drop the guard (or call
/// [`OtelGuard::shutdown`]) when the runs are over, outside any async task: it blocks until
/// the queued spans are sent or the export times out.
pub fn layer(config: OtlpConfig) -> Result<(OtelLayer, OtelGuard), OtelError> {
    let endpoint = traces_url(&config.endpoint)?;
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let valid = http::HeaderName::from_bytes(name.as_bytes()).is_ok()
            && http::HeaderValue::from_str(value).is_ok();
        if !valid {
            return Err(OtelError::InvalidHeader { name: name.clone() });
        }
        headers.insert(name.clone(), value.clone());
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(endpoint.clone())
        .with_headers(headers)
        .build()
        .map_err(|e| OtelError::Exporter(e.to_string()))?;
    let mut processor = BatchSpanProcessor::builder(exporter).build();
    processor.set_resource(
        &Resource::builder_empty()
            .with_service_name(config.service_name)
            .build(),
    );
    let inner = Arc::new(Inner {
        processor,
        ids: RandomIdGenerator::default(),
        scope: InstrumentationScope::builder("a2at")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
        shut_down: Mutex::new(false),
        url: (endpoint.clone(), a2at_core::redact::redact_url(&endpoint)),
    });
    Ok((
        OtelLayer {
            inner: inner.clone(),
        },
        OtelGuard { inner },
    ))
}

/// The URL spans are posted to, from the configured endpoint.
fn traces_url(endpoint: &str) -> Result<String, OtelError> {
    let invalid = |reason| OtelError::InvalidEndpoint { reason };
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|_| invalid("not a URL (expected e.g. http://127.0.0.1:4318)"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => return Err(invalid("https is not supported by this build, use http")),
        _ => return Err(invalid("the scheme must be http://")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("the URL has no host"));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(invalid(
            "userinfo is not supported, send credentials as a header",
        ));
    }
    Ok(match uri.path() {
        "" | "/" if uri.query().is_none() => {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        }
        _ => endpoint.to_owned(),
    })
}

/// What the layer and the guard share.
struct Inner {
    processor: BatchSpanProcessor,
    ids: RandomIdGenerator,
    scope: InstrumentationScope,
    shut_down: Mutex<bool>,
    /// The traces URL and its redacted form: an export error names the URL, whose query may
    /// hold a token.
    url: (String, String),
}

impl Inner {
    fn export_error(&self, e: &opentelemetry_sdk::error::OTelSdkError) -> OtelError {
        OtelError::Export(e.to_string().replace(&self.url.0, &self.url.1))
    }
}

/// Flushes and stops the export when dropped (see [`layer`]).
pub struct OtelGuard {
    inner: Arc<Inner>,
}

impl fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelGuard").finish_non_exhaustive()
    }
}

impl OtelGuard {
    /// Sends every span closed so far and waits for the collector's answer.
    pub fn flush(&self) -> Result<(), OtelError> {
        self.inner
            .processor
            .force_flush()
            .map_err(|e| self.inner.export_error(&e))
    }

    /// Sends what is queued and stops the export; spans closing later are dropped.
    pub fn shutdown(self) -> Result<(), OtelError> {
        self.stop()
    }

    fn stop(&self) -> Result<(), OtelError> {
        let mut done = self
            .inner
            .shut_down
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *done {
            return Ok(());
        }
        *done = true;
        // The processor's shutdown sends what is queued but does not say whether that worked;
        // a flush first does.
        let flushed = self.inner.processor.force_flush();
        let stopped = self.inner.processor.shutdown();
        flushed
            .and(stopped)
            .map_err(|e| self.inner.export_error(&e))
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        // A failure here has nowhere to go; `shutdown` reports it.
        let _ = self.stop();
    }
}

/// The `tracing` layer exporting the engine's spans (see [`layer`]).
#[derive(Clone)]
pub struct OtelLayer {
    inner: Arc<Inner>,
}

impl fmt::Debug for OtelLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelLayer").finish_non_exhaustive()
    }
}

/// An engine span being collected, kept in the span's extensions.
struct Collected {
    name: &'static str,
    start: SystemTime,
    trace_id: TraceId,
    span_id: SpanId,
    parent: SpanId,
    /// Whether `parent` is the host's span (a run that joined the host's trace).
    parent_is_remote: bool,
    fields: Fields,
}

/// The fields of a span, as OpenTelemetry values, in the order they were first recorded.
#[derive(Default)]
struct Fields {
    values: Vec<(&'static str, Value)>,
}

impl Fields {
    fn set(&mut self, name: &'static str, value: Value) {
        match self.values.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.values.push((name, value)),
        }
    }

    fn text(&self, name: &str) -> Option<String> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str().into_owned())
    }
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), Value::from(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), Value::I64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        // OTLP integers are signed 64-bit; a larger value keeps its digits as text.
        let v = i64::try_from(value).map_or_else(|_| Value::from(value.to_string()), Value::I64);
        self.set(field.name(), v);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field.name(), Value::Bool(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field.name(), Value::F64(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.set(field.name(), Value::from(format!("{value:?}")));
    }
}

/// One of the engine's four spans: the name alone is not enough, a host's span could share it
/// (and carry fields that are not redacted).
fn is_engine_span(meta: &tracing::Metadata<'_>) -> bool {
    let target = meta.target();
    (target == "a2at_driver" || target.starts_with("a2at_driver::"))
        && [RUN_SPAN, STEP_SPAN, SUBTASK_SPAN, EXCHANGE_SPAN].contains(&meta.name())
}

fn parse_trace_id(hex: &str) -> Option<TraceId> {
    u128::from_str_radix(hex, 16)
        .ok()
        .filter(|v| *v != 0)
        .map(TraceId::from)
}

fn parse_span_id(hex: &str) -> Option<SpanId> {
    u64::from_str_radix(hex, 16)
        .ok()
        .filter(|v| *v != 0)
        .map(SpanId::from)
}

impl<S> tracing_subscriber::Layer<S> for OtelLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !is_engine_span(attrs.metadata()) {
            return;
        }
        let name = attrs.metadata().name();
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        // The nearest engine span above this one: its parent in the export, and its trace.
        let ancestor = span.scope().skip(1).find_map(|s| {
            s.extensions()
                .get::<Collected>()
                .map(|c| (c.trace_id, c.span_id))
        });
        let trace_id = fields
            .text(TRACE_ID)
            .and_then(|h| parse_trace_id(&h))
            .or(ancestor.map(|(t, _)| t))
            .unwrap_or_else(|| self.inner.ids.new_trace_id());
        let span_id = fields
            .text(SPAN_ID)
            .and_then(|h| parse_span_id(&h))
            .unwrap_or_else(|| self.inner.ids.new_span_id());
        // A run that joined a host's trace hangs under the host's span, which lives in
        // another process or exporter: a remote parent.
        let remote_parent = fields
            .text(crate::telemetry::PARENT_SPAN_ID)
            .and_then(|h| parse_span_id(&h))
            .filter(|_| ancestor.is_none());
        span.extensions_mut().insert(Collected {
            name,
            start: SystemTime::now(),
            trace_id,
            span_id,
            parent: ancestor
                .map(|(_, s)| s)
                .or(remote_parent)
                .unwrap_or(SpanId::INVALID),
            parent_is_remote: remote_parent.is_some(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if let Some(c) = span.extensions_mut().get_mut::<Collected>() {
            values.record(&mut c.fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(c) = span.extensions_mut().remove::<Collected>() else {
            return;
        };
        let status = match c.fields.text(OTEL_STATUS_CODE).as_deref() {
            Some("ERROR") => Status::Error {
                description: Cow::Owned(
                    c.fields
                        .text(crate::telemetry::ERROR_TYPE)
                        .unwrap_or_default(),
                ),
            },
            _ => Status::Unset,
        };
        let attributes = c
            .fields
            .values
            .into_iter()
            .filter(|(n, _)| {
                ![
                    TRACE_ID,
                    SPAN_ID,
                    OTEL_STATUS_CODE,
                    crate::telemetry::PARENT_SPAN_ID,
                ]
                .contains(n)
            })
            .map(|(n, v)| KeyValue::new(n, v))
            .collect();
        self.inner.processor.on_end(SpanData {
            span_context: SpanContext::new(
                c.trace_id,
                c.span_id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: c.parent,
            parent_span_is_remote: c.parent_is_remote,
            span_kind: if c.name == EXCHANGE_SPAN {
                SpanKind::Client
            } else {
                SpanKind::Internal
            },
            name: Cow::Borrowed(c.name),
            start_time: c.start,
            end_time: SystemTime::now(),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.inner.scope.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked_and_get_the_traces_path() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://c:4318/").unwrap(),
            "http://c:4318/v1/traces"
        );
        assert_eq!(traces_url("http://c/x/spans").unwrap(), "http://c/x/spans");
        for bad in [
            "",
            "not a url",
            "ftp://c/",
            "https://c:4318",
            "http://u:SECRET@c:4318",
        ] {
            let e = traces_url(bad).expect_err(bad);
            assert!(matches!(e, OtelError::InvalidEndpoint { .. }), "{bad}");
            assert!(!e.to_string().contains("SECRET"));
        }
    }

    #[test]
    fn a_bad_header_is_named_and_its_value_not_repeated() {
        let e = layer(OtlpConfig::new("http://127.0.0.1:9").header("x-key", "a\nSECRET"))
            .expect_err("refused");
        assert!(matches!(&e, OtelError::InvalidHeader { name } if name == "x-key"));
        assert!(!e.to_string().contains("SECRET"));
        let c = OtlpConfig::new("http://127.0.0.1:9").header("x-key", "SECRET");
        assert!(!format!("{c:?}").contains("SECRET"));
    }
}
