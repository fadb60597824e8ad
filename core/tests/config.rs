//! Run settings are checked at the door: every unusable value is named.

use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::a2a::DecodeLimits;
use a2at_core::retry::RetryPolicyError;
use a2at_core::run::{ConfigError, RunConfig};

#[test]
fn the_defaults_are_valid() {
    assert_eq!(RunConfig::default().validate(), Ok(()));
}

#[test]
fn each_zero_duration_is_named() {
    type Case = (&'static str, fn(&mut RunConfig));
    let cases: [Case; 4] = [
        ("task_budget", |c| c.task_budget = Duration::ZERO),
        ("callback_budget", |c| c.callback_budget = Duration::ZERO),
        ("poll_interval", |c| c.poll_interval = Duration::ZERO),
        ("cancel_budget", |c| c.cancel_budget = Duration::ZERO),
    ];
    for (name, set) in cases {
        let mut c = RunConfig::default();
        set(&mut c);
        assert_eq!(c.validate(), Err(ConfigError::ZeroDuration(name)));
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            format!("{name} must be positive")
        );
    }
}

#[test]
fn each_zero_limit_is_named() {
    let mut c = RunConfig {
        max_negotiation_exchanges: 0,
        ..RunConfig::default()
    };
    assert_eq!(
        c.validate(),
        Err(ConfigError::ZeroLimit("max_negotiation_exchanges"))
    );
    c.max_negotiation_exchanges = 1;
    assert_eq!(c.validate(), Ok(()));
    c.decode_limits = DecodeLimits {
        max_event_bytes: 0,
        ..DecodeLimits::default()
    };
    assert_eq!(
        c.validate(),
        Err(ConfigError::ZeroLimit("decode_limits.max_event_bytes"))
    );
    c.decode_limits = DecodeLimits {
        max_body_bytes: 0,
        ..DecodeLimits::default()
    };
    assert_eq!(
        c.validate(),
        Err(ConfigError::ZeroLimit("decode_limits.max_body_bytes"))
    );
}

#[test]
fn an_unusable_retry_policy_is_reported() {
    let c = RunConfig {
        retry: RetryPolicy {
            attempts: 2,
            base_delay: Duration::ZERO,
            max_delay: Duration::from_secs(1),
        },
        ..RunConfig::default()
    };
    assert_eq!(
        c.validate(),
        Err(ConfigError::Retry(RetryPolicyError::ZeroBaseDelay))
    );
    let off = RunConfig {
        retry: RetryPolicy::FAIL_FAST,
        ..RunConfig::default()
    };
    assert_eq!(off.validate(), Ok(()));
}
