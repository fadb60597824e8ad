//! The [`ExtensionSender`]: Authorization-T and Notification-T beside (never inside) workflows.
//!
//! Every protocol decision lives in the core machines
//! ([`Authorization`], [`Notification`]); this module only carries out their outputs, keeps the
//! clock and hands results to the host.
//!
//! ## Independence
//!
//! The sender owns its own transport: its own HTTP connection pool (unless you give it a client)
//! and its own concurrency limits, so a long-lived notification stream never takes a slot a
//! workflow needs. Each operation has its own machine, driver task and fresh `contextId`.
//! Outcomes go only to the caller: never to a `ControlPoint`, a workflow's events or its result.
//!
//! ## Subscriptions
//!
//! [`ExtensionSender::open_notification`] returns the handle at once: the machine is built and
//! the handle registered before any I/O. The driver runs in its own task; the listener
//! is fed by its own unbounded queue, and each call runs through the runtime's blocking-call
//! facility ([`Runtime::run_blocking`]), one call at a time per subscription, so a slow (even
//! blocking) listener delays only its own subscription and no thread is kept per
//! subscription. Listener calls are made in order; a panicking listener is logged and the next
//! event is still delivered.
//!
//! Reattachments (`SubscribeToTask` after a dropped stream) are told to the optional
//! `on_reattach` callback of [`ExtensionSender::open_notification_with_reattach`], in order with
//! the messages, and counted by [`NotificationSubscription::reattachments`].
//!
//! Dropping every handle does **not** close a subscription: call
//! [`NotificationSubscription::close`].
//!
//! Tasks, clock, timers and blocking calls come from the [`Runtime`]; channels and abort
//! handles from `futures`.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use a2at_core::a2a::{AgentCard, Binding, ReceivedMessage};
use a2at_core::agents::AgentDirectory;
use a2at_core::extension::{
    Authorization, AuthorizationOutput, AuthorizationResult, ExtensionConfig, ExtensionFailure,
    Notification, NotificationOutput, PreconditionError, SubscriptionEnd,
};
use a2at_core::host::MessageContent;
use a2at_core::io::{ApiMisuse, HttpRequest, Input};
use a2at_core::retry::RetryPolicy;
use a2at_core::{OpId, Timestamp};
use futures::StreamExt;
use futures::channel::{mpsc, oneshot};
use futures::future::AbortHandle;

use crate::auth::Authenticator;
use crate::config::{DEFAULT_LOGIN_TIMEOUT, EnvLookup, SeedSource, protocol_log_config};
use crate::engine::Engine;
use crate::engine::own_client;
use crate::error::EngineError;
use crate::http::HttpClient;
use crate::http::RequestHook;
use crate::lifecycle::Registry;
use crate::pool::PoolConfig;
use crate::proxy::ProxyConfig;
use crate::run_loop::{Waiter, spawn_abortable};
use crate::runtime::Runtime;
use crate::tls::TlsConfig;
use crate::transport::{AuthHook, Limits, Transport};

/// Completions waiting for a driver; exchange tasks wait when it is full.
const COMPLETION_QUEUE: usize = 256;

/// Why an extension operation failed, as seen by the host.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// The operation could not start: unknown agent, content not activating the extension, or a
    /// card not declaring it. Nothing was sent.
    #[error(transparent)]
    Precondition(#[from] PreconditionError),
    /// The core decided a failure (ACK timeout, closed before acknowledgement, first state
    /// FAILED/CANCELED/REJECTED, protocol error, reattachment exhausted, …).
    #[error("{0}")]
    Failed(ExtensionFailure),
    /// The driver task stopped without an answer (the runtime is shutting down).
    #[error("the extension driver stopped before answering")]
    RuntimeStopped,
}

impl ExtensionError {
    /// The stable code (`extension.*`, `a2a.*`, `remote.*`, `workflow.invalid_content`, …).
    pub fn code(&self) -> &str {
        match self {
            ExtensionError::Precondition(p) => p.code(),
            ExtensionError::Failed(f) => &f.code,
            ExtensionError::RuntimeStopped => "extension.runtime_stopped",
        }
    }

    /// Whether this is the "closed before acknowledgement" failure.
    pub fn is_closed_before_acknowledgement(&self) -> bool {
        self.code() == a2at_core::extension::codes::CLOSED_BEFORE_ACK
    }
}

