//! The [`Engine`]: validated cards, settings and the HTTP client, shared by every run.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::a2a::{AgentCard, Binding};
use a2at_core::agents::AgentDirectory;
use a2at_core::driver_support::EventEnvelope;
use a2at_core::event::EventSelection;
use a2at_core::host::{
    ControlPoint, HostError, MessageContent, NegotiationReply, NegotiationRequest,
    TaskExecutionResult, TaskRequest, TaskStatus, codes,
};
use a2at_core::result::ExecutionResult;
use a2at_core::run::{ConfigError, Run, RunConfig, RunStart};
use a2at_core::tracectx::{TraceContextError, TraceParent};
use a2at_core::workflow::ValidatedWorkflow;
use futures::FutureExt;
use futures::channel::oneshot;
use tracing::Instrument;

use crate::auth::Authenticator;
use crate::cards::{CARD_UNUSABLE, CardError, CardSet, LiveCards};
use crate::completions;
use crate::config::{
    DEFAULT_LOGIN_TIMEOUT, EnvFile, EnvLookup, LogOverrides, SeedSource, protocol_log_config,
};
use crate::error::EngineError;
use crate::events::{
    ConversationClosed, ConversationHook, EventHook, EventSink, OnFinish, OnFinishError,
    ResultWait, RunHandle,
};
use crate::http::{HttpClient, RequestHook};
use crate::journal::{JournalError, JournalStore, Journaling};
use crate::lifecycle::{ENGINE_CLOSED, Registry};
use crate::pool::PoolConfig;
use crate::proxy::ProxyConfig;
use crate::run_loop::Cancel;
use crate::run_loop::{Driver, Recorder};
use crate::runtime::Runtime;
use crate::tls::TlsConfig;
use crate::transport::{AuthHook, Limits, Transport};

/// Engine settings. Budgets follow the core's defaults.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EngineConfig {
    /// The core settings every run starts from: budgets, polling, negotiation exchanges,
    /// decode limits and the retry policy (see [`RunConfig`] for each and its default). Its
    /// `seed`, `execution_id` and `events` are chosen per run and ignored here.
    pub run: RunConfig,
    /// The binding to use for every agent; a card without it is an error (default: the order
    /// of [`a2at_core::a2a::select_endpoint`]: JSON-RPC and HTTP+JSON in card order, gRPC only
    /// when a card offers nothing else).
    pub preferred_binding: Option<Binding>,
    /// HTTP exchanges in flight at once per agent, across all runs (default 16); agents added
    /// to the live engine are bounded the same way.
    pub max_in_flight_per_agent: usize,
    /// HTTP exchanges in flight at once overall, across all runs (default 256).
    pub max_in_flight: usize,
    /// Where run seeds come from (default: the OS).
    pub seed: SeedSource,
    /// Events a run's stream holds before the run waits for the consumer (default 1024;
    /// at least 1). A consumer that stops reading while holding the stream pauses the run
    /// (and a cancel through its handle) once this many events wait; memory stays bounded and
    /// no event is dropped. Dropping the stream (or awaiting [`RunHandle::result`]) releases
    /// the run: later events go only to the event sink and `on_finish`. [`Engine::close`]
    /// never waits for such a consumer: a run it cancels stops feeding the stream.
    pub event_queue: usize,
    /// Deadline of one credential login, response body included (default 30 s).
    /// A login that misses it fails the send with an authentication error; nothing is sent
    /// unauthenticated.
    pub login_timeout: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            run: RunConfig::default(),
            preferred_binding: None,
            max_in_flight_per_agent: 16,
            max_in_flight: 256,
            seed: SeedSource::Os,
            event_queue: 1024,
            login_timeout: DEFAULT_LOGIN_TIMEOUT,
        }
    }
}

/// The environment variable holding the credential key (64 hex characters) when none is
/// configured explicitly.
pub const CREDENTIAL_KEY_ENV: &str = "A2AT_CRED_KEY";

/// Reads and parses a credentials file. `enc:` values are decrypted with `key`, or else
/// with the key in [`CREDENTIAL_KEY_ENV`]; a missing or wrong key, an unreadable file or a
/// malformed entry is an error (fail closed).
pub fn load_credentials(
    path: &std::path::Path,
    key: Option<&str>,
) -> Result<a2at_core::auth::CredentialsConfig, EngineError> {
    load_credentials_in(path, key, &EnvLookup::process())
}

/// [`load_credentials`] with the key looked up in `env` (process environment, then a
/// host-loaded `.env` file) when none is given.
fn load_credentials_in(
    path: &std::path::Path,
    key: Option<&str>,
    env: &EnvLookup<'_>,
) -> Result<a2at_core::auth::CredentialsConfig, EngineError> {
    use a2at_core::auth::{CredentialKey, CredentialsConfig};
    let text = std::fs::read_to_string(path)
        .map_err(|e| EngineError::Credentials(format!("cannot read {}: {e}", path.display())))?;
    let key_hex = match key {
        Some(k) => Some(k.to_owned()),
        None => env.var(CREDENTIAL_KEY_ENV),
    };
    let key = key_hex
        .map(|hex| CredentialKey::from_hex(hex.trim()))
        .transpose()
        .map_err(|e| EngineError::Credentials(format!("credential key: {e}")))?;
    CredentialsConfig::from_json_str(&text, key.as_ref())
        .map_err(|e| EngineError::Credentials(format!("{}: {e}", path.display())))
}

/// Builds an [`Engine`].
pub struct EngineBuilder<R> {
    cards: Vec<AgentCard>,
    config: EngineConfig,
    http: Option<HttpClient<R>>,
    auth: Option<AuthHook>,
    credentials: Option<a2at_core::auth::CredentialsConfig>,
    credentials_file: Option<std::path::PathBuf>,
    credential_key: Option<a2at_core::auth::Secret>,
    env_file: Option<EnvFile>,
    log: LogOverrides,
    tls: Option<TlsConfig>,
    proxy: Option<ProxyConfig>,
    pool: Option<PoolConfig>,
    request_hook: Option<RequestHook>,
    on_conversation_closed: Option<ConversationHook>,
}

