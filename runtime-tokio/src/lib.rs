//! # a2at-tokio
//!
//! The tokio runtime of the a2at A2A-T workflow engine. It carries out what `a2at-core` asks —
//! HTTP exchanges, timers, host callbacks, events — and decides nothing itself: no retries, no
//! timeouts of its own, no id generation and no protocol parsing live here.
//!
//! ## Using it
//!
//! 1. Build one [`Engine`] from the AgentCards of the agents your workflows address and an
//!    [`EngineConfig`] (budgets, concurrency limits, seed source) with [`Engine::builder`]. The
//!    engine is cheap to clone and is shared by any number of concurrent runs.
//! 2. Implement [`ControlPoint`](a2at_core::host::ControlPoint) for your host, or register
//!    closures with [`ControlPointBuilder`].
//! 3. Call [`Engine::execute`] for the [`ExecutionResult`](a2at_core::ExecutionResult), or
//!    [`Engine::run`] / [`Engine::start`] for a [`RunHandle`] that streams
//!    [`EventEnvelope`]s as they happen and can cancel the run.
//!
//! ```no_run
//! use std::sync::Arc;
//! use a2at_tokio::{ControlPointBuilder, Engine};
//! use a2at_tokio::core::host::MessageContent;
//! use a2at_tokio::core::run::RunStart;
//! use a2at_tokio::core::workflow::parse_and_validate;
//!
//! # async fn demo(cards: Vec<a2at_tokio::core::a2a::AgentCard>) {
//! let engine = Engine::builder(cards).build().expect("valid cards");
//! let host = ControlPointBuilder::new()
//!     .on_task(|req| async move { Ok(MessageContent::text(req.instruction)) })
//!     .build();
//! let workflow = parse_and_validate(r#"{"steps": [{"name": "ask",
//!     "subtasks": [{"agent": "alpha", "description": "say hello"}]}]}"#).unwrap();
//! let result = engine.execute(workflow, RunStart::default(), Arc::new(host)).await;
//! println!("success: {}", result.success);
//! # }
//! ```
//!
//! ## Authorization-T and Notification-T
//!
//! [`Engine::extension_sender`] (or [`ExtensionSender::builder`]) gives an [`ExtensionSender`]
//! with its own transport: [`ExtensionSender::send_authorization`] for one-shot authorizations
//! and [`ExtensionSender::open_notification`] for subscriptions
//! ([`NotificationSubscription`]). They never affect a workflow; see `examples/notification.rs`.
//!
//! ## Discovery
//!
//! [`RegistryClient`] fetches and registers AgentCards at a registry, and [`PsopClient`] (the
//! `LoadPsop` helper) loads and searches workflows in an orchestration center. Each owns its
//! HTTP client and TLS policy, has one deadline per call for the whole response (30 s by
//! default) and logs access tokens only as `access_token=<anonymous>`.
//!
//! ## Security configuration
//!
//! Credentials come from [`EngineBuilder::credentials_file`] or
//! [`EngineBuilder::credentials`] (never both), their `enc:` key from
//! [`EngineBuilder::credential_key`], else `A2AT_CRED_KEY`, else a host-loaded [`EnvFile`]; TLS
//! from [`TlsConfig`]; the protocol log knobs from `WORKFLOW_ENGINE_PROTOCOL_*` with builder
//! overrides. Nothing turns redaction off.
//!
//! ## Lifecycle and cancellation
//!
//! Events arrive in the core's order (`start` → … → `complete` | `error`); after the run
//! finished, the runtime calls the `on_finish` hook with the result and the events collected so
//! far, then emits `close`. Dropping the future of [`Engine::execute`] (or the [`RunHandle`])
//! cancels the run: the driver keeps running in its own task until the core finished its
//! cleanup (`CancelTask` for every known non-final remote task). [`RunHandle::cancel`] does the
//! same without giving up the result.
//!
//! ## Reproducing a run
//!
//! Each run's id seed comes from the OS unless [`EngineConfig::seed`] fixes it; it is logged
//! with `tracing` at the start of the run and available as [`RunHandle::seed`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod http;
mod rt;
/// The engine, driver loop, run handle, exchange task and extension sender, shared with
/// `a2at-smol`.
mod shared;

pub use a2at_core as core;
pub use a2at_core::RetryPolicy;

pub use a2at_core::driver_support::{BuiltControlPoint, ControlPointBuilder, EventEnvelope};
pub use shared::config::EnvFile;
pub use shared::discovery::{
    DEFAULT_DISCOVERY_DEADLINE, DiscoveryError, MAX_REDIRECTS, PsopClient, PsopClientBuilder,
    RegistryClient, RegistryClientBuilder,
};
pub use shared::engine::{
    CREDENTIAL_KEY_ENV, DEFAULT_LOGIN_TIMEOUT, Engine, EngineBuilder, EngineConfig, EngineError,
    RunBuilder, SeedSource, load_credentials,
};
pub use shared::events::{EventSink, EventStream, OnFinish, OnFinishError, RunHandle};
pub use shared::extension::{
    ExtensionError, ExtensionSender, ExtensionSenderBuilder, ExtensionSenderConfig, Heartbeat,
    NotificationSubscription, Reattachment, SubscriptionCompletion,
};
pub use shared::tls::TlsConfig;
pub use shared::transport::{AuthHook, HttpClient};