/// Settings of an [`ExtensionSender`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExtensionSenderConfig {
    /// Authorization: one budget for send and polling (default 600 s).
    pub send_budget: Duration,
    /// Authorization: delay between `GetTask` observations (default 250 ms).
    pub poll_interval: Duration,
    /// Authorization: budget of the `CancelTask` cleanup (default 5 s).
    pub cancel_budget: Duration,
    /// Notification: wait for the first acknowledgement (default 300 s).
    pub ack_timeout: Duration,
    /// Notification: how a broken or ended stream of a task that is not final is found again
    /// with `SubscribeToTask`: attempts in a row and the jittered doubling backoff between
    /// them (default: 3 attempts, 1 s doubling to 4 s).
    pub reattach: RetryPolicy,
    /// Authorization: how faults of the network or of an overloaded agent are retried, with
    /// the rules of workflow subtasks (default: five consecutive attempts; built from an
    /// engine, the engine's policy).
    pub retry: RetryPolicy,
    /// The binding to prefer when a card offers several.
    pub preferred_binding: Option<Binding>,
    /// Exchanges in flight at once per agent (default 64; a subscription holds one for its
    /// whole life).
    pub max_in_flight_per_agent: usize,
    /// Exchanges in flight at once overall (default 256).
    pub max_in_flight: usize,
    /// Where each operation's id seed comes from (default: the OS).
    pub seed: SeedSource,
}

impl Default for ExtensionSenderConfig {
    fn default() -> Self {
        let core = ExtensionConfig::default();
        ExtensionSenderConfig {
            send_budget: core.send_budget,
            poll_interval: core.poll_interval,
            cancel_budget: core.cancel_budget,
            ack_timeout: core.ack_timeout,
            reattach: core.reattach,
            retry: core.retry,
            preferred_binding: None,
            max_in_flight_per_agent: 64,
            max_in_flight: 256,
            seed: SeedSource::Os,
        }
    }
}

/// Builds an [`ExtensionSender`]; from [`ExtensionSender::builder`] or
/// [`Engine::extension_sender_builder`].
pub struct ExtensionSenderBuilder<R> {
    cards: Option<Vec<AgentCard>>,
    directory: Option<Arc<AgentDirectory>>,
    config: ExtensionSenderConfig,
    http: Option<HttpClient<R>>,
    auth: Option<AuthHook>,
    credentials: Option<a2at_core::auth::CredentialsConfig>,
    tls: Option<TlsConfig>,
    proxy: Option<ProxyConfig>,
    request_hook: Option<RequestHook>,
    login_timeout: Duration,
    log: Option<a2at_core::protolog::LogConfig>,
    registry: Option<Arc<Registry>>,
}

impl<R> std::fmt::Debug for ExtensionSenderBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionSenderBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> ExtensionSenderBuilder<R> {
    /// Replaces all settings.
    pub fn config(mut self, config: ExtensionSenderConfig) -> Self {
        self.config = config;
        self
    }

    /// Built-in credential authentication, as [`EngineBuilder::credentials`](crate::EngineBuilder::credentials).
    pub fn credentials(mut self, credentials: a2at_core::auth::CredentialsConfig) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// See [`ExtensionSenderConfig::send_budget`].
    pub fn send_budget(mut self, d: Duration) -> Self {
        self.config.send_budget = d;
        self
    }

