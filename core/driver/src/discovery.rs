//! Discovery over HTTP: a card [`RegistryClient`] and a PSOP
//! workflow store client ([`PsopClient`], the `LoadPsop` helper), sending the requests that
//! `a2at_core::discovery` builds through the runtime's HTTP client and parsing the answers there.
//!
//! These are optional helpers: when to discover, what to cache and how to react to a failure
//! belong to the host. Each client owns its HTTP client, so its TLS policy (for example
//! the development-only insecure mode) applies to its own connections and nothing else.
//! Every call has one deadline for the complete response, body included (default 30 s).
//! Redirects are followed (at most [`MAX_REDIRECTS`]). Access tokens are never logged: the
//! protocol log shows `access_token=<anonymous>`.

use std::time::Duration;

use a2at_core::a2a::AgentCard;
use a2at_core::auth::Secret;
use a2at_core::discovery::{
    self as core_discovery, DiscoveryRequest, RegisterOutcome, WorkflowSearchResult,
};
use a2at_core::io::TransportErrorKind;
use a2at_core::protolog::{self, Channel, LogConfig, LogContext};
use a2at_core::workflow::ValidatedWorkflow;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;

use crate::config::{EnvLookup, protocol_log_config};
use crate::engine::own_client;
use crate::error::EngineError;
use crate::http::{
    HttpClient, RequestHook, build_request, describe, header_pairs, header_text, http_method,
};
use crate::pool::PoolConfig;
use crate::proxy::ProxyConfig;
use crate::runtime::{Runtime, within};
use crate::tls::TlsConfig;

/// The default deadline of one discovery call, body included.
pub const DEFAULT_DISCOVERY_DEADLINE: Duration = Duration::from_secs(30);
/// The default cap on one discovery response body: a card list or a workflow is far smaller,
/// and a hostile or broken center must not be able to exhaust memory.
pub const DEFAULT_MAX_DISCOVERY_BODY_BYTES: usize = 16 * 1024 * 1024;
pub use a2at_core::discovery::MAX_REDIRECTS;

