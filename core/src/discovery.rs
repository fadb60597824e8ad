//! Discovery helpers without I/O: request builders and response parsers
//! for a card registry ([`RegistryRequests`]) and a PSOP workflow store ([`PsopRequests`]).
//!
//! Timing, caching, TLS (`sslVerify=false` for that connection only), the 30 s
//! deadlines and redirects belong to the runtime that sends the [`DiscoveryRequest`]s.
//! Every request carries a [`DiscoveryRequest::log_url`] in which the access token reads
//! `<anonymous>`: log that one, send [`DiscoveryRequest::url`].

use crate::a2a::HttpMethod;
use crate::a2a::card::{AgentCard, CardError};
use crate::auth::Secret;
use crate::urlenc::{append_query, url_encode};

pub use crate::redact::ANONYMOUS;
use crate::workflow::{ValidatedWorkflow, WorkflowError, parse_and_validate};
use serde_json::{Value, json};

/// The registry path under the base URL.
pub const REGISTRY_PATH: &str = "/rest/v1/registry-center/agent-cards";
/// The default number of search results.
pub const DEFAULT_TOP_N: u32 = 5;

/// A discovery HTTP request to send.
#[derive(Clone, PartialEq, Eq)]
pub struct DiscoveryRequest {
    /// Method.
    pub method: HttpMethod,
    /// The URL to send (may hold an access token).
    pub url: String,
    /// The URL to log: the access token reads `<anonymous>`.
    pub log_url: String,
    /// Headers (`Accept`, and `Content-Type` with a body).
    pub headers: Vec<(String, String)>,
    /// JSON body (empty for GET).
    pub body: Vec<u8>,
}

impl std::fmt::Debug for DiscoveryRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryRequest")
            .field("method", &self.method)
            .field("url", &self.log_url)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

/// Redirects a discovery call follows before giving up.
pub const MAX_REDIRECTS: usize = 10;

impl DiscoveryRequest {
    /// The request to send after an answer with `status` and `location`: `Ok(None)` when the
    /// answer is not a redirect (301, 302, 303, 307, 308 with a `Location`). 307 and 308 repeat
    /// the request as it was; 301, 302 and 303 continue with a GET without body. An absolute
    /// `http(s)` location is taken as it is, `/path` stays on the same origin; any other form
    /// is refused (`Err` says why), so a redirect cannot switch to another scheme.
    pub fn redirected(
        &self,
        status: u16,
        location: Option<&str>,
    ) -> Result<Option<DiscoveryRequest>, String> {
        if !matches!(status, 301 | 302 | 303 | 307 | 308) {
            return Ok(None);
        }
        let Some(location) = location else {
            return Ok(None);
        };
        let next = resolve_location(&self.url, location)
            .ok_or_else(|| format!("HTTP {status} with an unusable Location header"))?;
        let mut req = self.clone();
        if !matches!(status, 307 | 308) {
            req.method = HttpMethod::Get;
            req.body.clear();
            req.headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
        }
        req.log_url = log_url(&next);
        req.url = next;
        Ok(Some(req))
    }
}

/// `location` resolved against `base`: absolute `http(s)` URLs as they are, `/path` on the
/// origin of `base`.
fn resolve_location(base: &str, location: &str) -> Option<String> {
    let location = location.trim();
    if location.starts_with("http://") || location.starts_with("https://") {
        return Some(location.to_owned());
    }
    if !location.starts_with('/') || location.starts_with("//") {
        return None;
    }
    let (scheme, rest) = base.split_once("://")?;
    let authority = rest
        .split(['/', '?', '#'])
        .next()
        .filter(|a| !a.is_empty())?;
    Some(format!("{scheme}://{authority}{location}"))
}

/// Why a discovery response cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryResponseError {
    /// Not HTTP 200.
    #[error("discovery request failed with HTTP {status}")]
    Status {
        /// The HTTP status.
        status: u16,
    },
    /// The body is not JSON.
    #[error("discovery response is not JSON: {0}")]
    NotJson(String),
    /// The body has an unexpected shape.
    #[error("unexpected discovery response: {0}")]
    Shape(&'static str),
    /// A registry card is invalid.
    #[error("registry card #{index}: {error}")]
    InvalidCard {
        /// Position in the returned list.
        index: usize,
        /// The card error.
        error: CardError,
    },
    /// The PSOP workflow is invalid.
    #[error("PSOP workflow: {0}")]
    Workflow(#[from] WorkflowError),
}

/// Strips trailing `/` from a base URL.
pub fn base_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}

/// Appends `access_token=<token>` to `url` when a token is given, returning the URL to send and
/// the URL to log (`access_token=<anonymous>`).
pub fn with_access_token(url: &str, token: Option<&Secret>) -> (String, String) {
    match token {
        None => (url.to_owned(), url.to_owned()),
        Some(t) => {
            let wire = append_query(url, &[("access_token".to_owned(), t.expose().to_owned())]);
            let log = append_query(url, &[("access_token".to_owned(), String::new())]);
            (wire, format!("{log}{ANONYMOUS}"))
        }
    }
}