    /// See [`ExtensionSenderConfig::poll_interval`].
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.config.poll_interval = d;
        self
    }

    /// See [`ExtensionSenderConfig::cancel_budget`].
    pub fn cancel_budget(mut self, d: Duration) -> Self {
        self.config.cancel_budget = d;
        self
    }

    /// See [`ExtensionSenderConfig::ack_timeout`].
    pub fn ack_timeout(mut self, d: Duration) -> Self {
        self.config.ack_timeout = d;
        self
    }

    /// See [`ExtensionSenderConfig::reattach`].
    pub fn reattach(mut self, policy: RetryPolicy) -> Self {
        self.config.reattach = policy;
        self
    }

    /// See [`ExtensionSenderConfig::retry`].
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.config.retry = policy;
        self
    }

    /// See [`ExtensionSenderConfig::preferred_binding`] (ignored when built from an engine,
    /// whose directory already chose).
    pub fn preferred_binding(mut self, binding: Binding) -> Self {
        self.config.preferred_binding = Some(binding);
        self
    }

    /// See [`ExtensionSenderConfig::seed`].
    pub fn seed(mut self, seed: SeedSource) -> Self {
        self.config.seed = seed;
        self
    }

    /// Uses this HTTP client instead of a new pool of its own.
    pub fn http_client(mut self, client: HttpClient<R>) -> Self {
        self.http = Some(client);
        self
    }

    /// Adds headers (authentication) to every request; see [`AuthHook`].
    pub fn auth_headers(mut self, hook: AuthHook) -> Self {
        self.auth = Some(hook);
        self
    }

    /// The TLS policy of the sender's own HTTP client (ignored with
    /// [`ExtensionSenderBuilder::http_client`]); built from an engine, the engine's policy.
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The proxy settings of the sender's own HTTP client, as
    /// [`EngineBuilder::proxy`](crate::EngineBuilder::proxy); built from an engine, the
    /// engine's.
    pub fn proxy(mut self, proxy: ProxyConfig) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// Edits every request of the sender's own HTTP client, as
    /// [`EngineBuilder::request_hook`](crate::EngineBuilder::request_hook); built from an
    /// engine, the engine's.
    pub fn request_hook(mut self, hook: RequestHook) -> Self {
        self.request_hook = Some(hook);
        self
    }

    /// Deadline of one credential login (default 30 s; built from an engine, the engine's).
    pub fn login_timeout(mut self, timeout: Duration) -> Self {
        self.login_timeout = timeout;
        self
    }

    /// Validates the cards and settings and builds the sender.
    pub fn build(self) -> Result<ExtensionSender<R>, EngineError> {
        let c = &self.config;
        if c.max_in_flight == 0 || c.max_in_flight_per_agent == 0 {
            return Err(EngineError::Config("in-flight limits must be at least 1"));
        }
        let directory = match (self.directory, self.cards) {
            (Some(d), _) => d,
            (None, cards) => Arc::new(AgentDirectory::new(
                cards.unwrap_or_default(),
                c.preferred_binding,
            )?),
        };
        if self.login_timeout.is_zero() {
            return Err(EngineError::Config("login_timeout must be positive"));
        }
        ExtensionConfig {
            send_budget: c.send_budget,
            poll_interval: c.poll_interval,
            cancel_budget: c.cancel_budget,
            ack_timeout: c.ack_timeout,
            reattach: c.reattach,
            retry: c.retry,
            ..ExtensionConfig::default()
        }
        .validate()?;
        let log = match self.log {
            Some(log) => log,
            None => protocol_log_config(&EnvLookup::process(), None)?,
        };
        let client = own_client(
            self.http,
            &self.tls.unwrap_or_default(),
            self.proxy,
            self.request_hook,
            None,
            PoolConfig::default().max_idle_per_origin(c.max_in_flight),
        )?;
        let limits = Limits::new(
            directory.names(),
            c.max_in_flight_per_agent,
            c.max_in_flight,
        );
        let credentials = Authenticator::new(
            &directory,
            self.credentials.as_ref(),
            self.auth.is_some(),
            self.login_timeout,
        );
        Ok(ExtensionSender {
            inner: Arc::new(SenderInner {
                directory,
                config: self.config,
                transport: Arc::new(Transport {
                    credentials,
                    client,
                    limits,
                    auth: self.auth,
                    log,
                }),
                operations: AtomicU64::new(0),
                registry: self.registry,
            }),
        })
    }
}

struct SenderInner<R> {
    directory: Arc<AgentDirectory>,
    config: ExtensionSenderConfig,
    transport: Arc<Transport<R>>,
    operations: AtomicU64,
    /// The registry of the engine this sender was built from: closing the engine closes its
    /// subscriptions.
    registry: Option<Arc<Registry>>,
}

/// Sends Authorization-T and opens Notification-T subscriptions, independently of any workflow.
/// Cheap to clone; usable while workflows run.
pub struct ExtensionSender<R> {
    inner: Arc<SenderInner<R>>,
}

impl<R> Clone for ExtensionSender<R> {
    fn clone(&self) -> Self {
        ExtensionSender {
            inner: self.inner.clone(),
        }
    }
}