impl<R> std::fmt::Debug for EngineBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("cards", &self.cards.len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> EngineBuilder<R> {
    /// Replaces all settings.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets [`RunConfig::task_budget`] in [`EngineConfig::run`].
    pub fn task_budget(mut self, budget: Duration) -> Self {
        self.config.run.task_budget = budget;
        self
    }

    /// Sets [`RunConfig::callback_budget`] in [`EngineConfig::run`].
    pub fn callback_budget(mut self, budget: Duration) -> Self {
        self.config.run.callback_budget = budget;
        self
    }

    /// Sets [`RunConfig::retry`] in [`EngineConfig::run`].
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.config.run.retry = policy;
        self
    }

    /// Sets [`RunConfig::ambiguous_send`] in [`EngineConfig::run`]: what a resumed durable run
    /// does with a send it cannot look up at the agent (fail the subtask, the default, or send
    /// the same message again).
    pub fn ambiguous_send(mut self, policy: a2at_core::AmbiguousSend) -> Self {
        self.config.run.ambiguous_send = policy;
        self
    }

    /// Sets [`RunConfig::poll_interval`] in [`EngineConfig::run`].
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.config.run.poll_interval = interval;
        self
    }

    /// Sets [`RunConfig::cancel_budget`] in [`EngineConfig::run`].
    pub fn cancel_budget(mut self, budget: Duration) -> Self {
        self.config.run.cancel_budget = budget;
        self
    }

    /// Sets [`RunConfig::max_negotiation_exchanges`] in [`EngineConfig::run`].
    pub fn max_negotiation_exchanges(mut self, n: u32) -> Self {
        self.config.run.max_negotiation_exchanges = n;
        self
    }

    /// Lets hosts answer a plain `INPUT_REQUIRED` (no Negotiation-T) with up to `n` follow-up
    /// messages per task through `on_input_required`: sets [`RunConfig::max_input_replies`]
    /// (must be at least 1). Without it such a task fails with `a2a.unsupported_task_state`.
    pub fn max_input_replies(mut self, n: u32) -> Self {
        self.config.run.max_input_replies = Some(n);
        self
    }

    /// See [`EngineConfig::preferred_binding`].
    pub fn preferred_binding(mut self, binding: Binding) -> Self {
        self.config.preferred_binding = Some(binding);
        self
    }

    /// See [`EngineConfig::max_in_flight_per_agent`].
    pub fn max_in_flight_per_agent(mut self, n: usize) -> Self {
        self.config.max_in_flight_per_agent = n;
        self
    }

    /// See [`EngineConfig::event_queue`].
    pub fn event_queue(mut self, capacity: usize) -> Self {
        self.config.event_queue = capacity;
        self
    }

    /// See [`EngineConfig::max_in_flight`].
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.config.max_in_flight = n;
        self
    }

    /// See [`EngineConfig::seed`].
    pub fn seed(mut self, seed: SeedSource) -> Self {
        self.config.seed = seed;
        self
    }

    /// Uses this HTTP client (e.g. to share a pool or count requests) instead of a new one.
    pub fn http_client(mut self, client: HttpClient<R>) -> Self {
        self.http = Some(client);
        self
    }

    /// Adds headers (authentication) to every request; see [`AuthHook`]. Its headers are merged
    /// with the built-in credentials' (a conflicting value for one header blocks the send), and
    /// with a hook configured, an agent whose requirements no credential meets is left to it.
    pub fn auth_headers(mut self, hook: AuthHook) -> Self {
        self.auth = Some(hook);
        self
    }

    /// The TLS policy of the engine's own HTTP client (ignored when [`EngineBuilder::http_client`]
    /// supplies one): extra CA certificates, a client identity, or the development-only
    /// insecure mode.
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The proxy settings of the engine's own HTTP client (default: [`ProxyConfig::from_env`],
    /// read when the engine is built; [`ProxyConfig::none`] connects directly). With
    /// [`EngineBuilder::http_client`], set them on that client instead (building fails
    /// otherwise, rather than ignoring them).
    pub fn proxy(mut self, proxy: ProxyConfig) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// How the engine's own HTTP client keeps idle connections (default: as many per origin
    /// as [`EngineConfig::max_in_flight`], each for 90 s; see [`PoolConfig`]). With
    /// [`EngineBuilder::http_client`], build that client with
    /// [`HttpClient::with_tls_proxy_and_pool`] instead (building fails otherwise, rather than
    /// ignoring it).
    pub fn pool(mut self, pool: PoolConfig) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Edits every request of the engine's own HTTP client (gateway headers, URI rewrites) after
    /// authentication was added; see [`RequestHook`]. Extension senders built from the engine
    /// use it too. With [`EngineBuilder::http_client`], use [`HttpClient::with_request_hook`]
    /// instead (building fails otherwise, rather than ignoring it).
    pub fn request_hook(mut self, hook: RequestHook) -> Self {
        self.request_hook = Some(hook);
        self
    }

    /// Built-in credential authentication (a parsed credentials file): for each agent, the first
    /// `securityRequirements` entry whose schemes all have credentials is applied, logging in and
    /// caching tokens as configured. Without credentials or a hook, a request to an agent whose
    /// card requires authentication fails instead of going out unauthenticated.
    pub fn credentials(mut self, credentials: a2at_core::auth::CredentialsConfig) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Built-in credential authentication from a credentials file, read and decrypted
    /// when the engine is built: a missing or malformed file, or an `enc:` value without the
    /// right key, fails [`EngineBuilder::build`]. Give credentials either this way or
    /// with [`EngineBuilder::credentials`], never both.
    pub fn credentials_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.credentials_file = Some(path.into());
        self
    }

    /// The key (64 hex characters) of `enc:` values in the credentials file; it takes
    /// precedence over the [`CREDENTIAL_KEY_ENV`] variable.
    pub fn credential_key(mut self, hex: impl Into<String>) -> Self {
        self.credential_key = Some(a2at_core::auth::Secret::new(hex));
        self
    }

    /// A `.env` file the host loaded: its values apply where the process environment sets
    /// nothing, for [`CREDENTIAL_KEY_ENV`] and the protocol log knobs. The engine never reads a
    /// `.env` file on its own.
    pub fn env_file(mut self, env: EnvFile) -> Self {
        self.env_file = Some(env);
        self
    }

    /// The per-conversation close hook: called once for every conversation (the `contextId`
    /// of one task activation: its send, waiting and every negotiation exchange) after its
    /// whole cycle is over, whatever the outcome, and before the run's result is delivered;
    /// never after each HTTP request. Local (`SELF_LOOP`) tasks have no conversation. Its
    /// panics are caught and ignored.
    pub fn on_conversation_closed(
        mut self,
        hook: impl Fn(&ConversationClosed) + Send + Sync + 'static,
    ) -> Self {
        self.on_conversation_closed = Some(Arc::new(hook));
        self
    }

    /// See [`EngineConfig::login_timeout`] (must be positive).
    pub fn login_timeout(mut self, timeout: Duration) -> Self {
        self.config.login_timeout = timeout;
        self
    }

    /// Whether protocol log entries include bodies; overrides
    /// `WORKFLOW_ENGINE_PROTOCOL_INCLUDE_BODY` (default true).
    pub fn protocol_log_body(mut self, include: bool) -> Self {
        self.log.include_body = Some(include);
        self
    }

    /// The character cap of a logged body (at least 256); overrides
    /// `WORKFLOW_ENGINE_PROTOCOL_MAX_BODY_CHARS` (default 100 000).
    pub fn protocol_log_max_body_chars(mut self, chars: usize) -> Self {
        self.log.max_body_chars = Some(chars);
        self
    }

    /// Pretty protocol log entries (one header per line, indented JSON); overrides
    /// `WORKFLOW_ENGINE_PROTOCOL_PRETTY` (default true). Redaction is always on.
    pub fn protocol_log_pretty(mut self, pretty: bool) -> Self {
        self.log.pretty = Some(pretty);
        self
    }

    /// Validates the settings and cards and builds the engine. A setting out of range, a blank
    /// or repeated card name or unreadable credentials are an error; a card that cannot be used
    /// on its own (no usable interface, missing members, authentication it requires but that
    /// cannot be set up) is not: it is kept as unusable, logged as a warning and listed by
    /// [`Engine::card_errors`], and only the runs that send to that agent are refused.
    pub fn build(self) -> Result<Engine<R>, EngineError> {
        if self.config.login_timeout.is_zero() {
            return Err(EngineError::Config("login_timeout must be positive"));
        }
        self.config.run_config(0).validate()?;
        let env = EnvLookup::with_file(self.env_file.as_ref());
        let log = protocol_log_config(&env, Some(self.log))?;
        let credentials = match (self.credentials, &self.credentials_file) {
            (Some(_), Some(_)) => {
                return Err(EngineError::Credentials(
                    "given both as a file and inline; give one of them".into(),
                ));
            }
            (Some(c), None) => Some(c),
            (None, Some(path)) => Some(load_credentials_in(
                path,
                self.credential_key.as_ref().map(|k| k.expose()),
                &env,
            )?),
            (None, None) => None,
        };
        if self.config.max_in_flight == 0 {
            return Err(EngineError::Config("max_in_flight must be at least 1"));
        }
        if self.config.event_queue == 0 {
            return Err(EngineError::Config("event_queue must be at least 1"));
        }
        if self.config.max_in_flight_per_agent == 0 {
            return Err(EngineError::Config(
                "max_in_flight_per_agent must be at least 1",
            ));
        }
        let tls = self.tls.unwrap_or_default();
        // A burst the in-flight bound allows never closes connections it will need again.
        let default_pool = PoolConfig::default().max_idle_per_origin(self.config.max_in_flight);
        let client = own_client(
            self.http,
            &tls,
            self.proxy,
            self.request_hook,
            self.pool,
            default_pool,
        )?;
        // Plans are installed card by card as the cards are checked, now and on every change.
        let authenticator = Authenticator::new(
            &AgentDirectory::default(),
            credentials.as_ref(),
            self.auth.is_some(),
            self.config.login_timeout,
        );
        let cards = LiveCards::build(self.cards, self.config.preferred_binding, &authenticator)?;
        let set = cards.snapshot();
        // Agents get their slots on first use (also those added later); made here, the names
        // known now need no lock on their first exchange.
        let limits = Limits::new(
            set.directory
                .names()
                .chain(set.broken.keys().map(String::as_str)),
            self.config.max_in_flight_per_agent,
            self.config.max_in_flight,
        );
        Ok(Engine {
            inner: Arc::new(Inner {
                cards,
                config: self.config,
                transport: Arc::new(Transport {
                    credentials: authenticator,
                    client,
                    limits,
                    auth: self.auth,
                    log,
                }),
                runs: AtomicU64::new(0),
                credentials,
                tls,
                registry: Arc::new(Registry::default()),
                on_conversation_closed: self.on_conversation_closed,
            }),
        })
    }
}

