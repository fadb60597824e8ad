//! Capturing what the engine writes: an in-memory `Write` sink (traces, logs) and a `tracing`
//! subscriber that records every level into one, for the tests that read logs back.

use std::sync::{Arc, Mutex, PoisonError};

/// A cloneable in-memory writer: every clone appends to the same bytes.
#[derive(Debug, Clone, Default)]
pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// Everything written so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A subscriber writing every event and span of every level, without colours, into `buffer`.
///
/// Install it on the capturing thread (`with_default`/`set_default`). While only one
/// dispatcher exists in the process, `tracing` decides whether a call site is interesting from
/// the default of whichever thread reaches it first; a parallel test thread without a
/// subscriber would mark it "never" for the whole process and the capture would miss it. A
/// second, permanent dispatcher that stays interested in everything rules that out.
pub fn log_subscriber(buffer: &SharedBuffer) -> impl tracing::Subscriber + Send + Sync + 'static {
    keep_call_sites_interesting();
    let writer = buffer.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish()
}

/// Runs `f` with [`log_subscriber`] as this thread's default and returns its value and the logs.
pub fn capture_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    let buffer = SharedBuffer::default();
    let out = tracing::subscriber::with_default(log_subscriber(&buffer), f);
    (out, buffer.text())
}

/// Registers, once per process, a dispatcher that records nothing but keeps every call site
/// re-checked per event (see [`log_subscriber`]).
fn keep_call_sites_interesting() {
    static ANCHOR: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    ANCHOR.get_or_init(|| tracing::Dispatch::new(Anchor));
}

/// Interested in every call site, enabled for none.
struct Anchor;

impl tracing::Subscriber for Anchor {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// One span as [`SpanLayer`] saw it: its name, its fields (recorded at creation and later, as
/// text) and its parent's index in [`CapturedSpans::spans`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedSpan {
    /// The span's name.
    pub name: String,
    /// Every field with a value, by name (values as `Debug`/`Display` text).
    pub fields: std::collections::BTreeMap<String, String>,
    /// The parent span's index, when the parent was captured too.
    pub parent: Option<usize>,
    /// Whether the span was closed (every handle dropped).
    pub closed: bool,
}

/// Everything a [`SpanLayer`] captured: spans in creation order and events' text.
#[derive(Debug, Default, Clone)]
pub struct CapturedSpans {
    /// Spans in the order they were created.
    pub spans: Vec<CapturedSpan>,
    /// Each event as `message field=value ...`, in order.
    pub events: Vec<String>,
}

impl CapturedSpans {
    /// The spans named `name`, with their indices.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (usize, &'a CapturedSpan)> {
        self.spans
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.name == name)
    }

    /// Every span name, field name, field value and event as one text, to search for leaks.
    pub fn all_text(&self) -> String {
        let mut text = String::new();
        for s in &self.spans {
            text.push_str(&s.name);
            for (k, v) in &s.fields {
                text.push_str(&format!(" {k}={v}"));
            }
            text.push('\n');
        }
        for e in &self.events {
            text.push_str(e);
            text.push('\n');
        }
        text
    }
}

/// A `tracing` layer that records spans (names, fields, parent links) and events into a shared
/// [`CapturedSpans`]; see [`capture_spans`].
#[derive(Clone, Default)]
pub struct SpanLayer {
    captured: Arc<Mutex<CapturedSpans>>,
}

/// The index of a span in [`CapturedSpans::spans`], kept in the span's extensions.
struct SpanIndex(usize);

/// Collects fields as text.
struct FieldText<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for FieldText<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl SpanLayer {
    /// What was captured so far.
    pub fn captured(&self) -> CapturedSpans {
        self.captured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn with<T>(&self, f: impl FnOnce(&mut CapturedSpans) -> T) -> T {
        f(&mut self
            .captured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

impl<S> tracing_subscriber::Layer<S> for SpanLayer
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = std::collections::BTreeMap::new();
        attrs.record(&mut FieldText(&mut fields));
        let parent = ctx
            .span_scope(id)
            .and_then(|mut scope| scope.nth(1))
            .and_then(|p| p.extensions().get::<SpanIndex>().map(|i| i.0));
        let index = self.with(|c| {
            c.spans.push(CapturedSpan {
                name: attrs.metadata().name().to_owned(),
                fields,
                parent,
                closed: false,
            });
            c.spans.len() - 1
        });
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanIndex(index));
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let Some(index) = ctx
            .span(id)
            .and_then(|s| s.extensions().get::<SpanIndex>().map(|i| i.0))
        else {
            return;
        };
        self.with(|c| values.record(&mut FieldText(&mut c.spans[index].fields)));
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = std::collections::BTreeMap::new();
        event.record(&mut FieldText(&mut fields));
        let text = fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        self.with(|c| c.events.push(text));
    }

    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(index) = ctx
            .span(&id)
            .and_then(|s| s.extensions().get::<SpanIndex>().map(|i| i.0))
        {
            self.with(|c| c.spans[index].closed = true);
        }
    }
}

/// Runs `f` with a subscriber that captures every span and event of every level (see
/// [`SpanLayer`]) as this thread's default, and returns `f`'s value and what was captured.
/// Tasks the adapters spawn inherit it (they spawn with the current subscriber).
pub fn capture_spans<T>(f: impl FnOnce() -> T) -> (T, CapturedSpans) {
    use tracing_subscriber::layer::SubscriberExt;
    keep_call_sites_interesting();
    let layer = SpanLayer::default();
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    let out = tracing::subscriber::with_default(subscriber, f);
    (out, layer.captured())
}