impl<R> std::fmt::Debug for ExtensionSender<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionSender")
            .field("agents", &self.inner.directory.len())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Engine<R> {
    /// A builder for an [`ExtensionSender`] over this engine's validated cards and
    /// authentication hook, with budgets taken from the engine (send budget = task budget).
    /// The sender gets its own transport and keeps the engine's usable cards of the moment it
    /// is built: cards changed on the engine afterwards reach only senders built afterwards.
    /// Its Notification-T subscriptions belong to the
    /// engine's lifecycle: [`Engine::close`] (or dropping the engine) closes them, and a
    /// subscription opened after that closes at once.
    pub fn extension_sender_builder(&self) -> ExtensionSenderBuilder<R> {
        let parts = self.extension_parts();
        let c = self.config();
        ExtensionSenderBuilder {
            cards: None,
            directory: Some(parts.directory),
            config: ExtensionSenderConfig {
                send_budget: c.run.task_budget,
                poll_interval: c.run.poll_interval,
                cancel_budget: c.run.cancel_budget,
                retry: c.run.retry,
                preferred_binding: c.preferred_binding,
                seed: c.seed,
                ..ExtensionSenderConfig::default()
            },
            http: None,
            auth: parts.auth,
            credentials: parts.credentials,
            tls: Some(parts.tls),
            proxy: Some(self.http_client().proxy().clone()),
            request_hook: self.http_client().request_hook(),
            login_timeout: c.login_timeout,
            log: Some(parts.log),
            registry: Some(self.registry()),
        }
    }

    /// An [`ExtensionSender`] with its own transport over this engine's cards, authentication
    /// hook and budgets; see [`Engine::extension_sender_builder`].
    pub fn extension_sender(&self) -> Result<ExtensionSender<R>, EngineError> {
        self.extension_sender_builder().build()
    }
}

