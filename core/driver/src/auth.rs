//! Built-in credential authentication at the transport: the plan per agent (from its card and
//! the credentials file), the token cache with one login at a time, and the login exchange.
//!
//! Every rule lives in `a2at_core::auth`; this file only carries out the login request and
//! guards the cache.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2at_core::a2a::AgentCard;
use a2at_core::agents::AgentDirectory;
use a2at_core::auth::{
    AuthContext, AuthMaterial, AuthPlan, CredentialsConfig, PendingLogin, Resolution, TokenCache,
    parse_login_response, plan_auth,
};
use a2at_core::protolog::{self, LogConfig};
use futures::future::{BoxFuture, Either, Ready, ready};
use http_body_util::BodyExt;

use crate::http::{HttpClient, build_request, header_text};
use crate::runtime::{Runtime, within};

/// The authentication plans of an engine's agents and its token cache.
pub(crate) struct Authenticator {
    /// Agent → its plan, or why no request to it may be sent (e.g. required credentials are
    /// missing: never send unauthenticated). Updated when the engine's cards change; the plan
    /// of a removed agent stays, so a run still holding its old card never sends to it
    /// unauthenticated.
    plans: std::sync::RwLock<BTreeMap<String, Planned>>,
    /// The credentials the plans come from, kept to plan the cards added later.
    credentials: Option<CredentialsConfig>,
    /// Whether an [`AuthHook`](crate::AuthHook) is configured.
    provider: bool,
    /// Held across a login, so a (agent, scheme) is never logged in twice at once.
    cache: async_lock::Mutex<TokenCache>,
    /// Deadline of one login, body included.
    login_timeout: Duration,
}

impl Authenticator {
    /// Plans every agent of `directory`. `provider` says whether an [`AuthHook`](crate::AuthHook)
    /// is configured, which may then be the only auth source.
    pub(crate) fn new(
        directory: &AgentDirectory,
        credentials: Option<&CredentialsConfig>,
        provider: bool,
        login_timeout: Duration,
    ) -> Authenticator {
        let plans = directory
            .names()
            .filter_map(|name| {
                let entry = directory.get(name)?;
                Some((
                    name.to_owned(),
                    Planned {
                        plan: plan_card(&entry.card, credentials, provider),
                        generation: 0,
                    },
                ))
            })
            .collect();
        Authenticator {
            plans: std::sync::RwLock::new(plans),
            credentials: credentials.cloned(),
            provider,
            cache: async_lock::Mutex::new(TokenCache::new()),
            login_timeout,
        }
    }

    /// What to add to a request to `agent`, logging in first when a token is missing or stale.
    ///
    /// Ready at once for an agent without credentials. Resolving credentials is boxed: it
    /// concerns few agents, and every exchange's future would otherwise carry its state.
    pub(crate) fn material<'a, R: Runtime>(
        &'a self,
        agent: &'a str,
        client: &'a HttpClient<R>,
        log: &'a LogConfig,
    ) -> Either<Ready<MaterialResult>, BoxFuture<'a, MaterialResult>> {
        // A copy: the plans may change while this request logs in.
        let Some(Planned { plan, generation }) = self.plan(agent) else {
            return Either::Left(ready(Ok(AuthMaterial::default())));
        };
        match plan {
            Err(e) => Either::Left(ready(Err(e))),
            Ok(plan) if plan.is_empty() => Either::Left(ready(Ok(AuthMaterial::default()))),
            Ok(plan) => Either::Right(Box::pin(self.resolve(plan, generation, agent, client, log))),
        }
    }

    /// The material of `agent`'s non-empty `plan`, logging in first when a token is missing or
    /// stale.
    async fn resolve<R: Runtime>(
        &self,
        plan: AuthPlan,
        generation: u64,
        agent: &str,
        client: &HttpClient<R>,
        log: &LogConfig,
    ) -> Result<AuthMaterial, String> {
        // Tokens are cached per plan: a token logged in for an agent's old card (its login
        // endpoint, its scheme) is never sent under the card that replaced it.
        let key = cache_key(agent, generation);
        let mut cache = self.cache.lock().await;
        loop {
            match plan
                .resolve(&key, &mut cache, now())
                .map_err(|e| e.to_string())?
            {
                Resolution::Ready(material) => return Ok(material),
                Resolution::Login(pending) => {
                    // Boxed: a login is a whole HTTP exchange, rare next to the requests that
                    // reuse its token, and every exchange's future would otherwise carry it.
                    match Box::pin(within::<R, _>(
                        self.login_timeout,
                        login(client, &pending, agent, log),
                    ))
                    .await
                    .unwrap_or_else(|| {
                        Err(format!(
                            "no complete login response within {:?}",
                            self.login_timeout
                        ))
                    }) {
                        Ok(token) => cache.finish_login(
                            &key,
                            &pending.scheme,
                            token,
                            pending.token_ttl,
                            now(),
                        ),
                        Err(e) => {
                            cache.fail_login(&key, &pending.scheme);
                            return Err(format!(
                                "login for {agent}/{} failed: {e}",
                                pending.scheme
                            ));
                        }
                    }
                }
                // Only the lock holder logs in, and it finishes before releasing the lock.
                Resolution::Wait { scheme } => {
                    return Err(format!("login for {agent}/{scheme} is stuck in progress"));
                }
            }
        }
    }
}