/// The given HTTP client, or a new one with these settings (`default_pool` when the builder was
/// given no pool). Proxy settings, a hook or a pool next to a given client are an error (they
/// would silently not apply).
pub(crate) fn own_client<R: Runtime>(
    given: Option<HttpClient<R>>,
    tls: &TlsConfig,
    proxy: Option<ProxyConfig>,
    hook: Option<RequestHook>,
    pool: Option<PoolConfig>,
    default_pool: PoolConfig,
) -> Result<HttpClient<R>, EngineError> {
    match given {
        Some(_) if proxy.is_some() || hook.is_some() || pool.is_some() => Err(EngineError::Config(
            "proxy, pool and request_hook configure the builder's own HTTP client; with \
             http_client, configure that client (HttpClient::with_tls_proxy_and_pool, \
             with_request_hook)",
        )),
        Some(client) => Ok(client),
        None => {
            let proxy = match proxy {
                Some(p) => p,
                None => ProxyConfig::from_env()?,
            };
            let client =
                HttpClient::with_tls_proxy_and_pool(tls, proxy, pool.unwrap_or(default_pool))?;
            Ok(match hook {
                Some(hook) => client.with_request_hook(hook),
                None => client,
            })
        }
    }
}

struct Inner<R> {
    /// The live card set; runs take its current value when they start.
    cards: LiveCards,
    config: EngineConfig,
    transport: Arc<Transport<R>>,
    runs: AtomicU64,
    /// Kept for the [`ExtensionSender`](crate::ExtensionSender) built from this engine.
    credentials: Option<a2at_core::auth::CredentialsConfig>,
    /// Kept for the [`ExtensionSender`](crate::ExtensionSender) built from this engine.
    tls: TlsConfig,
    /// The open runs and subscriptions, for [`Engine::close`].
    registry: Arc<Registry>,
    on_conversation_closed: Option<ConversationHook>,
}

