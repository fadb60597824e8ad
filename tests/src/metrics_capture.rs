//! The process's in-memory metrics recorder, for the tests that check what the engine counts.
//!
//! The `metrics` facade has one global recorder per process, and spawned tasks run on other
//! threads than the test: [`install`] sets it once, so a test binary that reads it must hold a
//! single test (or compare values that only its own test can change).

use std::sync::OnceLock;

pub use a2at_driver::metrics::InMemoryMetrics as MetricsCapture;

/// The process's recorder, installed as the global one the first time.
pub fn install() -> MetricsCapture {
    static GLOBAL: OnceLock<MetricsCapture> = OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            MetricsCapture::install_global()
                .unwrap_or_else(|| panic!("another global metrics recorder is installed"))
        })
        .clone()
}