/// The logged form of a discovery URL, e.g. one taken from a redirect: an `access_token`
/// query value reads `<anonymous>` and every other secret is masked as everywhere else.
pub fn log_url(url: &str) -> String {
    let (before_frag, frag) = url.split_at(url.find('#').unwrap_or(url.len()));
    let with_placeholder = match before_frag.split_once('?') {
        None => url.to_owned(),
        Some((base, query)) => {
            let query = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some(("access_token", _)) => format!("access_token={ANONYMOUS}"),
                    _ => pair.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("&");
            format!("{base}?{query}{frag}")
        }
    };
    crate::redact::redact_url(&with_placeholder)
}

fn get(url: String, log_url: String) -> DiscoveryRequest {
    DiscoveryRequest {
        method: HttpMethod::Get,
        url,
        log_url,
        headers: vec![("Accept".to_owned(), "application/json".to_owned())],
        body: Vec::new(),
    }
}

fn post(url: String, log_url: String, body: &Value) -> DiscoveryRequest {
    DiscoveryRequest {
        method: HttpMethod::Post,
        url,
        log_url,
        headers: vec![
            ("Accept".to_owned(), "application/json".to_owned()),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ],
        body: body.to_string().into_bytes(),
    }
}

fn json_200(status: u16, body: &[u8]) -> Result<Value, DiscoveryResponseError> {
    if status != 200 {
        return Err(DiscoveryResponseError::Status { status });
    }
    serde_json::from_slice(body).map_err(|e| DiscoveryResponseError::NotJson(e.to_string()))
}

// ------------------------------------------------------------------------------------------
// Registry (DS-2..DS-5)
// ------------------------------------------------------------------------------------------

/// A card registry at a base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryRequests {
    base: String,
}

/// The outcome of a registration.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisterOutcome {
    /// HTTP 200 or 201.
    pub success: bool,
    /// The HTTP status.
    pub status: u16,
    /// The parsed body (`Null` when empty or not JSON).
    pub body: Value,
}

impl RegistryRequests {
    /// A client for the registry at `url` (trailing `/` stripped).
    pub fn new(url: &str) -> RegistryRequests {
        RegistryRequests {
            base: base_url(url),
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn endpoint(&self) -> String {
        format!("{}{REGISTRY_PATH}", self.base)
    }

    /// `GET {url}/rest/v1/registry-center/agent-cards`.
    pub fn fetch_all_request(&self) -> DiscoveryRequest {
        get(self.endpoint(), self.endpoint())
    }

    /// The same path with query `name` and, when given, `organization`.
    pub fn fetch_by_name_request(
        &self,
        name: &str,
        organization: Option<&str>,
    ) -> DiscoveryRequest {
        let mut q = vec![("name".to_owned(), name.to_owned())];
        if let Some(o) = organization {
            q.push(("organization".to_owned(), o.to_owned()));
        }
        let url = append_query(&self.endpoint(), &q);
        get(url.clone(), url)
    }

    /// POST on the same path with body `{"agentCards":[card]}`. Pass
    /// [`AgentCard::to_json`] or the card JSON as the host has it.
    pub fn register_request(&self, card: &Value) -> DiscoveryRequest {
        post(
            self.endpoint(),
            self.endpoint(),
            &json!({ "agentCards": [card] }),
        )
    }

    /// Reads the cards of a fetch: from `agentCards`, else `data`, else none (a bare
    /// list is accepted too); each is normalised and parsed. Non-200 is an
    /// error, and so is an invalid card (naming its index).
    pub fn parse_cards(status: u16, body: &[u8]) -> Result<Vec<AgentCard>, DiscoveryResponseError> {
        let v = json_200(status, body)?;
        let list = match &v {
            Value::Array(a) => a.clone(),
            Value::Object(m) => match m.get("agentCards").or_else(|| m.get("data")) {
                Some(Value::Array(a)) => a.clone(),
                None | Some(Value::Null) => Vec::new(),
                Some(_) => {
                    return Err(DiscoveryResponseError::Shape(
                        "agentCards/data is not a list",
                    ));
                }
            },
            _ => return Err(DiscoveryResponseError::Shape("not an object")),
        };
        list.iter()
            .enumerate()
            .map(|(index, c)| {
                AgentCard::from_json_value(c)
                    .map_err(|error| DiscoveryResponseError::InvalidCard { index, error })
            })
            .collect()
    }

    /// The first card of a by-name fetch, or `None`.
    pub fn parse_card(
        status: u16,
        body: &[u8],
    ) -> Result<Option<AgentCard>, DiscoveryResponseError> {
        Ok(RegistryRequests::parse_cards(status, body)?
            .into_iter()
            .next())
    }

    /// The outcome of a registration: 200/201 is success; the parsed body is returned either
    /// way. The runtime logs a failure.
    pub fn parse_register(status: u16, body: &[u8]) -> RegisterOutcome {
        RegisterOutcome {
            success: status == 200 || status == 201,
            status,
            body: serde_json::from_slice(body).unwrap_or(Value::Null),
        }
    }
}

// ------------------------------------------------------------------------------------------
// PSOP store (DS-6..DS-8)
// ------------------------------------------------------------------------------------------

/// A PSOP workflow store at a base URL, with an optional access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PsopRequests {
    base: String,
    access_token: Option<Secret>,
}

/// One search hit. Load the full workflow with [`PsopRequests::load_request`] and its
/// `workflow_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowSearchResult {
    /// `workflow_id`, or its alias `id` (numbers stringified).
    pub workflow_id: String,
    /// `workflow_type`.
    pub workflow_type: Option<String>,
    /// `name`.
    pub name: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `tags` (non-string entries stringified).
    pub tags: Vec<String>,
    /// `created_at`, stringified.
    pub created_at: Option<String>,
    /// `score`; 1.0 when absent or not a number.
    pub score: f64,
    /// `user_intent`.
    pub user_intent: Option<String>,
    /// `related_preflow`, as given.
    pub related_preflow: Option<Value>,
    /// `tasks_summary`, as given.
    pub tasks_summary: Option<Value>,
}

