//! How a remote task survives faults of the network or of an overloaded agent.
//!
//! The rules below apply to every workflow subtask and to Authorization-T sends, which follow
//! the same policy (an authorization never looks a lost send up: it fails instead).
//! Notification-T subscriptions have their own reattachment settings.
//!
//! A message is never resent blindly: `SendMessage` is not idempotent. The engine distinguishes
//! three situations.
//!
//! * **The request was provably not processed**: the connection was refused or the TLS
//!   handshake failed before any request byte was written, or the agent answered HTTP 503 or
//!   429 without any A2A event. The same message (same `messageId`, so the agent can
//!   de-duplicate) is sent again after a backoff; a `Retry-After` of whole seconds is honoured
//!   when it is longer than the backoff.
//! * **The task is known** (its id arrived) and its observation broke: a reset or broken
//!   stream, a truncated or undecodable event, a stream that ended before a final or
//!   interrupted state, or a `GetTask`/`SubscribeToTask` that failed with a transport error,
//!   HTTP 5xx or 429. This is an *observation fault*, not a task failure: the engine finds the
//!   task again with `SubscribeToTask` when the agent's card declares streaming, otherwise with
//!   `GetTask`. A resubscription starts with the task snapshot, which replaces whatever half of
//!   the earlier stream was received, so no artifact or output is counted twice. No `CancelTask`
//!   is sent while a task is being found again.
//! * **The outcome is unknown** (request bytes were sent, no task id came back): the engine
//!   looks the task up with `ListTasks` filtered by the context id it gave the message, and
//!   follows the task it finds. When the agent does not support `ListTasks` or has no task in
//!   that context, the subtask fails as it would without a retry policy. An exchange that was
//!   open when the engine restarted (transport kind `Restarted`, fed by a resumed durable run)
//!   is looked up the same way, except that finding no task sends the same message again
//!   (same `messageId`): the agent never turned it into a task; and when the lookup fails (the
//!   agent does not support `ListTasks`, or its attempts run out) [`AmbiguousSend`] decides:
//!   by default the subtask fails with `run.resume_ambiguous` instead of sending the message
//!   again blindly; with [`AmbiguousSend::Resend`] the same message (same `messageId`) goes
//!   again, for agents that de-duplicate by message id.
//!
//! Every fault that is retried counts one attempt. Attempts are counted per subtask and start
//! again from zero once an observation succeeds (a `GetTask` answer or a stream event after the
//! snapshot), so a long task behind a proxy that drops streams now and then is never given up.
//! The subtask fails when [`RetryPolicy::attempts`] consecutive attempts are used up, or when
//! the next attempt would not start inside the task budget; its error is the one the last fault
//! gives without a retry policy, with `errorDetails.attempts` listing every attempt (fault,
//! time, what was tried next). Cleanup after giving up is the same as for any failure: a known
//! non-final task is cancelled.
//!
//! Delays grow exponentially from [`RetryPolicy::base_delay`] to [`RetryPolicy::max_delay`],
//! with "equal jitter" (a delay `d` becomes a value in `[d/2, d]`) drawn from the run's seeded
//! generator, so a replay reproduces every delay.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::a2a::ProtocolError;
use crate::io::TransportErrorKind;
use crate::time::Timestamp;

/// What a resumed durable run does with a send that was open when its engine stopped, when the
/// agent cannot say whether the message became a task (it does not support `ListTasks`, or
/// the lookup's attempts ran out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AmbiguousSend {
    /// The subtask fails with `run.resume_ambiguous`: the message is never risked twice.
    #[default]
    Fail,
    /// The same message (same `messageId`) is sent again: for agents that de-duplicate by
    /// message id, where a second copy is harmless.
    Resend,
}

impl AmbiguousSend {
    /// Whether this is the default ([`AmbiguousSend::Fail`]).
    pub fn is_fail(&self) -> bool {
        *self == AmbiguousSend::Fail
    }
}

