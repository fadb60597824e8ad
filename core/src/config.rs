//! The settings of a run and their checks. Kept apart from the run machine so that the
//! machines a run drives (remote tasks) read settings without depending on the run itself.

use std::time::Duration;

use crate::a2a::DecodeLimits;
use crate::event::EventSelection;
use crate::retry::{AmbiguousSend, RetryPolicy};
use crate::tracectx::{TraceContextError, TraceParent, check_tracestate};

/// Settings of one run. The defaults are those of the reference engines.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Seed of the id generator: the same seed and inputs give byte-identical outputs.
    pub seed: u64,
    /// Execution id; drawn from the seeded generator when `None`.
    pub execution_id: Option<String>,
    /// One budget per task activation: content, send, waiting and negotiation (default 600 s).
    pub task_budget: Duration,
    /// Budget of each `on_route` and `on_self_task` call (default 600 s).
    pub callback_budget: Duration,
    /// Delay between `GetTask` observations of a waiting task (default 250 ms).
    pub poll_interval: Duration,
    /// Budget of each cleanup exchange after a subtask ended: a `CancelTask`, or a send or
    /// `ListTasks` lookup read only for the task id to cancel (default 5 s).
    pub cancel_budget: Duration,
    /// Local negotiation exchanges allowed per task (default 3).
    pub max_negotiation_exchanges: u32,
    /// Follow-up messages the host may send per task on a plain `INPUT_REQUIRED` (without
    /// Negotiation-T). `None` (the default): the host is not asked and such a task fails with
    /// `a2a.unsupported_task_state`; `Some(n)` (n ≥ 1): `on_input_required` decides, at most
    /// `n` times per task.
    pub max_input_replies: Option<u32>,
    /// `historyLength` sent with sends and polls (default `Some(0)`: the engine never needs it).
    pub history_length: Option<i32>,
    /// Size limits for decoding responses.
    pub decode_limits: DecodeLimits,
    /// Which events are built and emitted (default all). The result is complete either way.
    pub events: EventSelection,
    /// How faults of the network or of an overloaded agent are retried (default: 5 attempts,
    /// 200 ms doubling to 5 s); see [`crate::retry`]. Check it with [`RetryPolicy::validate`]
    /// before a run: attempts beyond [`crate::retry::MAX_ATTEMPTS`] are not made.
    pub retry: RetryPolicy,
    /// The host's trace to join: every request of the run carries a `traceparent` of this
    /// trace, parented (through the exchange's own span) on this span. `None` (the default):
    /// the run starts its own trace, its id drawn from `seed` (see [`crate::tracectx`]).
    pub trace_parent: Option<TraceParent>,
    /// A `tracestate` sent unchanged with every request (checked by
    /// [`RunConfig::validate`]: 1 to 512 printable ASCII characters).
    pub trace_state: Option<String>,
    /// What a resumed durable run does with a send whose outcome it cannot look up (see
    /// [`AmbiguousSend`]); [`AmbiguousSend::Fail`] by default.
    pub ambiguous_send: AmbiguousSend,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 0,
            execution_id: None,
            task_budget: Duration::from_secs(600),
            callback_budget: Duration::from_secs(600),
            poll_interval: Duration::from_millis(250),
            cancel_budget: Duration::from_secs(5),
            max_negotiation_exchanges: 3,
            max_input_replies: None,
            history_length: Some(0),
            decode_limits: DecodeLimits::default(),
            events: EventSelection::All,
            retry: RetryPolicy::default(),
            trace_parent: None,
            trace_state: None,
            ambiguous_send: AmbiguousSend::Fail,
        }
    }
}

/// Why a [`RunConfig`] is unusable; each variant names the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A budget, interval or timeout is zero.
    #[error("{0} must be positive")]
    ZeroDuration(&'static str),
    /// A count or size limit is zero.
    #[error("{0} must be at least 1")]
    ZeroLimit(&'static str),
    /// A setting that cannot be negative is.
    #[error("{0} must not be negative")]
    Negative(&'static str),
    /// The retry policy is unusable.
    #[error(transparent)]
    Retry(#[from] crate::retry::RetryPolicyError),
    /// A subscription's reattach policy is unusable.
    #[error("the reattach policy is unusable: {0}")]
    Reattach(crate::retry::RetryPolicyError),
    /// A `traceparent` or `tracestate` given by the host is unusable.
    #[error("{0}")]
    TraceContext(#[from] TraceContextError),
}

/// The stable code of a run refused for an unusable setting (the message names it).
pub const INVALID_CONFIG: &str = "config.invalid";

impl ConfigError {
    /// The setting at fault (`task_budget`, `retry`, …).
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::ZeroDuration(f) | ConfigError::ZeroLimit(f) | ConfigError::Negative(f) => {
                f
            }
            ConfigError::Retry(_) => "retry",
            ConfigError::Reattach(_) => "reattach",
            ConfigError::TraceContext(TraceContextError::TraceState) => "trace_state",
            ConfigError::TraceContext(_) => "trace_parent",
        }
    }
}

/// The first zero duration among `durations`, as an error naming it.
pub(crate) fn check_durations(durations: &[(&'static str, Duration)]) -> Result<(), ConfigError> {
    match durations.iter().find(|(_, d)| d.is_zero()) {
        Some((name, _)) => Err(ConfigError::ZeroDuration(name)),
        None => Ok(()),
    }
}

/// The first zero among `limits`, as an error naming it.
pub(crate) fn check_limits(limits: &[(&'static str, usize)]) -> Result<(), ConfigError> {
    match limits.iter().find(|(_, n)| *n == 0) {
        Some((name, _)) => Err(ConfigError::ZeroLimit(name)),
        None => Ok(()),
    }
}

/// A negative `historyLength` is refused.
pub(crate) fn check_history(history_length: Option<i32>) -> Result<(), ConfigError> {
    match history_length {
        Some(h) if h < 0 => Err(ConfigError::Negative("history_length")),
        _ => Ok(()),
    }
}

impl RunConfig {
    /// Checks every setting: budgets, intervals and limits must be positive, and the retry
    /// policy must be valid, a trace state must be a printable header value. Runtimes call it when an engine is built, so a bad setting is
    /// reported before any run starts.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let durations = [
            ("task_budget", self.task_budget),
            ("callback_budget", self.callback_budget),
            ("poll_interval", self.poll_interval),
            ("cancel_budget", self.cancel_budget),
        ];
        check_durations(&durations)?;
        let limits = [
            (
                "max_negotiation_exchanges",
                self.max_negotiation_exchanges as usize,
            ),
            (
                "decode_limits.max_event_bytes",
                self.decode_limits.max_event_bytes,
            ),
            (
                "decode_limits.max_body_bytes",
                self.decode_limits.max_body_bytes,
            ),
        ];
        check_limits(&limits)?;
        if self.max_input_replies == Some(0) {
            return Err(ConfigError::ZeroLimit("max_input_replies"));
        }
        check_history(self.history_length)?;
        self.retry.validate()?;
        if let Some(state) = &self.trace_state {
            check_tracestate(state)?;
        }
        Ok(())
    }
}
