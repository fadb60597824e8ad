//! # a2at-driver
//!
//! The async half of the a2at A2A-T workflow engine that is the same on every runtime: the
//! [`Engine`] and its builders, the run loop, the HTTP/1.1 and HTTP/2 (gRPC) client over hyper,
//! TLS over rustls, credential logins, discovery ([`RegistryClient`], [`PsopClient`]) and the
//! [`ExtensionSender`]. It is written once against the small [`Runtime`] trait (clock and
//! timers, spawn, TCP connect, blocking calls), the way quinn's async crate is written over
//! its `Runtime` trait.
//!
//! Every rule lives in `a2at-core`; this crate decides nothing. The run loop drains the core's
//! outputs, carries each one out concurrently (an HTTP exchange, a host callback, a timer) and
//! feeds every completion back with the time it happened.
//!
//! Hosts do not use this crate directly: they add an adapter (`a2at-tokio` or `a2at-smol`),
//! which implements [`Runtime`] and fixes the generic types here to it, so that
//! `a2at_tokio::Engine` is `a2at_driver::Engine<a2at_tokio::Tokio>`.
//!
//! ## Authorization-T and Notification-T
//!
//! [`Engine::extension_sender`] (or [`ExtensionSender::builder`]) gives an [`ExtensionSender`]
//! with its own transport: [`ExtensionSender::send_authorization`] for one-shot authorizations
//! and [`ExtensionSender::open_notification`] for subscriptions
//! ([`NotificationSubscription`]). They never affect a workflow; listener callbacks run on
//! the runtime's blocking pool ([`Runtime::run_blocking`]), one at a time per subscription.
//! `runtime-tokio/examples/notification.rs` opens a subscription beside a running workflow.
//!
//! ## Cards that change while the engine runs
//!
//! [`Engine::add_card`], [`Engine::replace_card`], [`Engine::upsert_card`],
//! [`Engine::remove_card`] and [`Engine::set_cards`] change an engine's cards while runs go on;
//! every clone of the engine sees the change. A run takes the cards current when it starts and
//! keeps them to its end (endpoint, binding, streaming), as do task calls and an
//! [`ExtensionSender`], which keeps the cards of the engine when it was built. A card that
//! cannot be used (no usable interface, missing members, authentication it requires but the
//! engine cannot set up) never fails [`EngineBuilder::build`] or the change: it is kept as
//! unusable with a [`CardError`] naming the agent and the problem ([`Engine::card_errors`]),
//! and only the runs and task calls that send to that agent are refused, with
//! [`CARD_UNUSABLE`]. JSON cards go through [`card_from_json`], which normalises them first.
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
//! Proxies come from [`EngineBuilder::proxy`] or, by default, from the environment as curl
//! reads it ([`ProxyConfig::from_env`]): HTTP `CONNECT` tunnels for every agent, TLS end to end
//! through them. [`EngineBuilder::request_hook`] ([`RequestHook`]) edits every outgoing request
//! (gateway headers, URI rewrites) after authentication, before the connection is chosen.
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
//! [`Engine::close`] shuts an engine down: nothing new starts (`engine.closed`), task and
//! notification subscriptions close, and runs in flight are drained or cancelled
//! ([`CloseMode`]) within a deadline, with a [`CloseReport`]. Dropping the last clone of the
//! engine closes it without waiting. [`EngineBuilder::on_conversation_closed`] is called once
//! per conversation after its whole send-plus-negotiation cycle.
//!
//! ## Events and progress
//!
//! [`RunBuilder::map_events`] lets the host keep, replace, expand or drop each event (a
//! panicking hook keeps the original). The stream is bounded ([`EngineConfig::event_queue`]):
//! a consumer that holds it and stops reading pauses the run; dropping it releases the run.
//! [`RunHandle::progress`] gives a consistent snapshot between two inputs.
//!
//! ## Task management
//!
//! [`Engine::get_task`], [`Engine::list_tasks`], [`Engine::cancel_task`] and
//! [`Engine::subscribe_to_task`] manage the tasks an agent holds, over the same cards,
//! authentication, TLS and transport as workflow subtasks.
//!
//! ## Durable runs
//!
//! [`RunBuilder::journal`] appends every input of a run to a [`JournalStore`] before what it
//! causes is carried out (write-ahead, one transaction per turn of the run loop);
//! [`Engine::resume`] continues such a run in a new process by replaying its journal. The
//! `sqlite` feature adds `SqliteJournal`, one SQLite file; the `postgres` feature adds
//! `PostgresJournal`, runs shared by several engine processes through leases. See [`journal`].
//!
//! ## Observability
//!
//! Every request carries a W3C `traceparent` of the run's trace (join the host's with
//! [`RunBuilder::traceparent`]); the driver opens `tracing` spans for the run, its steps and
//! subtasks and every exchange ([`telemetry`] lists names and attributes) and counts runs,
//! subtasks, latencies, retries, reattaches, negotiation rounds and dropped events through the
//! `metrics` facade ([`metrics`] lists the names). Neither holds a secret. With the `otel`
//! feature, `otel::layer` exports those spans over OTLP/HTTP with the ids the agents received in
//! `traceparent`.
//!
//! ## Reproducing a run
//!
//! Each run's id seed comes from the OS unless [`EngineConfig::seed`] fixes it; it is logged
//! with `tracing` at the start of the run and available as [`RunHandle::seed`].
//!
//! ## Writing an adapter
//!
//! 1. A zero-sized type implementing [`Runtime`]: `now` and `sleep_until` on the runtime's
//!    clock, `spawn` (detached, keeping the current `tracing` subscriber), `run_blocking` on
//!    the runtime's blocking pool, and `connect` returning a TCP stream with `TCP_NODELAY` set
//!    in the `futures` I/O traits.
//! 2. A type alias per generic public type (`Engine`, `EngineBuilder`, `RunBuilder`,
//!    `HttpClient`, `ExtensionSender`, `ExtensionSenderBuilder`, `NotificationSubscription`,
//!    `RegistryClient`, `RegistryClientBuilder`, `PsopClient`, `PsopClientBuilder`) and a
//!    re-export of everything else, so that every adapter offers the same names.
//! 3. An instantiation of the shared behaviour suites of `a2at-tests` (a few lines per suite).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod adapter;
mod auth;
mod cards;
mod completions;
mod config;
mod discovery;
#[cfg(test)]
mod dispatch_tests;
mod engine;
mod error;
mod events;
mod extension;
#[cfg(test)]
mod footprint_tests;
mod http;
mod http2;
mod hyper_io;
pub mod journal;
#[cfg(feature = "postgres")]
mod journal_postgres;
#[cfg(feature = "sqlite")]
mod journal_sqlite;
mod lifecycle;
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
mod pool;
mod proxy;
mod run_loop;
mod runtime;
mod tasks;
pub mod telemetry;
#[cfg(test)]
mod test_runtime;
mod tls;
mod transport;
#[cfg(test)]
mod transport_tests;
#[cfg(test)]
mod waiter_tests;