impl<R> Drop for Inner<R> {
    /// The last clone of the engine is gone: close without waiting.
    fn drop(&mut self) {
        self.registry.close_now();
    }
}

/// The engine: validated cards, settings, the HTTP client and the concurrency limits. Cheap to
/// clone; every clone shares them, so one engine serves many concurrent runs. Its cards can
/// change while it runs ([`Engine::add_card`] and the like); each run keeps the cards it
/// started with.
pub struct Engine<R> {
    inner: Arc<Inner<R>>,
}

impl<R> Clone for Engine<R> {
    fn clone(&self) -> Self {
        Engine {
            inner: self.inner.clone(),
        }
    }
}

impl<R> std::fmt::Debug for Engine<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("agents", &self.inner.cards.snapshot().directory.len())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Engine<R> {
    /// Starts building an engine for these agents.
    pub fn builder(cards: Vec<AgentCard>) -> EngineBuilder<R> {
        EngineBuilder {
            cards,
            config: EngineConfig::default(),
            http: None,
            auth: None,
            credentials: None,
            credentials_file: None,
            credential_key: None,
            env_file: None,
            log: LogOverrides::default(),
            tls: None,
            proxy: None,
            pool: None,
            request_hook: None,
            on_conversation_closed: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// The card set now, for one run or task call to keep.
    pub(crate) fn cards(&self) -> Arc<CardSet> {
        self.inner.cards.snapshot()
    }

    /// The usable agents now: a value that later card changes leave alone (they swap in a new
    /// one).
    pub fn directory(&self) -> Arc<AgentDirectory> {
        self.inner.cards.snapshot().directory.clone()
    }

    /// The names of the agents with a card, usable or not, in sorted order.
    pub fn agent_names(&self) -> Vec<String> {
        let set = self.inner.cards.snapshot();
        let mut names: Vec<String> = set
            .directory
            .names()
            .map(str::to_owned)
            .chain(set.broken.keys().cloned())
            .collect();
        names.sort();
        names
    }

    /// The usable card of `agent`, as given (before endpoint selection).
    pub fn card(&self, agent: &str) -> Option<AgentCard> {
        let set = self.inner.cards.snapshot();
        set.directory.get(agent).map(|entry| entry.card.clone())
    }

    /// The cards that cannot be used, each with why, by agent name. A run or task call that
    /// needs one of these agents is refused with [`CARD_UNUSABLE`](crate::CARD_UNUSABLE);
    /// everything else runs.
    pub fn card_errors(&self) -> Vec<CardError> {
        self.inner
            .cards
            .snapshot()
            .broken
            .values()
            .cloned()
            .collect()
    }

    /// The problem of `agent`'s card, if it has an unusable one.
    pub fn card_error(&self, agent: &str) -> Option<CardError> {
        self.inner.cards.snapshot().broken.get(agent).cloned()
    }

    /// Adds the card of a new agent, checked as [`EngineBuilder::build`] checks each card.
    /// Runs started from now on can use it; runs already under way never see it.
    ///
    /// A card that cannot be used is kept as unusable (see [`Engine::card_errors`]) and its
    /// problem returned. A name the engine already has is refused with
    /// [`CardErrorKind::AlreadyPresent`](crate::CardErrorKind::AlreadyPresent) and nothing
    /// changes, as is a card with a blank name.
    pub fn add_card(&self, card: AgentCard) -> Result<(), CardError> {
        self.inner
            .cards
            .put(card, Some(false), &self.inner.transport.credentials)
    }

    /// Replaces the card of an agent the engine has (usable or not). Runs started from now on
    /// use the new card; a run already under way keeps the card it started with (endpoint,
    /// binding, streaming), while requests authenticate with the agent's current credentials
    /// plan. A name the engine does not have is refused with
    /// [`CardErrorKind::NotPresent`](crate::CardErrorKind::NotPresent) and nothing changes; a
    /// card that cannot be used replaces the old one as unusable and its problem is returned.
    pub fn replace_card(&self, card: AgentCard) -> Result<(), CardError> {
        self.inner
            .cards
            .put(card, Some(true), &self.inner.transport.credentials)
    }

    /// Adds or replaces one card (either of [`Engine::add_card`] and [`Engine::replace_card`]).
    pub fn upsert_card(&self, card: AgentCard) -> Result<(), CardError> {
        self.inner
            .cards
            .put(card, None, &self.inner.transport.credentials)
    }

    /// Removes the card of `agent` (usable or not); whether there was one. A run that starts
    /// afterwards and sends to it fails its task with `workflow.agent_not_found`; runs already
    /// under way keep the card.
    pub fn remove_card(&self, agent: &str) -> bool {
        self.inner.cards.remove(agent)
    }

    /// Replaces the whole card set, checked as [`EngineBuilder::build`] checks it: a blank or
    /// repeated name refuses the set (nothing changes); otherwise the unusable cards are kept
    /// as such and returned, one error each (empty: every card is usable).
    pub fn set_cards(&self, cards: Vec<AgentCard>) -> Result<Vec<CardError>, EngineError> {
        Ok(self
            .inner
            .cards
            .replace_all(cards, &self.inner.transport.credentials)?)
    }

    /// The HTTP client (e.g. to read [`HttpClient::requests_sent`]).
    pub fn http_client(&self) -> &HttpClient<R> {
        &self.inner.transport.client
    }

    /// The validated agents, the authentication hook and the credentials, for the
    /// [`ExtensionSender`](crate::ExtensionSender) built from this engine.
    pub(crate) fn extension_parts(&self) -> ExtensionParts {
        ExtensionParts {
            directory: self.directory(),
            auth: self.inner.transport.auth.clone(),
            credentials: self.inner.credentials.clone(),
            tls: self.inner.tls.clone(),
            log: self.inner.transport.log,
        }
    }

    /// Prepares a run: the one way to start one. Set its options (start input, event sink,
    /// `on_finish`, seed, trace) on the [`RunBuilder`], then [`RunBuilder::spawn`] it for a
    /// [`RunHandle`] (events, cancel, result) or [`RunBuilder::execute`] it for the result.
    pub fn run<C: ControlPoint + 'static>(
        &self,
        workflow: impl Into<Arc<ValidatedWorkflow>>,
        control_point: Arc<C>,
    ) -> RunBuilder<R, C> {
        RunBuilder {
            engine: self.clone(),
            workflow: workflow.into(),
            control_point,
            start: RunStart::default(),
            on_finish: None,
            sink: None,
            seed: None,
            trace: None,
            events: None,
            config_edits: Vec::new(),
            map_events: None,
            journal: None,
            trace_parent_error: None,
        }
    }

    /// Continues run `run_id` from its journal in `store`, after the engine process that ran
    /// it died: the journal is replayed without carrying anything out again, then the run
    /// goes on live (see [`crate::journal`] for what is asked and sent again). The handle's
    /// events start after the restart. The run keeps the cards journaled when it started (as
    /// any run keeps its cards); this engine gives it transport, credentials and limits.
    pub async fn resume<C: ControlPoint + 'static>(
        &self,
        store: Arc<dyn JournalStore>,
        run_id: &str,
        control_point: Arc<C>,
    ) -> Result<RunHandle, JournalError> {
        crate::journal::resume(self, store, run_id, control_point).await
    }

