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