/// The retry policy of a run. `attempts = 0` disables every retry (fail fast).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Consecutive faults tolerated per subtask (default 5; 0 = fail on the first fault).
    pub attempts: u32,
    /// Delay before the first retry, before jitter (default 200 ms).
    pub base_delay: Duration,
    /// Upper bound of any delay, before jitter (default 5 s).
    pub max_delay: Duration,
}

/// The largest accepted [`RetryPolicy::attempts`]: a larger value is almost certainly a
/// mistake, and the task budget bounds retries anyway.
pub const MAX_ATTEMPTS: u32 = 1000;

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
        }
    }
}

/// Why a [`RetryPolicy`] is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RetryPolicyError {
    /// Retries are enabled with a zero base delay: faults would be retried in a tight loop.
    #[error("retry.base_delay must be positive when retry.attempts is above 0")]
    ZeroBaseDelay,
    /// `max_delay` is below `base_delay`.
    #[error("retry.max_delay ({max:?}) must not be below retry.base_delay ({base:?})")]
    MaxBelowBase {
        /// The base delay.
        base: Duration,
        /// The maximum delay.
        max: Duration,
    },
    /// More attempts than [`MAX_ATTEMPTS`].
    #[error("retry.attempts ({0}) must be at most {MAX_ATTEMPTS}")]
    TooManyAttempts(u32),
}

impl RetryPolicy {
    /// No retry at all: the first fault fails the subtask.
    pub const FAIL_FAST: RetryPolicy = RetryPolicy {
        attempts: 0,
        base_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };

    /// Checks the policy; every run configuration is checked with it before a run starts.
    pub fn validate(&self) -> Result<(), RetryPolicyError> {
        if self.attempts == 0 {
            return Ok(());
        }
        if self.attempts > MAX_ATTEMPTS {
            return Err(RetryPolicyError::TooManyAttempts(self.attempts));
        }
        if self.base_delay.is_zero() {
            return Err(RetryPolicyError::ZeroBaseDelay);
        }
        if self.max_delay < self.base_delay {
            return Err(RetryPolicyError::MaxBelowBase {
                base: self.base_delay,
                max: self.max_delay,
            });
        }
        Ok(())
    }

    /// The delay before attempt `attempt` (1-based), jittered by `random` into `[d/2, d]`.
    pub fn delay(&self, attempt: u32, random: u64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        let grown = self
            .base_delay
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.max_delay);
        let full = grown.min(self.max_delay);
        let micros = u64::try_from(full.as_micros()).unwrap_or(u64::MAX);
        let half = micros / 2;
        let spread = micros - half;
        let jitter = if spread == 0 {
            0
        } else {
            random % (spread + 1)
        };
        Duration::from_micros(half + jitter)
    }
}

/// Reads a `Retry-After` value given in whole seconds. The HTTP-date form needs a wall clock,
/// which the core does not have: it is ignored and the backoff applies.
pub fn retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Why an exchange did not deliver what it should have.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The connection failed (refused, TLS, reset, timeout, …).
    Transport(TransportErrorKind),
    /// The agent answered with an error.
    Rejected(ProtocolError),
    /// The answer could not be decoded.
    Malformed(ProtocolError),
    /// A stream ended before a final or interrupted state.
    EndedEarly,
}

impl Fault {
    /// A stable name of the fault: `transport.<kind>`, the error's code, or `stream_ended`.
    pub(crate) fn reason(&self) -> String {
        match self {
            Fault::Transport(kind) => format!("transport.{}", transport_kind_name(*kind)),
            Fault::Rejected(e) | Fault::Malformed(e) => e.code.clone(),
            Fault::EndedEarly => "stream_ended".to_owned(),
        }
    }

    /// The HTTP status of an error answer.
    pub(crate) fn http_status(&self) -> Option<u16> {
        match self {
            Fault::Rejected(e) | Fault::Malformed(e) => e.http_status,
            Fault::Transport(_) | Fault::EndedEarly => None,
        }
    }

