//! Counters and histograms of runs and exchanges, through the `metrics` facade.
//!
//! The engine only records; the host installs a recorder (`metrics::set_global_recorder`, or an
//! exporter crate such as a Prometheus or OpenTelemetry one) to keep and export them. Without a
//! recorder every call is a no-op. Call [`describe`] once after installing it to give each
//! metric its unit and description.
//!
//! | name | kind | labels | counts |
//! |---|---|---|---|
//! | [`RUNS_TOTAL`] | counter | `outcome` | finished runs: `success`, `failure`, `cancelled`, or `refused` (refused at the door: bad setting, unusable card, closed engine) |
//! | [`SUBTASKS_TOTAL`] | counter | `agent`, `outcome` | finished subtasks by their status: `success`, `failed`, `cancelled` |
//! | [`REQUEST_DURATION_SECONDS`] | histogram | `agent`, `binding`, `method` | seconds from sending a request (after the concurrency limits let it go) to the end of its response or its failure |
//! | [`RETRIES_TOTAL`] | counter | `agent` | retries a run scheduled after a fault (each resend, lookup, re-poll or reattach) |
//! | [`REATTACHES_TOTAL`] | counter | | reattaches to a task's stream (`SubscribeToTask` after a cut stream), by runs and by Notification-T subscriptions |
//! | [`NEGOTIATION_ROUNDS_TOTAL`] | counter | | Negotiation-T Proposes handed to the host (`on_negotiation` calls) |
//! | [`EVENTS_DROPPED_TOTAL`] | counter | | run events no consumer got: the event stream's reader dropped it (or the engine was closing while nobody read it), and neither an event sink nor `on_finish` took the event |
//!
//! Label values: `agent` is the card name, `binding` is `JSONRPC`, `HTTP+JSON`, `GRPC` or
//! `unknown` (extension and task operations), `method` is the A2A method (see
//! [`crate::telemetry::A2A_METHOD`]). No label holds a secret, an id or free text, so their
//! number stays bounded by the cards.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ::metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Label, Level, Metadata,
    Recorder, SharedString, Unit,
};
use a2at_core::a2a::Binding;
use a2at_core::host::TaskStatus;

/// Finished runs, by `outcome`.
pub const RUNS_TOTAL: &str = "a2at_runs_total";
/// Finished subtasks, by `agent` and `outcome`.
pub const SUBTASKS_TOTAL: &str = "a2at_subtasks_total";
/// Request latency in seconds, by `agent`, `binding` and `method`.
pub const REQUEST_DURATION_SECONDS: &str = "a2at_request_duration_seconds";
/// Retries scheduled after a fault, by `agent`.
pub const RETRIES_TOTAL: &str = "a2at_retries_total";
/// Reattaches to a task's stream.
pub const REATTACHES_TOTAL: &str = "a2at_reattaches_total";
/// Negotiation-T rounds handed to the host.
pub const NEGOTIATION_ROUNDS_TOTAL: &str = "a2at_negotiation_rounds_total";
/// Run events the event stream did not take.
pub const EVENTS_DROPPED_TOTAL: &str = "a2at_events_dropped_total";

/// Every metric name, in the order of the table above.
pub const ALL: [&str; 7] = [
    RUNS_TOTAL,
    SUBTASKS_TOTAL,
    REQUEST_DURATION_SECONDS,
    RETRIES_TOTAL,
    REATTACHES_TOTAL,
    NEGOTIATION_ROUNDS_TOTAL,
    EVENTS_DROPPED_TOTAL,
];

/// Gives every metric its unit and description in the installed recorder.
pub fn describe() {
    use ::metrics::{Unit, describe_counter, describe_histogram};
    describe_counter!(RUNS_TOTAL, Unit::Count, "Finished runs by outcome");
    describe_counter!(
        SUBTASKS_TOTAL,
        Unit::Count,
        "Finished subtasks by agent and outcome"
    );
    describe_histogram!(
        REQUEST_DURATION_SECONDS,
        Unit::Seconds,
        "Request latency by agent, binding and A2A method"
    );
    describe_counter!(
        RETRIES_TOTAL,
        Unit::Count,
        "Retries scheduled after a fault, by agent"
    );
    describe_counter!(
        REATTACHES_TOTAL,
        Unit::Count,
        "Reattaches to a task's stream"
    );
    describe_counter!(
        NEGOTIATION_ROUNDS_TOTAL,
        Unit::Count,
        "Negotiation-T rounds handed to the host"
    );
    describe_counter!(
        EVENTS_DROPPED_TOTAL,
        Unit::Count,
        "Run events the event stream did not take"
    );
}