impl<R: Runtime> ExtensionSender<R> {
    /// Starts building a sender for these agents.
    pub fn builder(cards: Vec<AgentCard>) -> ExtensionSenderBuilder<R> {
        ExtensionSenderBuilder {
            cards: Some(cards),
            directory: None,
            config: ExtensionSenderConfig::default(),
            http: None,
            auth: None,
            credentials: None,
            tls: None,
            proxy: None,
            request_hook: None,
            login_timeout: DEFAULT_LOGIN_TIMEOUT,
            log: None,
            registry: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &ExtensionSenderConfig {
        &self.inner.config
    }

    /// The sender's own HTTP client (e.g. to read [`HttpClient::requests_sent`]).
    pub fn http_client(&self) -> &HttpClient<R> {
        &self.inner.transport.client
    }

    fn core_config(&self) -> ExtensionConfig {
        let c = &self.inner.config;
        let seed = match c.seed {
            SeedSource::Fixed(seed) => seed,
            SeedSource::Os => {
                let mut hasher = RandomState::new().build_hasher();
                hasher.write_u64(self.inner.operations.fetch_add(1, Ordering::Relaxed));
                hasher.finish()
            }
        };
        ExtensionConfig {
            seed,
            send_budget: c.send_budget,
            poll_interval: c.poll_interval,
            cancel_budget: c.cancel_budget,
            ack_timeout: c.ack_timeout,
            reattach: c.reattach,
            retry: c.retry,
            ..ExtensionConfig::default()
        }
    }

    /// Sends one Authorization-T message and waits for its independent result.
    ///
    /// `Err` only when nothing could be sent or the runtime stopped; every remote
    /// outcome, success or failure, is an [`AuthorizationResult`] (check `success` and
    /// `failure_code`). Dropping the future gives the authorization up; a known non-final
    /// remote task is then cancelled in the background.
    pub async fn send_authorization(
        &self,
        agent: &str,
        content: MessageContent,
    ) -> Result<AuthorizationResult, ExtensionError> {
        let machine =
            Authorization::new(&self.inner.directory, agent, &content, self.core_config())?;
        let context_id = machine.context_id().to_owned();
        tracing::debug!(agent, %context_id, "authorization started");
        // Dropping `_close` (this future) cancels the machine.
        let (_close, close_rx) = oneshot::channel::<()>();
        let (result_tx, result_rx) = oneshot::channel();
        let mut result_tx = Some(result_tx);
        let transport = self.inner.transport.clone();
        crate::runtime::spawn::<R>(drive(
            AuthMachine(machine),
            transport,
            close_rx,
            move |result| {
                if let Some(tx) = result_tx.take() {
                    let _ = tx.send(result);
                }
            },
        ));
        result_rx.await.map_err(|_| ExtensionError::RuntimeStopped)
    }

    /// Opens a Notification-T subscription and returns its handle at once: the handle is
    /// registered before any I/O, so the listener may call [`NotificationSubscription::close`]
    /// from its first call. `listener` gets every event's complete [`ReceivedMessage`], in
    /// order, one call at a time, through the runtime's blocking-call facility.
    ///
    /// `Err` only for the preconditions; nothing is sent then. Must be called where the
    /// runtime can spawn tasks (with `a2at-tokio`, inside a tokio runtime).
    pub fn open_notification<L>(
        &self,
        agent: &str,
        content: MessageContent,
        listener: L,
    ) -> Result<NotificationSubscription<R>, ExtensionError>
    where
        L: Fn(&NotificationSubscription<R>, ReceivedMessage) + Send + Sync + 'static,
    {
        self.open(agent, content, Arc::new(listener), None)
    }

    /// Like [`ExtensionSender::open_notification`], also telling `on_reattach` (in order with
    /// the messages) each time a dropped stream was re-established with `SubscribeToTask`.
    pub fn open_notification_with_reattach<L, A>(
        &self,
        agent: &str,
        content: MessageContent,
        listener: L,
        on_reattach: A,
    ) -> Result<NotificationSubscription<R>, ExtensionError>
    where
        L: Fn(&NotificationSubscription<R>, ReceivedMessage) + Send + Sync + 'static,
        A: Fn(&NotificationSubscription<R>, Reattachment) + Send + Sync + 'static,
    {
        self.open(
            agent,
            content,
            Arc::new(listener),
            Some(Arc::new(on_reattach)),
        )
    }

    fn open(
        &self,
        agent: &str,
        content: MessageContent,
        listener: Listener<R>,
        on_reattach: Option<ReattachListener<R>>,
    ) -> Result<NotificationSubscription<R>, ExtensionError> {
        let machine =
            Notification::new(&self.inner.directory, agent, &content, self.core_config())?;
        let (close_tx, close_rx) = oneshot::channel::<()>();
        let handle = NotificationSubscription {
            shared: Arc::new(Shared {
                agent: machine.agent_name().to_owned(),
                context_id: machine.context_id().to_owned(),
                opened_at: R::now(),
                live: Mutex::new(Live {
                    last_event_at: None,
                    event_count: 0,
                    active: true,
                    drained: false,
                    reattachments: 0,
                }),
                close: Mutex::new(Some(close_tx)),
                ack: Signal::new(),
                done: Signal::new(),
            }),
            runtime: PhantomData,
        };
        tracing::debug!(agent, context_id = %handle.shared.context_id, "notification opened");
        let (queue_tx, mut queue_rx) = mpsc::unbounded::<Item>();
        let for_listener = handle.clone();
        // One call at a time, awaited before the next: the order of events is kept, and only
        // this subscription waits for a slow listener.
        crate::runtime::spawn::<R>(async move {
            while let Some(item) = queue_rx.next().await {
                let listener = listener.clone();
                let on_reattach = on_reattach.clone();
                let sub = for_listener.clone();
                // The listener's logs go where this subscription's logs go.
                let dispatch = tracing::dispatcher::get_default(Clone::clone);
                R::run_blocking(move || {
                    let _logs = tracing::dispatcher::set_default(&dispatch);
                    let call = AssertUnwindSafe(|| match item {
                        Item::Message(m) => listener(&sub, *m),
                        Item::Reattached(r) => {
                            if let Some(cb) = &on_reattach {
                                cb(&sub, r);
                            }
                        }
                    });
                    if std::panic::catch_unwind(call).is_err() {
                        tracing::warn!(
                            agent = %sub.shared.agent,
                            "notification listener panicked; ignored"
                        );
                    }
                })
                .await;
            }
            for_listener.shared.live().drained = true;
            // `completion()` waits for `drained` too: wake it.
            for_listener.shared.done.notify();
        });
        let shared = handle.shared.clone();
        let transport = self.inner.transport.clone();
        let ticket = match &self.inner.registry {
            None => None,
            Some(registry) => {
                let closing = handle.clone();
                let ticket = registry.open_subscription(move || closing.close());
                if ticket.is_none() {
                    // The engine is closed: this subscription ends at once.
                    handle.close();
                }
                ticket
            }
        };
        crate::runtime::spawn::<R>(async move {
            let _ticket = ticket;
            let tell_shared = shared.clone();
            drive(NotiMachine(machine), transport, close_rx, move |out| {
                tell_shared.on_output(out, R::now(), &queue_tx);
            })
            .await;
            // The queue's sender went with the driver: the listener drains what is left.
            shared.finish();
        });
        Ok(handle)
    }
}

type Listener<R> = Arc<dyn Fn(&NotificationSubscription<R>, ReceivedMessage) + Send + Sync>;
type ReattachListener<R> = Arc<dyn Fn(&NotificationSubscription<R>, Reattachment) + Send + Sync>;

/// A dropped stream was re-established with `SubscribeToTask`; events in between may be lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reattachment {
    /// Which attempt in a row succeeded (1-based).
    pub attempt: u32,
    /// The remote task re-subscribed to.
    pub task_id: String,
}

/// How a subscription ended without failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionCompletion {
    /// The host called [`NotificationSubscription::close`].
    Closed,
    /// The agent ended the stream (with the task terminal), or a non-streaming agent's single
    /// answer was read.
    EndedByAgent,
}