    /// The wait the agent asked for with `Retry-After` (whole seconds only).
    fn retry_after(&self) -> Option<Duration> {
        match self {
            Fault::Rejected(e) => e.retry_after.as_deref().and_then(retry_after),
            _ => None,
        }
    }
}

/// The kind's wire name (`connect`, `tls`, `io`, …), the same as in `errorDetails.transport`.
fn transport_kind_name(kind: TransportErrorKind) -> String {
    match serde_json::to_value(kind) {
        Ok(Value::String(name)) => name,
        _ => "other".to_owned(),
    }
}

/// What the next attempt does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// Send the last message again, same `messageId`: it provably never reached the agent.
    Resend,
    /// Find the known task again (`SubscribeToTask` or `GetTask`).
    Observe,
    /// Look the task up by context id (`ListTasks`): the send's outcome is unknown.
    Lookup,
}

/// The exchange that failed, as far as the recovery rule needs to know it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FailedExchange {
    /// It carried a message (a send or a negotiation reply).
    pub sending: bool,
    /// It delivered no A2A event before the fault.
    pub untouched: bool,
    /// The remote task's id is known.
    pub task_known: bool,
    /// It was a `ListTasks` lookup of a send's task.
    pub looking_up: bool,
}

/// The recovery rule: which attempt, if any, follows `fault` on `exchange` (see the module
/// docs). `None`: the fault fails the operation as it would without a retry policy.
pub(crate) fn recovery_for(fault: &Fault, exchange: &FailedExchange) -> Option<Recovery> {
    let follow = || {
        if exchange.task_known {
            Some(Recovery::Observe)
        } else if exchange.sending || exchange.looking_up {
            Some(Recovery::Lookup)
        } else {
            None
        }
    };
    let first_contact = exchange.sending && exchange.untouched;
    match fault {
        Fault::Transport(TransportErrorKind::Auth) => None,
        Fault::Transport(TransportErrorKind::Connect | TransportErrorKind::Tls)
            if first_contact =>
        {
            Some(Recovery::Resend)
        }
        Fault::Transport(_) | Fault::Malformed(_) | Fault::EndedEarly => follow(),
        Fault::Rejected(e) => {
            let status = e.http_status.unwrap_or(0);
            if exchange.sending {
                let overloaded = status == 503 || status == 429;
                (overloaded && exchange.untouched).then_some(Recovery::Resend)
            } else if is_transient(status) {
                follow()
            } else {
                None
            }
        }
    }
}

/// Whether an error answer with this HTTP status may go away by itself (overload, 5xx).
pub(crate) fn is_transient(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// The attempt being decided: the failed exchange's method, what would be tried next, and when.
pub(crate) struct RetryAttempt<'a> {
    /// The method of the exchange that failed (`SendMessage`, `GetTask`, …).
    pub exchange: &'a str,
    /// What the next attempt does (`resend`, `get_task`, …).
    pub action: &'a str,
    /// Now.
    pub now: Timestamp,
    /// The operation's budget end: no attempt starts at or after it.
    pub deadline: Timestamp,
}

/// The consecutive faults of one operation and the record of every retry decision, reported
/// as `attempts` in the error details when the operation fails.
#[derive(Debug, Default)]
pub(crate) struct Attempts {
    consecutive: u32,
    log: Vec<Value>,
}

