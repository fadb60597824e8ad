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

use std::time::Duration;

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
    ::metrics::counter!(SUBTASKS_TOTAL, "agent" => agent.to_owned(), "outcome" => status.as_str())
        .increment(1);
}

/// One request's latency.
pub(crate) fn request_duration(
    agent: &str,
    binding: Option<Binding>,
    method: &'static str,
    took: Duration,
) {
    let binding = binding.map_or("unknown", Binding::as_str);
    ::metrics::histogram!(
        REQUEST_DURATION_SECONDS,
        "agent" => agent.to_owned(),
        "binding" => binding,
        "method" => method,
    )
    .record(took.as_secs_f64());
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