fn stringify(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

impl WorkflowSearchResult {
    /// Reads one entry of `data[]`.
    pub fn from_json(v: &Value) -> Result<WorkflowSearchResult, DiscoveryResponseError> {
        let m = v.as_object().ok_or(DiscoveryResponseError::Shape(
            "a search result is not an object",
        ))?;
        let workflow_id = stringify(m.get("workflow_id"))
            .or_else(|| stringify(m.get("id")))
            .ok_or(DiscoveryResponseError::Shape(
                "a search result has no workflow_id/id",
            ))?;
        let tags = match m.get("tags") {
            Some(Value::Array(a)) => a.iter().filter_map(|t| stringify(Some(t))).collect(),
            _ => Vec::new(),
        };
        let opt = |k: &str| m.get(k).filter(|v| !v.is_null()).cloned();
        Ok(WorkflowSearchResult {
            workflow_id,
            workflow_type: stringify(m.get("workflow_type")),
            name: stringify(m.get("name")),
            description: stringify(m.get("description")),
            tags,
            created_at: stringify(m.get("created_at")),
            score: m.get("score").and_then(Value::as_f64).unwrap_or(1.0),
            user_intent: stringify(m.get("user_intent")),
            related_preflow: opt("related_preflow"),
            tasks_summary: opt("tasks_summary"),
        })
    }
}

impl PsopRequests {
    /// A client for the store at `base` (trailing `/` stripped).
    pub fn new(base: &str, access_token: Option<Secret>) -> PsopRequests {
        PsopRequests {
            base: base_url(base),
            access_token,
        }
    }

    /// `GET {base}/api/v1/orchestrate/psop/{psop_id}[?access_token=…]`.
    pub fn load_request(&self, psop_id: &str) -> DiscoveryRequest {
        let url = format!(
            "{}/api/v1/orchestrate/psop/{}",
            self.base,
            url_encode(psop_id)
        );
        let (wire, log) = with_access_token(&url, self.access_token.as_ref());
        get(wire, log)
    }

    /// `POST {base}/api/v1/orchestrate/search[?access_token=…]` with body
    /// `{"intent": …, "top_n": …}`; `top_n` defaults to 5.
    pub fn search_request(&self, intent: &str, top_n: Option<u32>) -> DiscoveryRequest {
        let url = format!("{}/api/v1/orchestrate/search", self.base);
        let (wire, log) = with_access_token(&url, self.access_token.as_ref());
        post(
            wire,
            log,
            &json!({"intent": intent, "top_n": top_n.unwrap_or(DEFAULT_TOP_N)}),
        )
    }

    /// The workflow JSON of a load response: non-200 is an error; the body is unwrapped from
    /// `data` when that key is present (a string `data` is taken as workflow JSON text).
    pub fn load_json(status: u16, body: &[u8]) -> Result<String, DiscoveryResponseError> {
        let v = json_200(status, body)?;
        Ok(match v {
            Value::Object(mut m) if m.contains_key("data") => match m.remove("data") {
                Some(Value::String(s)) => s,
                Some(d) => d.to_string(),
                None => String::new(),
            },
            other => other.to_string(),
        })
    }

    /// Parses and validates the workflow of a load response.
    pub fn parse_load(
        status: u16,
        body: &[u8],
    ) -> Result<ValidatedWorkflow, DiscoveryResponseError> {
        Ok(parse_and_validate(&PsopRequests::load_json(status, body)?)?)
    }

    /// The summaries of a search response (`data[]`; a bare list is accepted too).
    pub fn parse_search(
        status: u16,
        body: &[u8],
    ) -> Result<Vec<WorkflowSearchResult>, DiscoveryResponseError> {
        let v = json_200(status, body)?;
        let list = match &v {
            Value::Array(a) => a,
            Value::Object(m) => match m.get("data") {
                Some(Value::Array(a)) => a,
                None | Some(Value::Null) => return Ok(Vec::new()),
                Some(_) => return Err(DiscoveryResponseError::Shape("data is not a list")),
            },
            _ => return Err(DiscoveryResponseError::Shape("not an object")),
        };
        list.iter().map(WorkflowSearchResult::from_json).collect()
    }
}