    /// The conversation close hook every run of this engine calls.
    pub(crate) fn conversation_hook(&self) -> Option<ConversationHook> {
        self.inner.on_conversation_closed.clone()
    }

    /// Runs a workflow to its end: the convenience form of
    /// `self.run(workflow, control_point).start(start).spawn().result()`. Dropping the future
    /// cancels the run (its cleanup still runs in the background).
    pub async fn execute<C: ControlPoint + 'static>(
        &self,
        workflow: impl Into<Arc<ValidatedWorkflow>>,
        start: RunStart,
        control_point: Arc<C>,
    ) -> ExecutionResult {
        self.run(workflow, control_point)
            .start(start)
            .spawn()
            .result()
            .await
    }

    /// Sends one message to `agent` outside any workflow and waits for the task's result.
    /// A Propose from the agent fails the task with `host.handler_missing`; see
    /// [`Engine::send_task_negotiating`].
    pub async fn send_task(&self, agent: &str, content: MessageContent) -> TaskExecutionResult {
        self.send_task_inner::<NoNegotiation>(agent, content, None)
            .await
    }

    /// Like [`Engine::send_task`], answering Negotiation-T Proposes with `strategy`'s
    /// `on_negotiation`, and a plain `INPUT_REQUIRED` with its `on_input_required` when the
    /// engine allows follow-ups (its other callbacks are never called).
    pub async fn send_task_negotiating<N: ControlPoint + 'static>(
        &self,
        agent: &str,
        content: MessageContent,
        strategy: Arc<N>,
    ) -> TaskExecutionResult {
        self.send_task_inner(agent, content, Some(strategy)).await
    }

    async fn send_task_inner<N: ControlPoint + 'static>(
        &self,
        agent: &str,
        content: MessageContent,
        strategy: Option<Arc<N>>,
    ) -> TaskExecutionResult {
        let workflow = match ValidatedWorkflow::single_task("send_task", agent, "send_task") {
            Ok(w) => w,
            Err(e) => return local_failure(agent, codes::AGENT_NOT_FOUND, e.to_string()),
        };
        let control_point = Arc::new(SendTaskControlPoint { content, strategy });
        let result = self
            .execute(workflow, RunStart::default(), control_point)
            .await;
        match result.history.into_iter().next() {
            Some(task) => task,
            None => {
                let (code, message) = match result.error {
                    Some(e) => (e.code, e.message),
                    None => (codes::EXECUTION_FAILED.to_owned(), "no task ran".to_owned()),
                };
                local_failure(agent, &code, message)
            }
        }
    }

    /// The open runs and subscriptions.
    pub(crate) fn registry(&self) -> Arc<Registry> {
        self.inner.registry.clone()
    }

    /// The transport every exchange of this engine goes through (runs and task calls).
    pub(crate) fn transport(&self) -> Arc<Transport<R>> {
        self.inner.transport.clone()
    }

    pub(crate) fn next_seed(&self) -> u64 {
        match self.inner.config.seed {
            SeedSource::Fixed(seed) => seed,
            SeedSource::Os => {
                let mut hasher = RandomState::new().build_hasher();
                hasher.write_u64(self.inner.runs.fetch_add(1, Ordering::Relaxed));
                hasher.finish()
            }
        }
    }

    fn run_config(&self, seed: u64) -> RunConfig {
        self.inner.config.run_config(seed)
    }
}