/// Why a discovery call failed. URLs in it are the logged form (access token `<anonymous>`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The client could not be built (a TLS policy that cannot be built).
    #[error("discovery client setup: {0}")]
    Setup(#[from] EngineError),
    /// A setting is out of range.
    #[error("invalid discovery setting: {0}")]
    Config(&'static str),
    /// The request could not be built (e.g. an invalid URL).
    #[error("{url}: cannot build the request: {message}")]
    Request {
        /// The URL as logged.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// The response body is larger than the configured cap; it was not read further.
    #[error("{url}: response body larger than {limit} bytes")]
    TooLarge {
        /// The URL as logged.
        url: String,
        /// The cap in force.
        limit: usize,
    },
    /// No complete response within the deadline.
    #[error("{url}: no complete response within {deadline:?}")]
    Deadline {
        /// The URL as logged.
        url: String,
        /// The deadline in force.
        deadline: Duration,
    },
    /// The exchange failed (connection, TLS, I/O).
    #[error("{url}: {kind:?} failure: {message}")]
    Transport {
        /// The URL as logged.
        url: String,
        /// The class of failure ([`TransportErrorKind::Tls`] for a rejected certificate).
        kind: TransportErrorKind,
        /// The transport's description.
        message: String,
    },
    /// More than [`MAX_REDIRECTS`] redirects, or a redirect without a usable `Location`.
    #[error("{url}: {message}")]
    Redirect {
        /// The URL as logged.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// The response is not what the endpoint promises (non-200, not JSON, an invalid card or
    /// workflow).
    #[error("{url}: {source}")]
    Response {
        /// The URL as logged.
        url: String,
        /// What was wrong with the response.
        #[source]
        source: core_discovery::DiscoveryResponseError,
    },
}

impl DiscoveryError {
    /// The transport failure class, when the exchange itself failed.
    pub fn transport_kind(&self) -> Option<TransportErrorKind> {
        match self {
            DiscoveryError::Transport { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// The HTTP side shared by both clients: the HTTP client, the deadline and the log settings.
#[derive(Clone)]
struct Fetcher<R> {
    client: HttpClient<R>,
    deadline: Duration,
    max_body_bytes: usize,
    log: LogConfig,
    /// The `agent` field of protocol entries (`registry` or `psop`).
    label: &'static str,
}

/// A complete response.
struct Answer {
    status: u16,
    body: Bytes,
    /// The URL that answered, as logged.
    url: String,
}

impl<R: Runtime> Fetcher<R> {
    /// Sends `req` (following redirects) and reads the whole body, all within the deadline.
    async fn fetch(&self, req: DiscoveryRequest) -> Result<Answer, DiscoveryError> {
        let url = req.log_url.clone();
        match within::<R, _>(self.deadline, self.fetch_following(req)).await {
            Some(result) => result,
            None => {
                tracing::warn!(url = %url, deadline = ?self.deadline, "[{}] discovery deadline passed", self.label);
                Err(DiscoveryError::Deadline {
                    url,
                    deadline: self.deadline,
                })
            }
        }
    }

    async fn fetch_following(&self, mut req: DiscoveryRequest) -> Result<Answer, DiscoveryError> {
        for _ in 0..=MAX_REDIRECTS {
            let (status, location, body) = self.exchange(&req).await?;
            match req.redirected(status, location.as_deref()) {
                Ok(Some(next)) => req = next,
                Ok(None) => {
                    return Ok(Answer {
                        status,
                        body,
                        url: req.log_url,
                    });
                }
                Err(message) => {
                    return Err(DiscoveryError::Redirect {
                        url: req.log_url.clone(),
                        message,
                    });
                }
            }
        }
        Err(DiscoveryError::Redirect {
            url: req.log_url,
            message: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }

    /// One HTTP exchange: status, `Location` and the whole body.
    async fn exchange(
        &self,
        req: &DiscoveryRequest,
    ) -> Result<(u16, Option<String>, Bytes), DiscoveryError> {
        let ctx = LogContext::simple(self.label, Channel::Discovery);
        if tracing::enabled!(target: "a2at::protocol", tracing::Level::DEBUG) {
            let entry = protolog::format_raw_request(
                &ctx,
                req.method.as_str(),
                &req.log_url,
                &req.headers,
                &req.body,
                &self.log,
            );
            tracing::debug!(target: "a2at::protocol", "{entry}");
        }
        let request = build_request(
            http_method(req.method),
            &req.url,
            &req.headers,
            req.body.clone(),
        )
        .map_err(|e| DiscoveryError::Request {
            url: req.log_url.clone(),
            // The http crate's message never repeats the URL.
            message: e.to_string(),
        })?;
        let response = self.client.send(request).await.map_err(|(kind, message)| {
            DiscoveryError::Transport {
                url: req.log_url.clone(),
                kind,
                message,
            }
        })?;
        let (parts, body) = response.into_parts();
        let status = parts.status.as_u16();
        let headers = header_pairs(&parts.headers);
        let location = header_text(&parts.headers, http::header::LOCATION);
        let content_type = header_text(&parts.headers, http::header::CONTENT_TYPE);
        let body = http_body_util::Limited::new(body, self.max_body_bytes)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    DiscoveryError::TooLarge {
                        url: req.log_url.clone(),
                        limit: self.max_body_bytes,
                    }
                } else {
                    DiscoveryError::Transport {
                        url: req.log_url.clone(),
                        kind: TransportErrorKind::Io,
                        message: describe(&*e),
                    }
                }
            })?
            .to_bytes();
        if tracing::enabled!(target: "a2at::protocol", tracing::Level::DEBUG) {
            tracing::debug!(target: "a2at::protocol", "{}", protolog::format_response_head(&ctx, status, &headers, &self.log));
            tracing::debug!(target: "a2at::protocol", "{}", protolog::format_response_body(&ctx, content_type.as_deref(), &body, &self.log));
        }
        Ok((status, location, body))
    }
}

fn response_error(
    url: String,
) -> impl FnOnce(core_discovery::DiscoveryResponseError) -> DiscoveryError {
    move |source| DiscoveryError::Response { url, source }
}

/// The settings both discovery clients share.
#[derive(Clone)]
struct Settings<R> {
    tls: TlsConfig,
    deadline: Duration,
    max_body_bytes: usize,
    http: Option<HttpClient<R>>,
    proxy: Option<ProxyConfig>,
    request_hook: Option<RequestHook>,
    log: Option<LogConfig>,
}

impl<R: Runtime> Default for Settings<R> {
    fn default() -> Self {
        Settings {
            tls: TlsConfig::default(),
            deadline: DEFAULT_DISCOVERY_DEADLINE,
            max_body_bytes: DEFAULT_MAX_DISCOVERY_BODY_BYTES,
            http: None,
            proxy: None,
            request_hook: None,
            log: None,
        }
    }
}

impl<R: Runtime> Settings<R> {
    fn fetcher(self, label: &'static str) -> Result<Fetcher<R>, DiscoveryError> {
        if self.deadline.is_zero() {
            return Err(DiscoveryError::Config("the deadline must be positive"));
        }
        if self.max_body_bytes == 0 {
            return Err(DiscoveryError::Config("the body cap must be positive"));
        }
        if self.tls.insecure_skip_chain_verification {
            tracing::warn!(
                "[{label}] INSECURE_TLS: this discovery client does not verify certificate chains"
            );
        }
        let client = own_client(
            self.http,
            &self.tls,
            self.proxy,
            self.request_hook,
            None,
            PoolConfig::default(),
        )?;
        let log = match self.log {
            Some(l) => l,
            None => protocol_log_config(&EnvLookup::process(), None)?,
        };
        Ok(Fetcher {
            client,
            deadline: self.deadline,
            max_body_bytes: self.max_body_bytes,
            log,
            label,
        })
    }
}

macro_rules! settings_setters {
    ($builder:ident) => {
        impl<R: Runtime> $builder<R> {
            /// The TLS policy of this client's own connections (default: verify against the
            /// webpki roots). The development-only insecure mode applies to this client only
            /// and logs a warning.
            pub fn tls(mut self, tls: TlsConfig) -> Self {
                self.settings.tls = tls;
                self
            }

            /// The deadline of each call for the complete response, body included (default
            /// 30 s; must be positive).
            pub fn deadline(mut self, deadline: Duration) -> Self {
                self.settings.deadline = deadline;
                self
            }

            /// The largest response body accepted (default 16 MiB; must be positive). A larger
            /// one fails the call with [`DiscoveryError::TooLarge`].
            pub fn max_body_bytes(mut self, limit: usize) -> Self {
                self.settings.max_body_bytes = limit;
                self
            }

            /// The proxy settings of this client's own connections, as
            /// [`EngineBuilder::proxy`](crate::EngineBuilder::proxy) (default: the
            /// environment's).
            pub fn proxy(mut self, proxy: ProxyConfig) -> Self {
                self.settings.proxy = Some(proxy);
                self
            }

            /// Edits every request of this client's own connections, as
            /// [`EngineBuilder::request_hook`](crate::EngineBuilder::request_hook).
            pub fn request_hook(mut self, hook: RequestHook) -> Self {
                self.settings.request_hook = Some(hook);
                self
            }

            /// Sends through this HTTP client (its TLS policy applies) instead of a new one.
            pub fn http_client(mut self, client: HttpClient<R>) -> Self {
                self.settings.http = Some(client);
                self
            }

            /// Protocol log settings (default: read from the environment). Redaction is
            /// not a setting.
            pub fn protocol_log(mut self, log: LogConfig) -> Self {
                self.settings.log = Some(log);
                self
            }
        }
    };
}

// ------------------------------------------------------------------------------------------
// Registry
// ------------------------------------------------------------------------------------------

/// A card registry: fetch all cards, fetch one by name and organisation, register
/// a card.
#[derive(Clone)]
pub struct RegistryClient<R> {
    core: core_discovery::RegistryRequests,
    fetcher: Fetcher<R>,
}

impl<R> std::fmt::Debug for RegistryClient<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient")
            .field("base", &protolog::redact_url(self.core.base()))
            .field("deadline", &self.fetcher.deadline)
            .finish_non_exhaustive()
    }
}

/// Builds a [`RegistryClient`].
pub struct RegistryClientBuilder<R> {
    url: String,
    settings: Settings<R>,
}

impl<R> std::fmt::Debug for RegistryClientBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClientBuilder")
            .field("url", &protolog::redact_url(&self.url))
            .field("deadline", &self.settings.deadline)
            .field("tls", &self.settings.tls)
            .finish_non_exhaustive()
    }
}

settings_setters!(RegistryClientBuilder);

impl<R: Runtime> RegistryClientBuilder<R> {
    /// Builds the client (and its HTTP client): a TLS policy that cannot be built or a zero
    /// deadline is an error.
    pub fn build(self) -> Result<RegistryClient<R>, DiscoveryError> {
        Ok(RegistryClient {
            core: core_discovery::RegistryRequests::new(&self.url),
            fetcher: self.settings.fetcher("Registry")?,
        })
    }
}

impl<R: Runtime> RegistryClient<R> {
    /// A client for the registry at `url` (a trailing `/` is stripped) with the defaults:
    /// verified TLS, 30 s deadline.
    pub fn new(url: &str) -> Result<RegistryClient<R>, DiscoveryError> {
        RegistryClient::builder(url).build()
    }

    /// Starts building a client for the registry at `url`.
    pub fn builder(url: &str) -> RegistryClientBuilder<R> {
        RegistryClientBuilder {
            url: url.to_owned(),
            settings: Settings::default(),
        }
    }

    /// The base URL, trailing `/` stripped.
    pub fn base(&self) -> &str {
        self.core.base()
    }

    /// The deadline of each call.
    pub fn deadline(&self) -> Duration {
        self.fetcher.deadline
    }

    /// This client's HTTP client (e.g. to read [`HttpClient::requests_sent`]).
    pub fn http_client(&self) -> &HttpClient<R> {
        &self.fetcher.client
    }

    /// Every card of the registry, normalised: `GET {url}/rest/v1/registry-center/agent-cards`,
    /// cards from `agentCards`, else `data`, else none. Non-200 and an invalid card are errors.
    pub async fn fetch_agent_cards(&self) -> Result<Vec<AgentCard>, DiscoveryError> {
        let a = self.fetcher.fetch(self.core.fetch_all_request()).await?;
        core_discovery::RegistryRequests::parse_cards(a.status, &a.body)
            .map_err(response_error(a.url))
    }

    /// The first card named `name` (in `organization`, when given), or `None`.
    pub async fn fetch_agent_card(
        &self,
        name: &str,
        organization: Option<&str>,
    ) -> Result<Option<AgentCard>, DiscoveryError> {
        let req = self.core.fetch_by_name_request(name, organization);
        let a = self.fetcher.fetch(req).await?;
        core_discovery::RegistryRequests::parse_card(a.status, &a.body)
            .map_err(response_error(a.url))
    }

    /// Registers `card` (its JSON, e.g. [`AgentCard::to_json`]) with a POST of
    /// `{"agentCards":[card]}`. HTTP 200/201 is success; any other status is logged as a
    /// warning and returned as an unsuccessful outcome with the parsed body. Only a failed
    /// exchange is an error.
    pub async fn register_agent_card(
        &self,
        card: &Value,
    ) -> Result<RegisterOutcome, DiscoveryError> {
        let a = self.fetcher.fetch(self.core.register_request(card)).await?;
        let outcome = core_discovery::RegistryRequests::parse_register(a.status, &a.body);
        if !outcome.success {
            tracing::warn!(url = %a.url, status = a.status, "[Registry] card registration was not accepted");
        }
        Ok(outcome)
    }
}

// ------------------------------------------------------------------------------------------
// PSOP store
// ------------------------------------------------------------------------------------------

/// A PSOP workflow store (`LoadPsop`): load a workflow by id, search by intent.
/// The access token travels as the `access_token` query parameter and is logged as
/// `<anonymous>`.
#[doc(alias = "LoadPsop")]
#[derive(Clone)]
pub struct PsopClient<R> {
    core: core_discovery::PsopRequests,
    fetcher: Fetcher<R>,
}

impl<R> std::fmt::Debug for PsopClient<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PsopClient")
            .field("deadline", &self.fetcher.deadline)
            .finish_non_exhaustive()
    }
}