impl Attempts {
    /// Decides whether `fault` gets another attempt under `policy`: the delay before it, or
    /// `None` when the policy or the budget is used up. Either way the decision is recorded.
    /// `random` (drawn only when a delay is computed) jitters the delay.
    pub(crate) fn next(
        &mut self,
        policy: &RetryPolicy,
        fault: &Fault,
        attempt: &RetryAttempt<'_>,
        random: impl FnOnce() -> u64,
    ) -> Option<Duration> {
        let number = self.consecutive + 1;
        let record = |next: &str, extra: (&str, Value)| {
            json!({
                "attempt": number,
                "atMs": attempt.now.as_micros() / 1000,
                "exchange": attempt.exchange,
                "fault": fault.reason(),
                "httpStatus": fault.http_status(),
                "next": next,
                extra.0: extra.1,
            })
        };
        let allowed = policy.attempts.min(MAX_ATTEMPTS);
        if number > allowed {
            if allowed > 0 {
                let why = format!("{allowed} consecutive retries used up");
                self.log
                    .push(record("give_up", ("why", Value::String(why))));
            }
            return None;
        }
        let backoff = policy.delay(number, random());
        let delay = fault.retry_after().map_or(backoff, |r| r.max(backoff));
        if attempt.now.saturating_add(delay) >= attempt.deadline {
            let why = format!(
                "a retry in {} ms would not start inside the task budget",
                delay.as_millis()
            );
            self.log
                .push(record("give_up", ("why", Value::String(why))));
            return None;
        }
        self.consecutive = number;
        let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.log
            .push(record(attempt.action, ("delayMs", Value::from(delay_ms))));
        Some(delay)
    }

    /// The number of the attempt last scheduled since the last successful observation.
    pub(crate) fn consecutive(&self) -> u32 {
        self.consecutive
    }

    /// An observation succeeded: the next fault starts counting from one again.
    pub(crate) fn observed(&mut self) {
        self.consecutive = 0;
    }

    /// Adds the record, if any, to a failure's details as `attempts` (an object's member, or
    /// next to the former details as `cause`).
    pub(crate) fn attach_to(&mut self, details: &mut Option<Value>) {
        if self.log.is_empty() {
            return;
        }
        let attempts = Value::Array(std::mem::take(&mut self.log));
        match details {
            Some(Value::Object(map)) => {
                map.insert("attempts".to_owned(), attempts);
            }
            other => {
                let mut map = serde_json::Map::new();
                if let Some(cause) = other.take() {
                    map.insert("cause".to_owned(), cause);
                }
                map.insert("attempts".to_owned(), attempts);
                *other = Some(Value::Object(map));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_stay_in_the_jitter_window() {
        let p = RetryPolicy {
            attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let expected_full = [100u64, 200, 400, 800, 1000, 1000];
        for (i, full) in expected_full.iter().enumerate() {
            let attempt = i as u32 + 1;
            let low = p.delay(attempt, 0);
            let high = p.delay(attempt, u64::MAX - 1);
            assert_eq!(low, Duration::from_millis(full / 2), "attempt {attempt}");
            assert!(high <= Duration::from_millis(*full), "attempt {attempt}");
            assert!(high >= low);
        }
        // A huge attempt number neither overflows nor exceeds the cap.
        assert!(p.delay(u32::MAX, 12345) <= Duration::from_millis(1000));
        // The full window is reachable: random = spread gives exactly the full delay.
        assert_eq!(p.delay(1, 50_000), Duration::from_millis(100));
    }

    #[test]
    fn invalid_policies_are_named() {
        assert_eq!(RetryPolicy::FAIL_FAST.validate(), Ok(()));
        assert_eq!(RetryPolicy::default().validate(), Ok(()));
        let zero = RetryPolicy {
            base_delay: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert_eq!(zero.validate(), Err(RetryPolicyError::ZeroBaseDelay));
        let inverted = RetryPolicy {
            attempts: 1,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(1),
        };
        assert!(matches!(
            inverted.validate(),
            Err(RetryPolicyError::MaxBelowBase { .. })
        ));
        let equal = RetryPolicy {
            attempts: 1,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(1),
        };
        assert_eq!(equal.validate(), Ok(()));
        let many = RetryPolicy {
            attempts: MAX_ATTEMPTS + 1,
            ..RetryPolicy::default()
        };
        assert_eq!(
            many.validate(),
            Err(RetryPolicyError::TooManyAttempts(MAX_ATTEMPTS + 1))
        );
        let most = RetryPolicy {
            attempts: MAX_ATTEMPTS,
            ..RetryPolicy::default()
        };
        assert_eq!(most.validate(), Ok(()));
    }

    #[test]
    fn retry_after_reads_seconds_only() {
        assert_eq!(retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(retry_after("-1"), None);
    }
}
