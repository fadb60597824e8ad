//! A `metrics` recorder that keeps every counter and histogram value in memory, for the tests
//! that check what the engine counts.
//!
//! The `metrics` facade has one global recorder per process, and spawned tasks run on other
//! threads than the test: [`install`] sets it once, so a test binary that reads it must hold a
//! single test (or compare values that only its own test can change).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

/// One counter's value.
#[derive(Default)]
struct CounterCell(AtomicU64);

impl CounterFn for CounterCell {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }

    fn absolute(&self, value: u64) {
        self.0.fetch_max(value, Ordering::Relaxed);
    }
}

/// One histogram's recorded values.
#[derive(Default)]
struct HistogramCell(Mutex<Vec<f64>>);

impl HistogramFn for HistogramCell {
    fn record(&self, value: f64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(value);
    }
}

/// The recorder: counters and histograms by `name{label=value,...}` (labels sorted by name).
#[derive(Default, Clone)]
pub struct MetricsCapture {
    counters: Arc<Mutex<BTreeMap<String, Arc<CounterCell>>>>,
    histograms: Arc<Mutex<BTreeMap<String, Arc<HistogramCell>>>>,
}

/// `name{k=v,...}` with the labels sorted, or `name` without labels.
fn key_text(key: &Key) -> String {
    let mut labels: Vec<(String, String)> = key
        .labels()
        .map(|l| (l.key().to_owned(), l.value().to_owned()))
        .collect();
    labels.sort();
    if labels.is_empty() {
        return key.name().to_owned();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}{{{}}}", key.name(), inner.join(","))
}

impl MetricsCapture {
    /// The value of counter `key` (`name{label=value,...}`, labels sorted); 0 when never
    /// counted.
    pub fn counter(&self, key: &str) -> u64 {
        self.counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .map_or(0, |c| c.0.load(Ordering::Relaxed))
    }

    /// Every counter with its value.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, c)| (k.clone(), c.0.load(Ordering::Relaxed)))
            .collect()
    }

    /// The values recorded in histogram `key`.
    pub fn histogram(&self, key: &str) -> Vec<f64> {
        self.histograms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .map(|h| h.0.lock().unwrap_or_else(PoisonError::into_inner).clone())
            .unwrap_or_default()
    }

    /// Every histogram key.
    pub fn histogram_keys(&self) -> Vec<String> {
        self.histograms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }
}

impl Recorder for MetricsCapture {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let cell = self
            .counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key_text(key))
            .or_default()
            .clone();
        Counter::from_arc(cell)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let cell = self
            .histograms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key_text(key))
            .or_default()
            .clone();
        Histogram::from_arc(cell)
    }
}

/// The process's recorder, installed as the global one the first time.
pub fn install() -> MetricsCapture {
    static GLOBAL: OnceLock<MetricsCapture> = OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            let capture = MetricsCapture::default();
            metrics::set_global_recorder(capture.clone())
                .unwrap_or_else(|_| panic!("another global metrics recorder is installed"));
            capture
        })
        .clone()
}