/// Builds a [`PsopClient`].
pub struct PsopClientBuilder<R> {
    base: String,
    access_token: Option<Secret>,
    settings: Settings<R>,
}

impl<R> std::fmt::Debug for PsopClientBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PsopClientBuilder")
            .field("base", &protolog::redact_url(&self.base))
            .field("access_token", &self.access_token.as_ref().map(|_| "***"))
            .field("deadline", &self.settings.deadline)
            .field("tls", &self.settings.tls)
            .finish_non_exhaustive()
    }
}

settings_setters!(PsopClientBuilder);

impl<R: Runtime> PsopClientBuilder<R> {
    /// The access token to send as the `access_token` query parameter.
    pub fn access_token(mut self, token: impl Into<String>) -> Self {
        self.access_token = Some(Secret::new(token));
        self
    }

    /// Builds the client (and its HTTP client): a TLS policy that cannot be built or a zero
    /// deadline is an error.
    pub fn build(self) -> Result<PsopClient<R>, DiscoveryError> {
        Ok(PsopClient {
            core: core_discovery::PsopRequests::new(&self.base, self.access_token),
            fetcher: self.settings.fetcher("LoadPsop")?,
        })
    }
}

impl<R: Runtime> PsopClient<R> {
    /// A client for the store at `base` (a trailing `/` is stripped) without an access token,
    /// with verified TLS and a 30 s deadline.
    pub fn new(base: &str) -> Result<PsopClient<R>, DiscoveryError> {
        PsopClient::builder(base).build()
    }