/// A finished run.
pub(crate) fn run_finished(result: &a2at_core::ExecutionResult) {
    let outcome = if result.success {
        "success"
    } else if result
        .error
        .as_ref()
        .is_some_and(|e| e.code == a2at_core::host::codes::CANCELLED)
    {
        "cancelled"
    } else {
        "failure"
    };
    ::metrics::counter!(RUNS_TOTAL, "outcome" => outcome).increment(1);
}

/// A run refused before it started.
pub(crate) fn run_refused() {
    ::metrics::counter!(RUNS_TOTAL, "outcome" => "refused").increment(1);
}

/// A finished subtask.
pub(crate) fn subtask_finished(agent: &str, status: TaskStatus) {
    let outcome = status.as_str();
    // One label beside the agent: the second value is left empty.
    let key = agent_key(SUBTASKS_TOTAL, agent, [outcome, ""], || {
        Key::from_parts(
            SUBTASKS_TOTAL,
            vec![
                Label::new("agent", agent.to_owned()),
                Label::new("outcome", outcome),
            ],
        )
    });
    ::metrics::with_recorder(|r| r.register_counter(&key, &METADATA).increment(1));
}

/// One request's latency.
pub(crate) fn request_duration(
    agent: &str,
    binding: Option<Binding>,
    method: &'static str,
    took: Duration,
) {
    let binding = binding.map_or("unknown", Binding::as_str);
    let key = agent_key(REQUEST_DURATION_SECONDS, agent, [binding, method], || {
        Key::from_parts(
            REQUEST_DURATION_SECONDS,
            vec![
                Label::new("agent", agent.to_owned()),
                Label::new("binding", binding),
                Label::new("method", method),
            ],
        )
    });
    ::metrics::with_recorder(|r| {
        r.register_histogram(&key, &METADATA)
            .record(took.as_secs_f64());
    });
}

/// What the `metrics` macros would give the recorder for a metric recorded in this module.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The metrics labelled by agent, recorded for every request and subtask, by agent name: each
/// metric's name and other label values, with its key.
type AgentKeys = BTreeMap<Arc<str>, Vec<(&'static str, [&'static str; 2], Arc<Key>)>>;

/// The keys of the metrics labelled by agent, each built the first time it is recorded and
/// kept for the process's life (their number is bounded by the agents' names and the label
/// values, as the recorder's own are). A key's labels are a vector on the heap; the recorder
/// only reads the key, and is still asked for the metric at every record, so a recorder
/// installed later, or one scoped to a thread, sees what it would have seen.
static AGENT_KEYS: Mutex<AgentKeys> = Mutex::new(BTreeMap::new());

