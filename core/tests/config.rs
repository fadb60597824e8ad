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

#[test]
fn a_negative_history_length_and_a_zero_input_reply_limit_are_named() {
    let mut c = RunConfig {
        history_length: Some(-1),
        ..RunConfig::default()
    };
    assert_eq!(c.validate(), Err(ConfigError::Negative("history_length")));
    assert_eq!(c.validate().unwrap_err().field(), "history_length");
    c.history_length = Some(0);
    assert_eq!(c.validate(), Ok(()));
    c.max_input_replies = Some(0);
    assert_eq!(
        c.validate(),
        Err(ConfigError::ZeroLimit("max_input_replies"))
    );
    c.max_input_replies = Some(1);
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn a_run_is_only_built_from_a_valid_configuration() {
    use std::sync::Arc;
    let wf =
        Arc::new(a2at_core::workflow::ValidatedWorkflow::single_task("s", "alpha", "d").unwrap());
    let agents = Arc::new(a2at_core::agents::AgentDirectory::default());
    let bad = RunConfig {
        task_budget: Duration::ZERO,
        ..RunConfig::default()
    };
    let err =
        a2at_core::Run::try_new(wf.clone(), agents.clone(), bad, Default::default()).unwrap_err();
    assert_eq!(err, ConfigError::ZeroDuration("task_budget"));
    assert!(a2at_core::Run::try_new(wf, agents, RunConfig::default(), Default::default()).is_ok());
}

#[test]
fn extension_settings_are_checked_naming_the_field() {
    use a2at_core::extension::ExtensionConfig;
    assert_eq!(ExtensionConfig::default().validate(), Ok(()));
    type Case = (&'static str, fn(&mut ExtensionConfig));
    let cases: [Case; 4] = [
        ("send_budget", |c| c.send_budget = Duration::ZERO),
        ("poll_interval", |c| c.poll_interval = Duration::ZERO),
        ("cancel_budget", |c| c.cancel_budget = Duration::ZERO),
        ("ack_timeout", |c| c.ack_timeout = Duration::ZERO),
    ];
    for (name, set) in cases {
        let mut c = ExtensionConfig::default();
        set(&mut c);
        assert_eq!(c.validate(), Err(ConfigError::ZeroDuration(name)));
    }
    let never = ExtensionConfig {
        reattach: RetryPolicy::FAIL_FAST,
        ..ExtensionConfig::default()
    };
    assert_eq!(never.validate(), Ok(()), "never reattaching is allowed");
    let tight_loop = ExtensionConfig {
        reattach: RetryPolicy {
            attempts: 2,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        },
        ..ExtensionConfig::default()
    };
    let err = tight_loop.validate().unwrap_err();
    assert_eq!(err, ConfigError::Reattach(RetryPolicyError::ZeroBaseDelay));
    assert_eq!(
        err.field(),
        "reattach",
        "not taken for the send retry policy"
    );
}