/// Liveness of a subscription when it was taken, on the runtime's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// When the subscription was opened.
    pub opened_at: Instant,
    /// When the latest event arrived.
    pub last_event_at: Option<Instant>,
    /// Events received (every delivered event counts).
    pub event_count: u64,
    /// Whether the stream is still being driven.
    pub active: bool,
    /// When this heartbeat was taken.
    pub taken_at: Instant,
}

impl Heartbeat {
    /// Active, and an event (or the opening) happened within `max_idle` before the heartbeat
    /// was taken.
    pub fn is_healthy(&self, max_idle: Duration) -> bool {
        let since = self.last_event_at.unwrap_or(self.opened_at);
        self.active && self.taken_at.saturating_duration_since(since) <= max_idle
    }
}

enum Item {
    Message(Box<ReceivedMessage>),
    Reattached(Reattachment),
}

struct Live {
    last_event_at: Option<Instant>,
    event_count: u64,
    active: bool,
    /// The listener task handed out everything and stopped.
    drained: bool,
    reattachments: u32,
}

struct Shared {
    agent: String,
    context_id: String,
    opened_at: Instant,
    live: Mutex<Live>,
    /// Taken (and sent) by the first [`NotificationSubscription::close`].
    close: Mutex<Option<oneshot::Sender<()>>>,
    ack: Signal<Result<(), ExtensionError>>,
    done: Signal<Result<SubscriptionCompletion, ExtensionError>>,
}

/// A value the driver sets (and a condition it changes) while any number of handles wait for
/// it: the runtime-agnostic stand-in for a watch channel.
struct Signal<T> {
    state: Mutex<SignalState<T>>,
}

struct SignalState<T> {
    value: Option<T>,
    wakers: Vec<Waker>,
}