pub use a2at_core;

pub use a2at_core::driver_support::{BuiltControlPoint, ControlPointBuilder, EventEnvelope};
pub use cards::{CARD_UNUSABLE, CardError, CardErrorKind, card_from_json};
pub use config::{DEFAULT_LOGIN_TIMEOUT, EnvFile, SeedSource};
pub use discovery::{
    DEFAULT_DISCOVERY_DEADLINE, DEFAULT_MAX_DISCOVERY_BODY_BYTES, DiscoveryError, MAX_REDIRECTS,
    PsopClient, PsopClientBuilder, RegistryClient, RegistryClientBuilder,
};
pub use engine::{
    CREDENTIAL_KEY_ENV, Engine, EngineBuilder, EngineConfig, RunBuilder, load_credentials,
};
pub use error::EngineError;
pub use events::{
    ConversationClosed, ConversationHook, EventHook, EventSink, EventStream, OnFinish,
    OnFinishError, RunHandle,
};
pub use extension::{
    ExtensionError, ExtensionSender, ExtensionSenderBuilder, ExtensionSenderConfig, Heartbeat,
    NotificationSubscription, Reattachment, SubscriptionCompletion,
};
pub use http::{HttpClient, RequestHook};
pub use hyper_io::HyperIo;
pub use journal::{JOURNAL_FAILED, JournalError, JournalStore, RunSummary, StoredRun};
#[cfg(feature = "postgres")]
pub use journal_postgres::{PostgresJournal, PostgresJournalBuilder, redact_url};
#[cfg(feature = "sqlite")]
pub use journal_sqlite::{Durability, SqliteJournal};
pub use lifecycle::{CloseMode, CloseReport, ENGINE_CLOSED};
pub use pool::PoolConfig;
pub use proxy::ProxyConfig;
pub use runtime::{BoxFuture, Runtime};
pub use tasks::TaskSubscription;
pub use tls::TlsConfig;
pub use transport::AuthHook;