    /// Starts building a client for the store at `base`.
    pub fn builder(base: &str) -> PsopClientBuilder<R> {
        PsopClientBuilder {
            base: base.to_owned(),
            access_token: None,
            settings: Settings::default(),
        }
    }

    /// The deadline of each call.
    pub fn deadline(&self) -> Duration {
        self.fetcher.deadline
    }

    /// This client's HTTP client (e.g. to read [`HttpClient::requests_sent`]).
    pub fn http_client(&self) -> &HttpClient<R> {
        &self.fetcher.client
    }

    /// The workflow JSON text of PSOP `psop_id` (`GET {base}/api/v1/orchestrate/psop/{id}`,
    /// unwrapped from `data`), without validating it. Non-200 is an error.
    pub async fn load_json(&self, psop_id: &str) -> Result<String, DiscoveryError> {
        let a = self.fetcher.fetch(self.core.load_request(psop_id)).await?;
        core_discovery::PsopRequests::load_json(a.status, &a.body).map_err(response_error(a.url))
    }

    /// Loads PSOP `psop_id` and validates it as a workflow.
    pub async fn load(&self, psop_id: &str) -> Result<ValidatedWorkflow, DiscoveryError> {
        let a = self.fetcher.fetch(self.core.load_request(psop_id)).await?;
        core_discovery::PsopRequests::parse_load(a.status, &a.body).map_err(response_error(a.url))
    }

    /// Searches workflows by `intent` (`POST {base}/api/v1/orchestrate/search` with
    /// `{"intent", "top_n"}`; `top_n` defaults to 5) and returns the summaries of `data[]`.
    pub async fn search(
        &self,
        intent: &str,
        top_n: Option<u32>,
    ) -> Result<Vec<WorkflowSearchResult>, DiscoveryError> {
        let a = self
            .fetcher
            .fetch(self.core.search_request(intent, top_n))
            .await?;
        core_discovery::PsopRequests::parse_search(a.status, &a.body).map_err(response_error(a.url))
    }
}