/// The key of metric `name` for `agent` and the other label values `values`; `make` builds it
/// the first time.
fn agent_key(
    name: &'static str,
    agent: &str,
    values: [&'static str; 2],
    make: impl FnOnce() -> Key,
) -> Arc<Key> {
    let mut keys = lock(&AGENT_KEYS);
    let list = match keys.get_mut(agent) {
        Some(list) => list,
        None => keys.entry(Arc::from(agent)).or_default(),
    };
    if let Some((_, _, key)) = list.iter().find(|(n, v, _)| *n == name && *v == values) {
        return Arc::clone(key);
    }
    let key = Arc::new(make());
    list.push((name, values, Arc::clone(&key)));
    key
}

/// A retry the run scheduled; a `resubscribe` is also a reattach.
pub(crate) fn retry(agent: &str, action: &str) {
    ::metrics::counter!(RETRIES_TOTAL, "agent" => agent.to_owned()).increment(1);
    if action == "resubscribe" {
        reattach();
    }
}

/// A reattach to a task's stream.
pub(crate) fn reattach() {
    ::metrics::counter!(REATTACHES_TOTAL).increment(1);
}

/// A Negotiation-T round handed to the host.
pub(crate) fn negotiation_round() {
    ::metrics::counter!(NEGOTIATION_ROUNDS_TOTAL).increment(1);
}

/// A run event the stream did not take.
pub(crate) fn event_dropped() {
    ::metrics::counter!(EVENTS_DROPPED_TOTAL).increment(1);
}

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

/// A recorder that keeps every counter and histogram value in this process's memory, for a
/// summary at the end of a command-line run or for tests; a service exports to its monitoring
/// instead. Keys read `name{label=value,...}` with the labels sorted by name. Clones share the
/// same values. Gauges are not kept (the engine records none).
#[derive(Default, Clone)]
pub struct InMemoryMetrics {
    counters: Arc<Mutex<BTreeMap<String, Arc<CounterCell>>>>,
    histograms: Arc<Mutex<BTreeMap<String, Arc<HistogramCell>>>>,
}

impl std::fmt::Debug for InMemoryMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryMetrics")
            .field("counters", &self.counters())
            .finish_non_exhaustive()
    }
}

/// `name{k=v,...}` with the labels sorted, or `name` without labels.
fn key_text(key: &Key) -> String {
    let mut labels: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
    labels.sort_unstable();
    let mut text = key.name().to_owned();
    if !labels.is_empty() {
        text.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let _ = write!(text, "{k}={v}");
        }
        text.push('}');
    }
    text
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl InMemoryMetrics {
    /// An empty recorder, not installed anywhere.
    pub fn new() -> InMemoryMetrics {
        InMemoryMetrics::default()
    }

    /// Installs a new recorder as the process's global one (the `metrics` facade has one per
    /// process); `None` when another recorder was installed first.
    pub fn install_global() -> Option<InMemoryMetrics> {
        let recorder = InMemoryMetrics::new();
        ::metrics::set_global_recorder(recorder.clone()).ok()?;
        Some(recorder)
    }

    /// The value of counter `key` (`name{label=value,...}`, labels sorted); 0 when never
    /// counted.
    pub fn counter(&self, key: &str) -> u64 {
        lock(&self.counters)
            .get(key)
            .map_or(0, |c| c.0.load(Ordering::Relaxed))
    }

    /// Every counter with its value.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        lock(&self.counters)
            .iter()
            .map(|(k, c)| (k.clone(), c.0.load(Ordering::Relaxed)))
            .collect()
    }

    /// The values recorded in histogram `key`, in recording order.
    pub fn histogram(&self, key: &str) -> Vec<f64> {
        lock(&self.histograms)
            .get(key)
            .map(|h| lock(&h.0).clone())
            .unwrap_or_default()
    }

    /// Every histogram key.
    pub fn histogram_keys(&self) -> Vec<String> {
        lock(&self.histograms).keys().cloned().collect()
    }

    /// A plain-text table of every counter, then every histogram of seconds as count, median
    /// and maximum in milliseconds; empty when nothing was recorded.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (key, value) in self.counters() {
            let _ = writeln!(out, "{key} {value}");
        }
        for key in self.histogram_keys() {
            let mut values = self.histogram(&key);
            if values.is_empty() {
                continue;
            }
            values.sort_by(f64::total_cmp);
            let median = values[values.len() / 2] * 1e3;
            let max = values[values.len() - 1] * 1e3;
            let _ = writeln!(
                out,
                "{key} count={} median={median:.1}ms max={max:.1}ms",
                values.len()
            );
        }
        out
    }
}

