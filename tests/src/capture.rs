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
pub fn log_subscriber(buffer: &SharedBuffer) -> impl tracing::Subscriber + Send + Sync + 'static {
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