impl<T: Clone> Signal<T> {
    fn new() -> Self {
        Signal {
            state: Mutex::new(SignalState {
                value: None,
                wakers: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SignalState<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the value unless one is set already.
    fn set_first(&self, value: T) {
        let mut state = self.lock();
        if state.value.is_none() {
            state.value = Some(value);
        }
        Self::wake(state);
    }

    /// Sets the value, replacing any.
    fn replace(&self, value: T) {
        let mut state = self.lock();
        state.value = Some(value);
        Self::wake(state);
    }

    /// Wakes every waiter to re-check its condition.
    fn notify(&self) {
        Self::wake(self.lock());
    }

    fn wake(mut state: MutexGuard<'_, SignalState<T>>) {
        let wakers = std::mem::take(&mut state.wakers);
        drop(state);
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Waits until `ready` holds for the value (checked under the signal's lock, so a change
    /// followed by [`notify`](Self::notify) is never missed), and returns the value then.
    async fn wait(&self, ready: impl Fn(&Option<T>) -> bool) -> Option<T> {
        std::future::poll_fn(|cx| {
            let mut state = self.lock();
            if ready(&state.value) {
                return Poll::Ready(state.value.clone());
            }
            if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                state.wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}

impl Shared {
    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one thing the machine told; `now` is the runtime's clock.
    fn on_output(&self, out: Told, now: Instant, queue: &mpsc::UnboundedSender<Item>) {
        match out {
            Told::Acknowledged(result) => {
                self.ack.set_first(result.map_err(ExtensionError::Failed));
            }
            Told::Delivered(message) => {
                {
                    let mut live = self.live();
                    live.event_count += 1;
                    live.last_event_at = Some(now);
                }
                let _ = queue.unbounded_send(Item::Message(message));
            }
            Told::Reattached(r) => {
                crate::metrics::reattach();
                self.live().reattachments += 1;
                let _ = queue.unbounded_send(Item::Reattached(r));
            }
            Told::Ended(end) => {
                let outcome = match end {
                    SubscriptionEnd::Closed => Ok(SubscriptionCompletion::Closed),
                    SubscriptionEnd::Completed => Ok(SubscriptionCompletion::EndedByAgent),
                    SubscriptionEnd::Failed(f) => Err(ExtensionError::Failed(f)),
                };
                self.done.replace(outcome);
            }
        }
    }

    /// The driver exited: the stream is gone.
    fn finish(&self) {
        self.live().active = false;
        self.ack.set_first(Err(ExtensionError::RuntimeStopped));
        // `completion()` waits for `active == false` too: this wakes it.
        self.done.set_first(Err(ExtensionError::RuntimeStopped));
    }

    /// The stream exited and the listener was handed every event.
    fn settled(&self) -> bool {
        let live = self.live();
        !live.active && live.drained
    }
}

/// The handle of one Notification-T subscription. Cheap to clone; every clone is the same
/// subscription.
pub struct NotificationSubscription<R> {
    shared: Arc<Shared>,
    runtime: PhantomData<fn() -> R>,
}

impl<R> Clone for NotificationSubscription<R> {
    fn clone(&self) -> Self {
        NotificationSubscription {
            shared: self.shared.clone(),
            runtime: PhantomData,
        }
    }
}

impl<R: Runtime> std::fmt::Debug for NotificationSubscription<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationSubscription")
            .field("agent", &self.shared.agent)
            .field("context_id", &self.shared.context_id)
            .field("heartbeat", &self.heartbeat())
            .finish()
    }
}

impl<R: Runtime> NotificationSubscription<R> {
    /// The agent subscribed to.
    pub fn agent_name(&self) -> &str {
        &self.shared.agent
    }

    /// The subscription's own fresh context id.
    pub fn context_id(&self) -> &str {
        &self.shared.context_id
    }

    /// Waits for the real acknowledgement: `Ok` on the first event carrying a
    /// non-failed task state; `Err` on a FAILED/CANCELED/REJECTED first state, the ACK timeout,
    /// [`close`](Self::close) before it ("closed before acknowledgement"), or an end of the
    /// subscription before it. Never a synthesised success.
    pub async fn acknowledgement(&self) -> Result<(), ExtensionError> {
        let value = self.shared.ack.wait(Option::is_some).await;
        value.unwrap_or(Err(ExtensionError::RuntimeStopped))
    }

    /// Requests the end of the subscription (drops the connection). Idempotent; returns
    /// at once, see [`completion`](Self::completion).
    pub fn close(&self) {
        let close = self
            .shared
            .close
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(close) = close {
            let _ = close.send(());
        }
    }

    /// Waits until the stream has actually exited, whoever ended it, and the listener returned
    /// from every event delivered before (so do not await it from inside the listener): `Ok`
    /// when the host closed it or the agent ended it, `Err` when it failed (ACK timeout,
    /// protocol error, reattachment exhausted, …).
    pub async fn completion(&self) -> Result<SubscriptionCompletion, ExtensionError> {
        let shared = &self.shared;
        let value = shared.done.wait(|v| v.is_some() && shared.settled()).await;
        value.unwrap_or(Err(ExtensionError::RuntimeStopped))
    }

    /// Liveness.
    pub fn heartbeat(&self) -> Heartbeat {
        let live = self.shared.live();
        Heartbeat {
            opened_at: self.shared.opened_at,
            last_event_at: live.last_event_at,
            event_count: live.event_count,
            active: live.active,
            taken_at: R::now(),
        }
    }

    /// Whether the stream is still being driven.
    pub fn is_active(&self) -> bool {
        self.shared.live().active
    }

    /// Active, with an event (or the opening) within `max_idle`.
    pub fn is_healthy(&self, max_idle: Duration) -> bool {
        self.heartbeat().is_healthy(max_idle)
    }

    /// How many times a dropped stream was re-established.
    pub fn reattachments(&self) -> u32 {
        self.shared.live().reattachments
    }
}

// ----- the driver -----

/// What a machine tells its caller (not an exchange).
enum Told {
    Acknowledged(Result<(), ExtensionFailure>),
    Delivered(Box<ReceivedMessage>),
    Reattached(Reattachment),
    Ended(SubscriptionEnd),
}

#[allow(clippy::large_enum_variant)] // requests are moved, never copied
pub(crate) enum MachineStep<T> {
    Transmit(HttpRequest),
    Abort(OpId),
    Tell(T),
    Skip,
}

/// The common surface of the core's operation machines (extensions, task calls).
pub(crate) trait Machine: Send + 'static {
    type Told: Send;
    fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse>;
    fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse>;
    fn poll_timeout(&self) -> Option<Timestamp>;
    fn poll_output(&mut self) -> Option<MachineStep<Self::Told>>;
    fn is_done(&self) -> bool;
}

struct AuthMachine(Authorization);

impl Machine for AuthMachine {
    type Told = AuthorizationResult;
    fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse> {
        self.0.handle(input, now)
    }
    fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.0.handle_timeout(now)
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.0.poll_timeout()
    }
    fn poll_output(&mut self) -> Option<MachineStep<AuthorizationResult>> {
        Some(match self.0.poll_output()? {
            AuthorizationOutput::Transmit(r) => MachineStep::Transmit(r),
            AuthorizationOutput::AbortTransmit { op } => MachineStep::Abort(op),
            AuthorizationOutput::Finished(r) => MachineStep::Tell(*r),
            other => {
                tracing::warn!(?other, "output not understood by this runtime");
                MachineStep::Skip
            }
        })
    }
    fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

struct NotiMachine(Notification);

impl Machine for NotiMachine {
    type Told = Told;
    fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse> {
        self.0.handle(input, now)
    }
    fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.0.handle_timeout(now)
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.0.poll_timeout()
    }
    fn poll_output(&mut self) -> Option<MachineStep<Told>> {
        Some(match self.0.poll_output()? {
            NotificationOutput::Transmit(r) => MachineStep::Transmit(r),
            NotificationOutput::AbortTransmit { op } => MachineStep::Abort(op),
            NotificationOutput::Acknowledged => MachineStep::Tell(Told::Acknowledged(Ok(()))),
            NotificationOutput::AcknowledgementFailed(f) => {
                MachineStep::Tell(Told::Acknowledged(Err(f)))
            }
            NotificationOutput::Delivered(m) => MachineStep::Tell(Told::Delivered(m)),
            NotificationOutput::Reattached { attempt, task_id } => {
                MachineStep::Tell(Told::Reattached(Reattachment { attempt, task_id }))
            }
            NotificationOutput::Ended(end) => MachineStep::Tell(Told::Ended(end)),
            other => {
                tracing::warn!(?other, "output not understood by this runtime");
                MachineStep::Skip
            }
        })
    }
    fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

/// Drives one machine to its end: carries out exchanges, arms its timer, feeds completions back
/// with the time they happened, and hands everything else to `tell`. `close` resolving (sent,
/// or its sender dropped) is [`Input::Cancel`]. Decides nothing.
pub(crate) async fn drive<R: Runtime, M: Machine>(
    mut machine: M,
    transport: Arc<Transport<R>>,
    close: impl Into<crate::run_loop::Cancel>,
    mut tell: impl FnMut(M::Told) + Send,
) {
    let mut waiter = Waiter::<R>::new(close);
    let (tx, mut rx) = crate::completions::channel::<Input>(COMPLETION_QUEUE);
    let mut ops: HashMap<OpId, AbortHandle> = HashMap::new();
    loop {
        while let Some(step) = machine.poll_output() {
            match step {
                MachineStep::Transmit(req) => {
                    let op = req.op;
                    // Opened here, under the span current where the operation runs (the
                    // host's, when it instrumented the call), not in the spawned task.
                    let span = crate::telemetry::exchange_span(&req, None);
                    let task =
                        Transport::exchange_in(transport.clone(), req, tx.clone(), span, None);
                    ops.insert(op, spawn_abortable::<R>(task));
                }
                MachineStep::Abort(op) => {
                    if let Some(h) = ops.remove(&op) {
                        h.abort();
                    }
                }
                MachineStep::Tell(told) => tell(told),
                MachineStep::Skip => {}
            }
        }
        if machine.is_done() {
            break;
        }
        let (now, input) = waiter.next(machine.poll_timeout(), &mut rx).await;
        if let Some(input) = input {
            if let Input::ResponseEnd { op } | Input::TransportFailed { op, .. } = &input {
                ops.remove(op);
            }
            if let Err(misuse) = machine.handle(input, now) {
                tracing::error!(%misuse, "the core rejected an input (runtime bug)");
            }
        }
        // Expiry is decided by the clock, not by which future woke us.
        if machine.poll_timeout().is_some_and(|d| d <= now) {
            if let Err(misuse) = machine.handle_timeout(now) {
                tracing::error!(%misuse, "the core rejected a timeout (runtime bug)");
            }
        }
    }
    ops.values().for_each(AbortHandle::abort);
}