impl EngineConfig {
    /// The core settings of a run with `seed`.
    fn run_config(&self, seed: u64) -> RunConfig {
        RunConfig {
            seed,
            execution_id: None,
            events: EventSelection::All,
            ..self.run.clone()
        }
    }
}

/// What an [`ExtensionSender`](crate::ExtensionSender) built from an engine takes over.
pub(crate) struct ExtensionParts {
    pub(crate) directory: Arc<AgentDirectory>,
    pub(crate) auth: Option<AuthHook>,
    pub(crate) credentials: Option<a2at_core::auth::CredentialsConfig>,
    pub(crate) tls: TlsConfig,
    pub(crate) log: a2at_core::protolog::LogConfig,
}

/// One change a run makes to the engine's [`RunConfig`].
type ConfigEdit = Box<dyn FnOnce(&mut RunConfig) + Send>;

/// One run's options, from [`Engine::run`].
pub struct RunBuilder<R, C> {
    engine: Engine<R>,
    workflow: Arc<ValidatedWorkflow>,
    control_point: Arc<C>,
    start: RunStart,
    on_finish: Option<OnFinish>,
    sink: Option<EventSink>,
    seed: Option<u64>,
    trace: Option<Box<dyn std::io::Write + Send>>,
    events: Option<EventSelection>,
    /// This run's changes to the engine's [`RunConfig`], applied in order before the run is
    /// checked and started (each setting is declared once, in `RunConfig`).
    config_edits: Vec<ConfigEdit>,
    map_events: Option<EventHook>,
    journal: Option<Arc<dyn JournalStore>>,
    /// A `traceparent` given to [`RunBuilder::traceparent`] that did not parse: the run is
    /// refused with it when spawned.
    trace_parent_error: Option<TraceContextError>,
}