/// The material for one request, or why there is none.
type MaterialResult = Result<AuthMaterial, String>;

impl Authenticator {
    /// The plan of `agent` now.
    fn plan(&self, agent: &str) -> Option<Planned> {
        // A poisoned lock only means a panic elsewhere while swapping a plan in: the map
        // itself is always whole.
        let plans = self.plans.read().unwrap_or_else(|e| e.into_inner());
        plans.get(agent).cloned()
    }

    /// Plans `card` with the engine's credentials, without installing it.
    pub(crate) fn plan_for(&self, card: &AgentCard) -> Result<AuthPlan, String> {
        plan_card(card, self.credentials.as_ref(), self.provider)
    }

    /// Installs the plan of an agent whose card is now `plan`'s. A plan that differs from the
    /// agent's current one starts a new token generation (the old tokens are no longer used).
    pub(crate) fn install(&self, agent: &str, plan: AuthPlan) {
        let mut plans = self.plans.write().unwrap_or_else(|e| e.into_inner());
        let generation = match plans.get(agent) {
            None => 0,
            Some(old) if old.plan.as_ref() == Ok(&plan) => old.generation,
            Some(old) => old.generation + 1,
        };
        plans.insert(
            agent.to_owned(),
            Planned {
                plan: Ok(plan),
                generation,
            },
        );
    }
}

/// An agent's plan and how many times it changed.
#[derive(Clone)]
struct Planned {
    plan: Result<AuthPlan, String>,
    /// Part of the token cache key, so a changed plan never uses the old plan's tokens.
    generation: u64,
}

/// The token cache key of `agent` under plan `generation`: the agent name itself for the plan
/// it started with (the cache reads as before), with the generation appended after a change.
fn cache_key(agent: &str, generation: u64) -> String {
    if generation == 0 {
        agent.to_owned()
    } else {
        // After a NUL, which no real agent name holds; the key is never shown.
        format!("{agent}\u{0}{generation}")
    }
}

/// The plan of one card: never a plan that would send unauthenticated when the card requires
/// credentials that are missing (then the reason, naming schemes, never a secret).
fn plan_card(
    card: &AgentCard,
    credentials: Option<&CredentialsConfig>,
    provider: bool,
) -> Result<AuthPlan, String> {
    let ctx = AuthContext {
        provider_configured: provider,
        client_certificate: false,
    };
    let creds = credentials.and_then(|c| c.agent(&card.name));
    plan_auth(card, creds, ctx).map_err(|e| e.to_string())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Sends the login request (with the engine's HTTP client, so the same TLS policy) and reads
/// the token. Request and response go to the protocol log, redacted (request fields such as
/// `password` and the token in the response are masked).
async fn login<R: Runtime>(
    client: &HttpClient<R>,
    pending: &PendingLogin,
    agent: &str,
    log: &LogConfig,
) -> Result<a2at_core::auth::Token, String> {
    let req = &pending.request;
    let logging = tracing::enabled!(target: "a2at::protocol", tracing::Level::DEBUG);
    if logging {
        tracing::debug!(target: "a2at::protocol", "{}", protolog::format_login_request(agent, &pending.scheme, req, log));
    }
    let method = http::Method::from_bytes(req.method.as_bytes()).map_err(|e| e.to_string())?;
    let request = build_request(method, &req.url, &req.headers, req.body.clone())
        .map_err(|e| e.to_string())?;
    let response = client.send(request).await.map_err(|(_, message)| message)?;
    let status = response.status().as_u16();
    let content_type = header_text(response.headers(), http::header::CONTENT_TYPE);
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let token = parse_login_response(status, &body, &pending.token_field);
    if logging {
        let shown = match &token {
            Ok(t) => protolog::mask_login_token(&body, t.value.expose()),
            Err(_) => body.to_vec(),
        };
        let entry = protolog::format_login_response(
            agent,
            &pending.scheme,
            status,
            content_type.as_deref(),
            &shown,
            log,
        );
        tracing::debug!(target: "a2at::protocol", "{entry}");
    }
    token.map_err(|e| e.to_string())
}