impl Recorder for InMemoryMetrics {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let cell = lock(&self.counters)
            .entry(key_text(key))
            .or_default()
            .clone();
        Counter::from_arc(cell)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let cell = lock(&self.histograms)
            .entry(key_text(key))
            .or_default()
            .clone();
        Histogram::from_arc(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys kept for the metrics labelled by agent tell apart every label value, and a
    /// recorder in scope after a key was first built still gets every record.
    #[test]
    fn kept_keys_keep_each_label_set_apart_for_any_recorder() {
        // Built without a recorder in scope: the key is kept, the record goes nowhere.
        subtask_finished("delta", TaskStatus::Success);
        request_duration("delta", None, "GetTask", Duration::from_millis(5));
        let recorder = InMemoryMetrics::new();
        ::metrics::with_local_recorder(&recorder, || {
            subtask_finished("delta", TaskStatus::Success);
            subtask_finished("delta", TaskStatus::Cancelled);
            subtask_finished("epsilon", TaskStatus::Success);
            request_duration("delta", None, "GetTask", Duration::from_millis(1));
            request_duration(
                "delta",
                Some(Binding::HttpJson),
                "GetTask",
                Duration::from_millis(2),
            );
            request_duration("delta", None, "SendMessage", Duration::from_millis(3));
            request_duration("epsilon", None, "GetTask", Duration::from_millis(4));
        });
        assert_eq!(
            recorder.counters(),
            BTreeMap::from([
                (
                    "a2at_subtasks_total{agent=delta,outcome=cancelled}".to_owned(),
                    1
                ),
                (
                    "a2at_subtasks_total{agent=delta,outcome=success}".to_owned(),
                    1
                ),
                (
                    "a2at_subtasks_total{agent=epsilon,outcome=success}".to_owned(),
                    1
                ),
            ])
        );
        let histogram = |labels: &str| {
            recorder.histogram(&format!("a2at_request_duration_seconds{{{labels}}}"))
        };
        assert_eq!(
            histogram("agent=delta,binding=unknown,method=GetTask"),
            vec![0.001]
        );
        assert_eq!(
            histogram("agent=delta,binding=HTTP+JSON,method=GetTask"),
            vec![0.002]
        );
        assert_eq!(
            histogram("agent=delta,binding=unknown,method=SendMessage"),
            vec![0.003]
        );
        assert_eq!(
            histogram("agent=epsilon,binding=unknown,method=GetTask"),
            vec![0.004]
        );
    }

    /// A label set recorded again finds its kept key: one key per label set, not one per
    /// record.
    #[test]
    fn a_label_set_recorded_again_reuses_its_key() {
        for _ in 0..3 {
            subtask_finished("zeta", TaskStatus::Success);
            request_duration("zeta", None, "GetTask", Duration::from_millis(1));
        }
        subtask_finished("zeta", TaskStatus::Failed);
        let kept = lock(&AGENT_KEYS).get("zeta").map(Vec::len);
        assert_eq!(kept, Some(3), "success, failed and one latency key");
    }

    #[test]
    fn keeps_counters_and_histograms_by_sorted_labels_and_summarises_them() {
        let recorder = InMemoryMetrics::new();
        ::metrics::with_local_recorder(&recorder, || {
            subtask_finished("beta", TaskStatus::Success);
            subtask_finished("beta", TaskStatus::Success);
            subtask_finished("alpha", TaskStatus::Failed);
            for ms in [30, 10, 20] {
                request_duration(
                    "alpha",
                    Some(Binding::JsonRpc),
                    "SendMessage",
                    Duration::from_millis(ms),
                );
            }
        });
        assert_eq!(
            recorder.counter("a2at_subtasks_total{agent=beta,outcome=success}"),
            2
        );
        assert_eq!(
            recorder.counter("a2at_subtasks_total{agent=alpha,outcome=failed}"),
            1
        );
        assert_eq!(
            recorder.counter("a2at_subtasks_total{agent=gamma,outcome=failed}"),
            0
        );
        let key = "a2at_request_duration_seconds{agent=alpha,binding=JSONRPC,method=SendMessage}";
        assert_eq!(recorder.histogram(key), vec![0.03, 0.01, 0.02]);
        assert_eq!(
            recorder.summary(),
            "a2at_subtasks_total{agent=alpha,outcome=failed} 1\n\
             a2at_subtasks_total{agent=beta,outcome=success} 2\n\
             a2at_request_duration_seconds{agent=alpha,binding=JSONRPC,method=SendMessage} \
             count=3 median=20.0ms max=30.0ms\n"
        );
        assert_eq!(InMemoryMetrics::new().summary(), "");
    }
}