impl<R, C> std::fmt::Debug for RunBuilder<R, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunBuilder")
            .field("start", &self.start)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime, C: ControlPoint + 'static> RunBuilder<R, C> {
    /// The runtime intent and language of the run.
    pub fn start(mut self, start: RunStart) -> Self {
        self.start = start;
        self
    }

    /// This run's budget per task activation (overrides [`RunConfig::task_budget`]; must be
    /// positive, else the run ends at once with `config.invalid` naming it).
    pub fn task_budget(mut self, budget: Duration) -> Self {
        self.config_edits
            .push(Box::new(move |config| config.task_budget = budget));
        self
    }

    /// This run's budget per `on_route` / `on_self_task` call (overrides
    /// [`RunConfig::callback_budget`]; must be positive).
    pub fn callback_budget(mut self, budget: Duration) -> Self {
        self.config_edits
            .push(Box::new(move |config| config.callback_budget = budget));
        self
    }

    /// This run's negotiation exchanges per task (overrides
    /// [`RunConfig::max_negotiation_exchanges`]; must be at least 1).
    pub fn max_negotiation_exchanges(mut self, n: u32) -> Self {
        self.config_edits
            .push(Box::new(move |config| config.max_negotiation_exchanges = n));
        self
    }

    /// This run's follow-ups per task on a plain `INPUT_REQUIRED` (overrides
    /// [`RunConfig::max_input_replies`]; must be at least 1).
    pub fn max_input_replies(mut self, n: u32) -> Self {
        self.config_edits
            .push(Box::new(move |config| config.max_input_replies = Some(n)));
        self
    }

    /// Fixes this run's id seed (overrides [`EngineConfig::seed`]).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Joins the host's distributed trace: `value` is a W3C `traceparent`
    /// (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`), typically the host's current
    /// span. Every request of the run then carries a `traceparent` of that trace (each exchange
    /// its own span id) instead of a trace of the run's own. A malformed value refuses the run
    /// at once with `config.invalid` naming `trace_parent` (the message says what is wrong,
    /// never repeats the value); see [`a2at_core::tracectx`].
    pub fn traceparent(mut self, value: &str) -> Self {
        match TraceParent::parse(value) {
            Ok(parent) => {
                self.trace_parent_error = None;
                self.config_edits
                    .push(Box::new(move |config| config.trace_parent = Some(parent)));
            }
            Err(e) => self.trace_parent_error = Some(e),
        }
        self
    }

    /// A W3C `tracestate` sent unchanged with every request of the run (usually the host's,
    /// next to [`RunBuilder::traceparent`]). It must be 1 to 512 printable ASCII characters,
    /// else the run is refused with `config.invalid` naming `trace_state`.
    pub fn tracestate(mut self, value: &str) -> Self {
        let value = value.to_owned();
        self.config_edits
            .push(Box::new(move |config| config.trace_state = Some(value)));
        self
    }

    /// Records the run as an a2at trace (JSON lines: a header with the seed, configuration,
    /// workflow and cards, then every input with its time and every output) into `writer`.
    /// Replay it with `a2at_core::trace::replay` or `a2at replay`. A write error is logged and
    /// stops the recording; it never affects the run.
    pub fn record(mut self, writer: impl std::io::Write + Send + 'static) -> Self {
        self.trace = Some(Box::new(writer));
        self
    }

    /// Makes the run durable: every input is appended to a journal in `store` before what it
    /// causes is carried out, so [`Engine::resume`] can continue the run after a crash. The
    /// run's execution id names it in the store and must be new there (a fixed seed repeats
    /// it); a journal that cannot be written stops the run with `run.journal_failed`.
    pub fn journal(mut self, store: Arc<dyn JournalStore>) -> Self {
        self.journal = Some(store);
        self
    }

    /// Which events the run builds ([`EventSelection`]). By default a spawned run emits every
    /// event; [`RunBuilder::execute`] with no event sink and no `on_finish` hook emits none,
    /// since nobody could see them (the result is the same either way).
    pub fn events(mut self, selection: EventSelection) -> Self {
        self.events = Some(selection);
        self
    }

    /// The event hook: maps each event to itself, another event, several (e.g. to inject
    /// business events built with [`EventEnvelope::derived`] as `EventType::HostEvent`) or
    /// none. A panicking hook leaves the original event. The sink, the stream and `on_finish`
    /// see what it returns; the final `close` event does not pass through it.
    pub fn map_events(
        mut self,
        hook: impl Fn(&EventEnvelope) -> Vec<EventEnvelope> + Send + Sync + 'static,
    ) -> Self {
        self.map_events = Some(Arc::new(hook));
        self
    }

    /// Calls `sink` with every event as it happens; its panics are ignored.
    pub fn event_sink(mut self, sink: impl Fn(&EventEnvelope) + Send + Sync + 'static) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// A synchronous `on_finish` hook; its failure (error or panic) is logged and never changes
    /// the result.
    pub fn on_finish<F, E>(self, hook: F) -> Self
    where
        F: Fn(&ExecutionResult, &[EventEnvelope]) -> Result<(), E> + Send + Sync + 'static,
        E: Into<OnFinishError>,
    {
        let hook = Arc::new(hook);
        self.on_finish_async(move |result, events| {
            let hook = hook.clone();
            async move { hook(&result, &events).map_err(Into::into) }
        })
    }

    /// An async `on_finish` hook; its failure (error or panic) is logged and never changes the
    /// result.
    pub fn on_finish_async<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(ExecutionResult, Vec<EventEnvelope>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), OnFinishError>> + Send + 'static,
    {
        self.on_finish = Some(Arc::new(move |r, e| hook(r, e).boxed()));
        self
    }

    /// Starts the run in its own task on the runtime's executor: with `a2at-tokio` it must be
    /// called inside a tokio runtime; with `a2at-smol` it runs on smol's global executor and may
    /// be called from any thread.
    pub fn spawn(self) -> RunHandle {
        let seed = self.seed.unwrap_or_else(|| self.engine.next_seed());
        let mut config = self.engine.run_config(seed);
        config.events = self.events.unwrap_or_default();
        for edit in self.config_edits {
            edit(&mut config);
        }
        // Settings are checked at the door: a bad one refuses the run before anything runs.
        let checked = match self.trace_parent_error {
            Some(e) => Err(ConfigError::from(e)),
            None => config.validate(),
        };
        if let Err(e) = checked {
            let execution_id = a2at_core::IdGenerator::new(seed).next_uuid();
            tracing::warn!(%execution_id, error = %e, "run refused: unusable setting");
            return refused(
                execution_id,
                seed,
                a2at_core::result::RunError {
                    code: a2at_core::run::INVALID_CONFIG.to_owned(),
                    message: format!("invalid run setting: {e}"),
                },
            );
        }
        // The cards of this run: changes made from now on never reach it. A closed engine
        // refuses with `engine.closed` below, whatever the cards.
        let cards = self.engine.cards();
        let unusable = cards
            .unusable_in(&self.workflow)
            .filter(|_| !self.engine.is_closed());
        if let Some(e) = unusable {
            let execution_id = a2at_core::IdGenerator::new(seed).next_uuid();
            tracing::warn!(%execution_id, agent = %e.agent, error = %e, "run refused: unusable card");
            return refused(
                execution_id,
                seed,
                a2at_core::result::RunError {
                    code: CARD_UNUSABLE.to_owned(),
                    message: e.to_string(),
                },
            );
        }
        let slot = self.engine.inner.registry.open_run();
        let trace = self.trace.filter(|_| slot.is_some());
        let recorder = trace.and_then(|writer| {
            Recorder::start(
                writer,
                &self.workflow,
                &cards.directory,
                &config,
                &self.start,
            )
        });
        let mut journal = self.journal.filter(|_| slot.is_some()).map(|store| {
            Journaling::new_run(
                store,
                &self.workflow,
                &cards.directory,
                &config,
                &self.start,
            )
        });
        let host_parent = config.trace_parent;
        let run = Run::new(self.workflow, cards.directory.clone(), config, self.start);
        let execution_id = run.execution_id().to_owned();
        if let Some(j) = &mut journal {
            j.set_run_id(&execution_id);
        }
        let Some((ticket, close_rx)) = slot else {
            tracing::warn!(%execution_id, "run refused: the engine is closed");
            return refused(
                execution_id,
                seed,
                a2at_core::result::RunError {
                    code: ENGINE_CLOSED.to_owned(),
                    message: "the engine is closed: no new run starts".to_owned(),
                },
            );
        };
        let (events_tx, events_rx) = completions::channel(self.engine.inner.config.event_queue);
        let (progress_tx, progress_rx) = completions::channel(usize::MAX);
        let (cancel_tx, cancel_rx) = oneshot::channel();
        let (result_tx, result_rx) = oneshot::channel();
        tracing::info!(%execution_id, seed, "run started");
        let driver = Driver {
            transport: self.engine.inner.transport.clone(),
            control_point: self.control_point,
            on_finish: self.on_finish,
            sink: self.sink,
            events_tx,
            events_open: true,
            map_events: self.map_events,
            progress_rx: Some(progress_rx),
            recorder,
            ticket: Some(ticket),
            on_conversation_closed: self.engine.inner.on_conversation_closed.clone(),
            journal: journal.map(Box::new),
        };
        // The run's span (see `crate::telemetry`): a child of the host's current span.
        let span =
            crate::telemetry::run_span(&execution_id, seed, run.trace_id(), host_parent, false);
        // A combinator rather than an `async` block: a block would keep its own copy of the
        // driver and the run beside the drive future that owns them.
        let run_task = futures::FutureExt::map(
            driver
                .drive(run, Cancel::either(cancel_rx, Some(close_rx)))
                .instrument(span.clone()),
            move |result| {
                crate::telemetry::record_outcome(&span, &result);
                // The run's span closes (once its last child has) before the result is out: a
                // host that flushes its exporter when the result arrives gets the whole run.
                // (`map` drops the instrumented future, with its copy of the span, first.)
                drop(span);
                let _ = result_tx.send(result);
            },
        );
        crate::runtime::spawn::<R>(run_task);
        RunHandle {
            execution_id,
            seed,
            events: Some(events_rx),
            result: result_rx,
            cancel: std::sync::Mutex::new(Some(cancel_tx)),
            progress: progress_tx,
        }
    }

    /// Starts the run when first polled and waits for its result; dropping the future cancels
    /// the run.
    pub fn execute(mut self) -> impl Future<Output = ExecutionResult> {
        if self.events.is_none() && self.sink.is_none() && self.on_finish.is_none() {
            self.events = Some(EventSelection::None);
        }
        Execute::Unstarted(Box::new(self))
    }
}

/// The future of [`RunBuilder::execute`]: the builder until the first poll spawns the run, then
/// only the wait for its result. An `async fn` would keep the builder beside the wait, twice
/// over, for as long as the run lasts; the builder is boxed so that the wait does not keep
/// room for it either.
enum Execute<R, C> {
    Unstarted(Box<RunBuilder<R, C>>),
    Spawning,
    Waiting(ResultWait),
}

// Nothing in `Execute` is ever pinned in place: the builder is moved out, and the wait is
// polled through `&mut`.
impl<R, C> Unpin for Execute<R, C> {}

impl<R: Runtime, C: ControlPoint + 'static> Future for Execute<R, C> {
    type Output = ExecutionResult;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<ExecutionResult> {
        let this = self.get_mut();
        if matches!(this, Execute::Unstarted(_)) {
            if let Execute::Unstarted(builder) = std::mem::replace(this, Execute::Spawning) {
                *this = Execute::Waiting(ResultWait::new(builder.spawn()));
            }
        }
        match this {
            Execute::Waiting(wait) => wait.poll_unpin(cx),
            // Only when an earlier poll panicked while it spawned the run.
            Execute::Unstarted(_) | Execute::Spawning => {
                panic!("`execute` polled again after starting the run panicked")
            }
        }
    }
}

/// The handle of a run refused at the door: nothing ran, no event, the result is `error`.
fn refused(execution_id: String, seed: u64, error: a2at_core::result::RunError) -> RunHandle {
    crate::metrics::run_refused();
    let (cancel_tx, _) = oneshot::channel();
    let (result_tx, result_rx) = oneshot::channel();
    let (_, events_rx) = completions::channel(1);
    let (progress, _) = completions::channel(1);
    let _ = result_tx.send(ExecutionResult {
        execution_id: execution_id.clone(),
        success: false,
        error: Some(error),
        history: Vec::new(),
        steps: Vec::new(),
    });
    RunHandle {
        execution_id,
        seed,
        events: Some(events_rx),
        result: result_rx,
        cancel: std::sync::Mutex::new(Some(cancel_tx)),
        progress,
    }
}

fn local_failure(agent: &str, code: &str, message: String) -> TaskExecutionResult {
    TaskExecutionResult {
        step_name: "send_task".into(),
        subtask_index: 0,
        agent_name: agent.into(),
        skill: "".into(),
        task_id: "".into(),
        task_description: "send_task".into(),
        status: TaskStatus::Failed,
        outputs: Vec::new(),
        received_messages: Vec::new(),
        error: Some(message),
        error_code: Some(code.into()),
        error_details: None,
        remote_task_id: None,
        context_id: None,
    }
}

/// A control point with only the trait's fail-fast defaults.
struct NoNegotiation;

impl ControlPoint for NoNegotiation {}

/// Answers `on_task` with the given content and delegates `on_negotiation`.
struct SendTaskControlPoint<N> {
    content: MessageContent,
    strategy: Option<Arc<N>>,
}

impl<N: ControlPoint + 'static> ControlPoint for SendTaskControlPoint<N> {
    fn on_task(
        &self,
        _request: Arc<TaskRequest>,
    ) -> impl Future<Output = Result<MessageContent, HostError>> + Send {
        std::future::ready(Ok(self.content.clone()))
    }

    fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> impl Future<Output = Result<NegotiationReply, HostError>> + Send {
        let strategy = self.strategy.clone();
        async move {
            match strategy {
                Some(s) => s.on_negotiation(request).await,
                None => Err(HostError::missing_handler("on_negotiation")),
            }
        }
    }

    fn on_input_required(
        &self,
        request: a2at_core::host::InputRequest,
    ) -> impl Future<Output = Result<a2at_core::host::InputDecision, HostError>> + Send {
        let strategy = self.strategy.clone();
        async move {
            match strategy {
                Some(s) => s.on_input_required(request).await,
                None => Ok(a2at_core::host::InputDecision::Decline),
            }
        }
    }
}
