//! Built-in authentication without I/O (features.md §1.15 AU, a2a-wire §5.1).
//!
//! * [`CredentialsConfig`]: the credentials file, parsed strictly, with `enc:` values
//!   decrypted at load time so that a bad value fails at startup, never later.
//! * [`plan_auth`]: picks the security requirement of a card that the credentials satisfy
//!   and returns an [`AuthPlan`], or an error that blocks the send.
//! * [`AuthPlan::resolve`] with a [`TokenCache`]: either the [`AuthMaterial`] to put on the
//!   request, or the [`LoginRequest`] to send first, or "wait for the login that
//!   is already running".
//! * [`merge_headers`] and [`apply`]: merge an AuthProvider's headers and put everything
//!   on an [`HttpRequest`].
//!
//! # How a runtime uses this module
//!
//! ```text
//! creds = CredentialsConfig::from_json_str(text, key)?          // at startup; key from config or A2AT_CRED_KEY
//! plan  = plan_auth(card, creds.agent(name), AuthContext{..})?  // per request; Err blocks the send
//! loop {
//!   match plan.resolve(name, &mut cache, now_epoch_secs)? {
//!     Resolution::Ready(m)   => { apply(&m, provider_headers, &mut req)?; send(req); break }
//!     Resolution::Login(l)   => { let resp = send(l.request);                 // 30 s timeout, same TLS
//!                                 match parse_login_response(resp.status, &resp.body, &l.token_field) {
//!                                   Ok(t)  => cache.finish_login(name, &l.scheme, t, l.token_ttl, now),
//!                                   Err(e) => { cache.fail_login(name, &l.scheme); fail the send } } }
//!     Resolution::Wait{..}   => wait until the running login ends, then loop
//!   }
//! }
//! ```
//!
//! Secrets are held in [`Secret`], whose `Debug` prints `***`.

use crate::io::HttpRequest;
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::urlenc::hex_digit;
pub use crate::urlenc::{append_query, is_form_content_type, url_decode, url_encode};

use crate::a2a::card::{AgentCard, SecurityScheme};

/// Tokens are refreshed this many seconds before they expire.
pub const REFRESH_SKEW_SECS: u64 = 60;
/// The default token lifetime in seconds.
pub const DEFAULT_TOKEN_TTL_SECS: u64 = 3600;
/// The prefix of encrypted credential values.
pub const ENC_PREFIX: &str = "enc:";

// ------------------------------------------------------------------------------------------
// Secrets and keys
// ------------------------------------------------------------------------------------------

/// A secret string: its `Debug` output is `***`. Read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a plaintext secret.
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }
    /// The plaintext, for the wire only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// The AES-256-GCM key of `enc:` values: 32 bytes given as 64 hex characters. Its
/// `Debug` output hides the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct CredentialKey([u8; 32]);

impl std::fmt::Debug for CredentialKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialKey(***)")
    }
}

impl CredentialKey {
    /// Parses 64 hex characters (surrounding whitespace is ignored), e.g. the output of
    /// `openssl rand -hex 32`.
    pub fn from_hex(hex: &str) -> Result<CredentialKey, CredentialError> {
        let hex = hex.trim().as_bytes();
        if hex.len() != 64 {
            return Err(CredentialError::BadKey(
                "expected 64 hex characters (32 bytes)",
            ));
        }
        let mut key = [0u8; 32];
        for (i, pair) in hex.chunks(2).enumerate() {
            let hi = hex_digit(pair[0]);
            let lo = hex_digit(pair[1]);
            match (hi, lo) {
                (Some(h), Some(l)) => key[i] = (h << 4) | l,
                _ => return Err(CredentialError::BadKey("not a hexadecimal string")),
            }
        }
        Ok(CredentialKey(key))
    }

    /// Uses raw key bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> CredentialKey {
        CredentialKey(bytes)
    }
}

/// Encrypts `plaintext` into `enc:<base64 IV>:<base64 ciphertext+tag>`. The
/// caller supplies a fresh random 12-byte IV: the core has no randomness, and reusing an IV
/// with the same key breaks AES-GCM.
pub fn encrypt_value(plaintext: &str, key: &CredentialKey, iv: [u8; 12]) -> String {
    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key.0));
    // Encryption into a Vec only fails for plaintexts longer than AES-GCM allows (~64 GiB).
    let sealed = cipher
        .encrypt(Nonce::from_slice(&iv), plaintext.as_bytes())
        .unwrap_or_default();
    format!("{ENC_PREFIX}{}:{}", B64.encode(iv), B64.encode(sealed))
}

/// Decrypts an `enc:` value; any other value is returned unchanged. Fails closed: an
/// `enc:` value without a key, with a malformed layout, with the wrong key or a tampered
/// ciphertext is an error, never the ciphertext.
pub fn decrypt_value(value: &str, key: Option<&CredentialKey>) -> Result<String, CredentialError> {
    let Some(rest) = value.strip_prefix(ENC_PREFIX) else {
        return Ok(value.to_owned());
    };
    let key = key.ok_or(CredentialError::MissingKey)?;
    let (iv_b64, ct_b64) = rest
        .split_once(':')
        .ok_or(CredentialError::MalformedEncrypted(
            "expected enc:<iv>:<ciphertext>",
        ))?;
    let iv = B64
        .decode(iv_b64.trim())
        .map_err(|_| CredentialError::MalformedEncrypted("the IV is not base64"))?;
    if iv.len() != 12 {
        return Err(CredentialError::MalformedEncrypted(
            "the IV is not 12 bytes",
        ));
    }
    let sealed = B64
        .decode(ct_b64.trim())
        .map_err(|_| CredentialError::MalformedEncrypted("the ciphertext is not base64"))?;
    if sealed.len() < 16 {
        return Err(CredentialError::MalformedEncrypted(
            "the ciphertext is shorter than the 16-byte tag",
        ));
    }
    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key.0));
    let plain = cipher
        .decrypt(Nonce::from_slice(&iv), sealed.as_slice())
        .map_err(|_| CredentialError::DecryptFailed)?;
    String::from_utf8(plain).map_err(|_| CredentialError::NotUtf8)
}

// ------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------

/// Why credentials or an `enc:` value cannot be used. Messages never contain secret values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// The configured key is not 64 hex characters.
    #[error("invalid credential key: {0}")]
    BadKey(&'static str),
    /// An `enc:` value was met but no key is configured.
    #[error("an enc: value needs the credential key (A2AT_CRED_KEY), and none is configured")]
    MissingKey,
    /// An `enc:` value is not `enc:<base64 12-byte IV>:<base64 ciphertext+tag>`.
    #[error("malformed enc: value: {0}")]
    MalformedEncrypted(&'static str),
    /// Authentication failed: wrong key or tampered value.
    #[error("enc: value does not decrypt with this key (wrong key or tampered value)")]
    DecryptFailed,
    /// The plaintext is not UTF-8.
    #[error("decrypted enc: value is not UTF-8")]
    NotUtf8,
    /// The file is not JSON.
    #[error("credentials are not valid JSON: {0}")]
    Json(String),
    /// A member of the file is wrong. `agent`/`scheme`/`field` are empty above their level.
    #[error("credentials[{agent:?}][{scheme:?}].{field}: {problem}")]
    Invalid {
        /// The agent (card name).
        agent: String,
        /// The scheme name.
        scheme: String,
        /// The field (empty for the scheme object itself).
        field: String,
        /// What is wrong.
        problem: Problem,
    },
}

/// What is wrong with one member of the credentials file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// Not a JSON object.
    #[error("must be an object")]
    NotAnObject,
    /// A key this format does not define.
    #[error("unknown field")]
    UnknownField,
    /// A needed key is absent.
    #[error("missing")]
    Missing,
    /// A key has the wrong JSON type.
    #[error("must be {0}")]
    WrongType(&'static str),
    /// Keys of different credential kinds are mixed, or none is present.
    #[error("{0}")]
    Shape(&'static str),
    /// An `enc:` value failed to decrypt.
    #[error("{0}")]
    Decrypt(Box<CredentialError>),
}

/// Why a request cannot be authenticated. Messages never contain secret values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The card requires authentication and no requirement is satisfied by the credentials,
    /// and no AuthProvider is configured: the send is blocked.
    #[error(
        "agent {agent:?} requires authentication ({required}) and no credentials match; refusing to send unauthenticated"
    )]
    NoUsableCredentials {
        /// The agent.
        agent: String,
        /// The requirements, as `a+b | c`.
        required: String,
    },
    /// A credential kind cannot serve the card's scheme (e.g. `api_key` for a bearer scheme).
    #[error(
        "credentials[{agent:?}][{scheme:?}]: a {credential} credential cannot serve {declared}"
    )]
    IncompatibleCredential {
        /// The agent.
        agent: String,
        /// The scheme name.
        scheme: String,
        /// The credential kind.
        credential: &'static str,
        /// The declared scheme kind.
        declared: &'static str,
    },
    /// The built-in headers and the AuthProvider's (or two schemes) set one header to
    /// different values.
    #[error("conflicting values for header {header:?}")]
    HeaderConflict {
        /// The header name.
        header: String,
    },
    /// [`AuthPlan::material`] was called without a token for a login scheme.
    #[error("no token for scheme {scheme:?}: log in first")]
    TokenMissing {
        /// The scheme name.
        scheme: String,
    },
    /// A credential placed in the URL query cannot travel on gRPC, whose method path takes no
    /// query: the send is blocked rather than made to a path the server does not route.
    #[error("agent {agent:?}: a credential in the URL query cannot be sent over gRPC")]
    QueryOverGrpc {
        /// The agent.
        agent: String,
    },
}

/// Why a login failed. Messages never contain the response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    /// The login endpoint answered non-2xx.
    #[error("login failed with HTTP {status}")]
    Status {
        /// The HTTP status.
        status: u16,
    },
    /// The body is not JSON.
    #[error("login response is not JSON")]
    NotJson,
    /// No non-empty string token at the configured path nor the fallbacks.
    #[error("login response has no token at {tried}")]
    NoToken {
        /// The paths tried, comma-separated.
        tried: String,
    },
}

// ------------------------------------------------------------------------------------------
// Credentials file (AU-5)
// ------------------------------------------------------------------------------------------

/// The credentials file: agent (card name) → scheme name → credential.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CredentialsConfig {
    /// Agent name → its credentials.
    pub agents: BTreeMap<String, AgentCredentials>,
}

/// One agent's credentials: scheme name → credential.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentCredentials {
    /// Scheme name (as in the card's `securitySchemes`) → credential.
    pub schemes: BTreeMap<String, SchemeCredential>,
}

/// One scheme's credential. The kind is chosen by the keys present; mixing kinds is an error.
///
/// | kind | keys |
/// |---|---|
/// | [`Login`](SchemeCredential::Login) | `login_url`, `method`, `content_type`, `request_fields`, `token_field`, `token_ttl`, `username`, `password`, `username_field`, `password_field`, + delivery keys |
/// | [`Token`](SchemeCredential::Token) | `token`, + delivery keys |
/// | [`ApiKey`](SchemeCredential::ApiKey) | `api_key`, `accept_header` |
/// | [`Basic`](SchemeCredential::Basic) | `username`, `password` (no `login_url`), `accept_header` |
///
/// Delivery keys: `auth_header`, `auth_header_prefix` (default `""`), `accept_header`.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemeCredential {
    /// Log in to get a token.
    Login(LoginConfig),
    /// A static bearer-like token.
    Token {
        /// The token.
        token: Secret,
        /// Where the token goes.
        delivery: Delivery,
    },
    /// A static API key, placed where the card's `apiKeySecurityScheme` says.
    ApiKey {
        /// The key.
        api_key: Secret,
        /// `Accept` override.
        accept_header: Option<String>,
    },
    /// HTTP Basic.
    Basic {
        /// User name.
        username: Secret,
        /// Password.
        password: Secret,
        /// `Accept` override.
        accept_header: Option<String>,
    },
}

/// How a token is sent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Delivery {
    /// Custom header name: `<auth_header>: <prefix><token>`. Absent: `Authorization: Bearer
    /// <token>`, or the card's API-key location for an `apiKeySecurityScheme`.
    pub auth_header: Option<String>,
    /// Prefix before the token in the custom header.
    pub auth_header_prefix: String,
    /// Replaces the request's `Accept` header.
    pub accept_header: Option<String>,
}

/// A login-based credential. Its `Debug` shows field names only and a redacted
/// URL.
#[derive(Clone, PartialEq)]
pub struct LoginConfig {
    /// The login endpoint.
    pub login_url: String,
    /// HTTP method (default `POST`), upper case.
    pub method: String,
    /// Body content type (default `application/json`); `application/x-www-form-urlencoded`
    /// sends a form.
    pub content_type: String,
    /// Body fields, `enc:` string values already decrypted. When empty, `username`/`password`
    /// are sent under `username_field`/`password_field`.
    pub request_fields: BTreeMap<String, Value>,
    /// Dotted path of the token in the response (default `accessSession`).
    pub token_field: String,
    /// Token lifetime in seconds (default 3600).
    pub token_ttl: u64,
    /// User name (decrypted).
    pub username: Option<Secret>,
    /// Password (decrypted).
    pub password: Option<Secret>,
    /// Field name for the user name (default `username`).
    pub username_field: String,
    /// Field name for the password (default `password`).
    pub password_field: String,
    /// Where the token goes.
    pub delivery: Delivery,
}

impl std::fmt::Debug for LoginConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginConfig")
            .field("login_url", &crate::redact::redact_url(&self.login_url))
            .field("method", &self.method)
            .field("content_type", &self.content_type)
            .field(
                "request_fields",
                &self.request_fields.keys().collect::<Vec<_>>(),
            )
            .field("token_field", &self.token_field)
            .field("token_ttl", &self.token_ttl)
            .field("username", &self.username)
            .field("password", &self.password)
            .field("username_field", &self.username_field)
            .field("password_field", &self.password_field)
            .field("delivery", &self.delivery)
            .finish()
    }
}

const LOGIN_KEYS: [&str; 10] = [
    "login_url",
    "method",
    "content_type",
    "request_fields",
    "token_field",
    "token_ttl",
    "username",
    "password",
    "username_field",
    "password_field",
];
const DELIVERY_KEYS: [&str; 3] = ["auth_header", "auth_header_prefix", "accept_header"];

struct Reader<'a> {
    agent: &'a str,
    scheme: &'a str,
    obj: &'a Map<String, Value>,
    key: Option<&'a CredentialKey>,
}

impl Reader<'_> {
    fn err(&self, field: &str, problem: Problem) -> CredentialError {
        CredentialError::Invalid {
            agent: self.agent.to_owned(),
            scheme: self.scheme.to_owned(),
            field: field.to_owned(),
            problem,
        }
    }
    fn opt_str(&self, field: &str) -> Result<Option<String>, CredentialError> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.err(field, Problem::WrongType("a string"))),
        }
    }
    fn str_or(&self, field: &str, default: &str) -> Result<String, CredentialError> {
        Ok(self.opt_str(field)?.unwrap_or_else(|| default.to_owned()))
    }
    fn secret(&self, field: &str) -> Result<Option<Secret>, CredentialError> {
        self.opt_str(field)?
            .map(|v| {
                decrypt_value(&v, self.key)
                    .map(Secret)
                    .map_err(|e| self.err(field, Problem::Decrypt(Box::new(e))))
            })
            .transpose()
    }
    fn required_secret(&self, field: &str) -> Result<Secret, CredentialError> {
        self.secret(field)?
            .ok_or_else(|| self.err(field, Problem::Missing))
    }
    fn delivery(&self) -> Result<Delivery, CredentialError> {
        Ok(Delivery {
            auth_header: self
                .opt_str("auth_header")?
                .filter(|h| !h.trim().is_empty()),
            auth_header_prefix: self.str_or("auth_header_prefix", "")?,
            accept_header: self.opt_str("accept_header")?,
        })
    }
    fn only(&self, allowed: &[&[&str]]) -> Result<(), CredentialError> {
        for k in self.obj.keys() {
            if !allowed.iter().any(|set| set.contains(&k.as_str())) {
                return Err(self.err(k, Problem::UnknownField));
            }
        }
        Ok(())
    }
}

impl CredentialsConfig {
    /// Parses the credentials file text. `key` decrypts `enc:` values; an `enc:` value
    /// without a key, or one that does not decrypt, is an error (fail closed).
    pub fn from_json_str(
        text: &str,
        key: Option<&CredentialKey>,
    ) -> Result<CredentialsConfig, CredentialError> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| CredentialError::Json(e.to_string()))?;
        CredentialsConfig::from_json_value(&v, key)
    }

    /// Parses an inline credentials value (same rules as [`CredentialsConfig::from_json_str`]).
    pub fn from_json_value(
        v: &Value,
        key: Option<&CredentialKey>,
    ) -> Result<CredentialsConfig, CredentialError> {
        let invalid = |agent: &str, scheme: &str, problem| CredentialError::Invalid {
            agent: agent.to_owned(),
            scheme: scheme.to_owned(),
            field: String::new(),
            problem,
        };
        let root = v.as_object().ok_or(invalid("", "", Problem::NotAnObject))?;
        let mut agents = BTreeMap::new();
        for (agent, schemes) in root {
            let schemes = schemes
                .as_object()
                .ok_or(invalid(agent, "", Problem::NotAnObject))?;
            let mut out = BTreeMap::new();
            for (scheme, cred) in schemes {
                let obj = cred
                    .as_object()
                    .ok_or(invalid(agent, scheme, Problem::NotAnObject))?;
                let r = Reader {
                    agent,
                    scheme,
                    obj,
                    key,
                };
                out.insert(scheme.clone(), parse_scheme(&r)?);
            }
            agents.insert(agent.clone(), AgentCredentials { schemes: out });
        }
        Ok(CredentialsConfig { agents })
    }

    /// The credentials of one agent (card name).
    pub fn agent(&self, name: &str) -> Option<&AgentCredentials> {
        self.agents.get(name)
    }
}

fn parse_scheme(r: &Reader<'_>) -> Result<SchemeCredential, CredentialError> {
    let has = |k: &str| r.obj.contains_key(k);
    let kinds = [
        has("login_url"),
        has("token"),
        has("api_key"),
        !has("login_url") && (has("username") || has("password")),
    ];
    match kinds.iter().filter(|k| **k).count() {
        0 => {
            return Err(r.err(
                "",
                Problem::Shape("needs one of login_url, token, api_key, or username+password"),
            ));
        }
        1 => {}
        _ => {
            return Err(r.err(
                "",
                Problem::Shape(
                    "mixes credential kinds (login_url, token, api_key, username+password)",
                ),
            ));
        }
    }
    if has("login_url") {
        r.only(&[&LOGIN_KEYS, &DELIVERY_KEYS])?;
        let login_url = r
            .opt_str("login_url")?
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| r.err("login_url", Problem::Missing))?;
        let mut request_fields = BTreeMap::new();
        match r.obj.get("request_fields") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let v = match v {
                        Value::String(s) => {
                            Value::String(decrypt_value(s, r.key).map_err(|e| {
                                r.err(
                                    &format!("request_fields.{k}"),
                                    Problem::Decrypt(Box::new(e)),
                                )
                            })?)
                        }
                        other => other.clone(),
                    };
                    request_fields.insert(k.clone(), v);
                }
            }
            Some(_) => return Err(r.err("request_fields", Problem::WrongType("an object"))),
        }
        let token_ttl = match r.obj.get("token_ttl") {
            None | Some(Value::Null) => DEFAULT_TOKEN_TTL_SECS,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| r.err("token_ttl", Problem::WrongType("a non-negative integer")))?,
        };
        Ok(SchemeCredential::Login(LoginConfig {
            login_url,
            method: r.str_or("method", "POST")?.to_ascii_uppercase(),
            content_type: r.str_or("content_type", "application/json")?,
            request_fields,
            token_field: r.str_or("token_field", "accessSession")?,
            token_ttl,
            username: r.secret("username")?,
            password: r.secret("password")?,
            username_field: r.str_or("username_field", "username")?,
            password_field: r.str_or("password_field", "password")?,
            delivery: r.delivery()?,
        }))
    } else if has("token") {
        r.only(&[&["token"], &DELIVERY_KEYS])?;
        Ok(SchemeCredential::Token {
            token: r.required_secret("token")?,
            delivery: r.delivery()?,
        })
    } else if has("api_key") {
        r.only(&[&["api_key", "accept_header"]])?;
        Ok(SchemeCredential::ApiKey {
            api_key: r.required_secret("api_key")?,
            accept_header: r.opt_str("accept_header")?,
        })
    } else {
        r.only(&[&["username", "password", "accept_header"]])?;
        Ok(SchemeCredential::Basic {
            username: r.required_secret("username")?,
            password: r.required_secret("password")?,
            accept_header: r.opt_str("accept_header")?,
        })
    }
}

// ------------------------------------------------------------------------------------------
// Planning (AU-4, AU-8, a2a-wire §5.1)
// ------------------------------------------------------------------------------------------

/// What else can authenticate a request besides the credentials file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuthContext {
    /// An AuthProvider is configured: it may be the only auth source, so unmatched
    /// requirements do not block the send.
    pub provider_configured: bool,
    /// The transport presents a TLS client certificate: `mtlsSecurityScheme` is satisfied.
    pub client_certificate: bool,
}

/// What to put on a request: headers, query parameters and cookies. Its `Debug` shows names
/// only.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct AuthMaterial {
    /// Headers. An `Accept` entry replaces the request's `Accept`.
    pub headers: Vec<(String, String)>,
    /// Query parameters (unencoded; [`apply`] encodes them).
    pub query: Vec<(String, String)>,
    /// Cookies (`name`, `value`), sent as one `Cookie` header.
    pub cookies: Vec<(String, String)>,
}

impl std::fmt::Debug for AuthMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[(String, String)]| {
            v.iter()
                .map(|(n, _)| format!("{n}: ***"))
                .collect::<Vec<_>>()
        };
        f.debug_struct("AuthMaterial")
            .field("headers", &names(&self.headers))
            .field("query", &names(&self.query))
            .field("cookies", &names(&self.cookies))
            .finish()
    }
}

impl AuthMaterial {
    fn extend(&mut self, other: AuthMaterial) -> Result<(), AuthError> {
        self.headers = merge_headers(&self.headers, &other.headers)?;
        self.query.extend(other.query);
        self.cookies.extend(other.cookies);
        Ok(())
    }
}

/// Where a token goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenPlacement {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `<name>: <prefix><token>`.
    Header {
        /// Header name.
        name: String,
        /// Prefix.
        prefix: String,
    },
    /// Query parameter `<name>=<token>`.
    Query {
        /// Parameter name.
        name: String,
    },
    /// Cookie `<name>=<token>`.
    Cookie {
        /// Cookie name.
        name: String,
    },
}

impl TokenPlacement {
    /// The material that carries `token`, plus an optional `Accept` override.
    pub fn material(&self, token: &str, accept: Option<&str>) -> AuthMaterial {
        let mut m = AuthMaterial::default();
        match self {
            TokenPlacement::Bearer => m
                .headers
                .push(("Authorization".to_owned(), format!("Bearer {token}"))),
            TokenPlacement::Header { name, prefix } => {
                m.headers.push((name.clone(), format!("{prefix}{token}")))
            }
            TokenPlacement::Query { name } => m.query.push((name.clone(), token.to_owned())),
            TokenPlacement::Cookie { name } => m.cookies.push((name.clone(), token.to_owned())),
        }
        if let Some(a) = accept {
            m.headers.push(("Accept".to_owned(), a.to_owned()));
        }
        m
    }
}

/// One scheme of the chosen requirement.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemeStep {
    /// Ready to use.
    Static(AuthMaterial),
    /// Needs a token from a login.
    Login {
        /// The login configuration.
        config: Box<LoginConfig>,
        /// Where the token goes.
        placement: TokenPlacement,
    },
    /// Satisfied by the transport's TLS client certificate (nothing to add).
    ClientCertificate,
}

/// The built-in authentication of one request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuthPlan {
    /// The index of the chosen entry of `securityRequirements`; `None` when built-in auth is
    /// off (no requirements) or left to the AuthProvider.
    pub requirement: Option<usize>,
    /// Scheme name → what to do, in scheme-name order.
    pub steps: Vec<(String, SchemeStep)>,
}

/// A login to carry out before the request.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingLogin {
    /// The scheme name (the cache key is (agent, scheme)).
    pub scheme: String,
    /// The HTTP request to send.
    pub request: LoginRequest,
    /// Where to read the token ([`parse_login_response`]).
    pub token_field: String,
    /// Lifetime to pass to [`TokenCache::finish_login`].
    pub token_ttl: u64,
}

/// The next thing to do for a request ([`AuthPlan::resolve`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Put this on the request (after [`merge_headers`] with the AuthProvider's headers).
    Ready(AuthMaterial),
    /// Log in first; the cache entry is now marked as logging in.
    Login(PendingLogin),
    /// Another request is logging in for this (agent, scheme): wait for it, then resolve again.
    Wait {
        /// The scheme name.
        scheme: String,
    },
}

impl AuthPlan {
    /// Whether built-in auth adds nothing.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The material, given a token for each login scheme (scheme name → token).
    pub fn material(&self, tokens: &BTreeMap<String, Token>) -> Result<AuthMaterial, AuthError> {
        let mut out = AuthMaterial::default();
        for (scheme, step) in &self.steps {
            match step {
                SchemeStep::Static(m) => out.extend(m.clone())?,
                SchemeStep::Login { config, placement } => {
                    let t = tokens.get(scheme).ok_or_else(|| AuthError::TokenMissing {
                        scheme: scheme.clone(),
                    })?;
                    out.extend(
                        placement
                            .material(t.value.expose(), config.delivery.accept_header.as_deref()),
                    )?
                }
                SchemeStep::ClientCertificate => {}
            }
        }
        Ok(out)
    }

    /// Resolves against the token cache at `now` (epoch seconds): the first login scheme
    /// without a fresh token yields [`Resolution::Login`] (and is marked as logging in) or
    /// [`Resolution::Wait`]; when all are fresh, [`Resolution::Ready`].
    pub fn resolve(
        &self,
        agent: &str,
        cache: &mut TokenCache,
        now: u64,
    ) -> Result<Resolution, AuthError> {
        let mut tokens = BTreeMap::new();
        for (scheme, step) in &self.steps {
            let SchemeStep::Login { config, .. } = step else {
                continue;
            };
            match cache.get(agent, scheme, now) {
                CacheState::Fresh(t) => {
                    tokens.insert(scheme.clone(), t);
                }
                CacheState::LoginInProgress => {
                    return Ok(Resolution::Wait {
                        scheme: scheme.clone(),
                    });
                }
                CacheState::NeedsLogin => {
                    return Ok(match cache.begin_login(agent, scheme) {
                        BeginLogin::Go => Resolution::Login(PendingLogin {
                            scheme: scheme.clone(),
                            request: login_request(config),
                            token_field: config.token_field.clone(),
                            token_ttl: config.token_ttl,
                        }),
                        BeginLogin::Wait => Resolution::Wait {
                            scheme: scheme.clone(),
                        },
                    });
                }
            }
        }
        Ok(Resolution::Ready(self.material(&tokens)?))
    }
}

fn scheme_kind(s: Option<&SecurityScheme>) -> &'static str {
    match s {
        None => "an undeclared scheme",
        Some(SecurityScheme::ApiKey { .. }) => "apiKeySecurityScheme",
        Some(SecurityScheme::HttpAuth { scheme, .. }) if scheme.eq_ignore_ascii_case("basic") => {
            "httpAuthSecurityScheme basic"
        }
        Some(SecurityScheme::HttpAuth { .. }) => "httpAuthSecurityScheme",
        Some(SecurityScheme::OAuth2 { .. }) => "oauth2SecurityScheme",
        Some(SecurityScheme::OpenIdConnect { .. }) => "openIdConnectSecurityScheme",
        Some(SecurityScheme::Mtls { .. }) => "mtlsSecurityScheme",
        Some(SecurityScheme::Other(_)) => "a scheme of unknown shape",
    }
}

fn token_placement(delivery: &Delivery, declared: Option<&SecurityScheme>) -> TokenPlacement {
    if let Some(h) = &delivery.auth_header {
        return TokenPlacement::Header {
            name: h.clone(),
            prefix: delivery.auth_header_prefix.clone(),
        };
    }
    match declared {
        Some(SecurityScheme::ApiKey { location, name, .. }) => api_key_placement(location, name),
        _ => TokenPlacement::Bearer,
    }
}

fn api_key_placement(location: &str, name: &str) -> TokenPlacement {
    match location.to_ascii_lowercase().as_str() {
        "query" => TokenPlacement::Query {
            name: name.to_owned(),
        },
        "cookie" => TokenPlacement::Cookie {
            name: name.to_owned(),
        },
        _ => TokenPlacement::Header {
            name: name.to_owned(),
            prefix: String::new(),
        },
    }
}

fn plan_scheme(
    agent: &str,
    scheme: &str,
    cred: &SchemeCredential,
    declared: Option<&SecurityScheme>,
) -> Result<SchemeStep, AuthError> {
    let incompatible = |credential| AuthError::IncompatibleCredential {
        agent: agent.to_owned(),
        scheme: scheme.to_owned(),
        credential,
        declared: scheme_kind(declared),
    };
    let is_basic = matches!(declared, Some(SecurityScheme::HttpAuth { scheme, .. })
        if scheme.eq_ignore_ascii_case("basic"));
    if matches!(declared, Some(SecurityScheme::Mtls { .. })) {
        return Err(incompatible("file"));
    }
    match cred {
        SchemeCredential::Login(config) => Ok(SchemeStep::Login {
            placement: token_placement(&config.delivery, declared),
            config: Box::new(config.clone()),
        }),
        SchemeCredential::Token { token, delivery } => {
            if is_basic && delivery.auth_header.is_none() {
                return Err(incompatible("token"));
            }
            Ok(SchemeStep::Static(
                token_placement(delivery, declared)
                    .material(token.expose(), delivery.accept_header.as_deref()),
            ))
        }
        SchemeCredential::ApiKey {
            api_key,
            accept_header,
        } => match declared {
            Some(SecurityScheme::ApiKey { location, name, .. }) => Ok(SchemeStep::Static(
                api_key_placement(location, name)
                    .material(api_key.expose(), accept_header.as_deref()),
            )),
            _ => Err(incompatible("api_key")),
        },
        SchemeCredential::Basic {
            username,
            password,
            accept_header,
        } => {
            if !(is_basic || matches!(declared, None | Some(SecurityScheme::Other(_)))) {
                return Err(incompatible("username/password"));
            }
            let raw = format!("{}:{}", username.expose(), password.expose());
            let mut m = AuthMaterial::default();
            m.headers.push((
                "Authorization".to_owned(),
                format!("Basic {}", B64.encode(raw)),
            ));
            if let Some(a) = accept_header {
                m.headers.push(("Accept".to_owned(), a.clone()));
            }
            Ok(SchemeStep::Static(m))
        }
    }
}

/// Chooses the built-in authentication for a request to `card` (a2a-wire §5.1).
///
/// * No `securityRequirements` (absent or `[]`): built-in auth is off, the plan is empty.
/// * Otherwise the requirements are walked in order; the first one whose schemes **all** have
///   a credential (or are `mtlsSecurityScheme` with `ctx.client_certificate`) is used. An empty
///   requirement `{}` means anonymous access is allowed and yields an empty plan.
/// * None satisfied: an empty plan when an AuthProvider is configured, else
///   [`AuthError::NoUsableCredentials`] (never send unauthenticated).
///
/// A credential that cannot serve its declared scheme (e.g. `api_key` for a bearer scheme) is
/// an error rather than a silent skip.
pub fn plan_auth(
    card: &AgentCard,
    creds: Option<&AgentCredentials>,
    ctx: AuthContext,
) -> Result<AuthPlan, AuthError> {
    let reqs = &card.security_requirements;
    if reqs.is_empty() {
        return Ok(AuthPlan::default());
    }
    for (i, req) in reqs.iter().enumerate() {
        let satisfied = req.schemes.keys().all(|s| {
            let declared = card.security_schemes.get(s);
            (ctx.client_certificate && matches!(declared, Some(SecurityScheme::Mtls { .. })))
                || creds.is_some_and(|c| c.schemes.contains_key(s))
        });
        if !satisfied {
            continue;
        }
        let mut steps = Vec::new();
        for s in req.schemes.keys() {
            let declared = card.security_schemes.get(s);
            let step = match (declared, creds.and_then(|c| c.schemes.get(s))) {
                (Some(SecurityScheme::Mtls { .. }), _) if ctx.client_certificate => {
                    SchemeStep::ClientCertificate
                }
                (_, Some(cred)) => plan_scheme(&card.name, s, cred, declared)?,
                // `satisfied` guarantees a credential or a client certificate.
                (_, None) => SchemeStep::ClientCertificate,
            };
            steps.push((s.clone(), step));
        }
        let plan = AuthPlan {
            requirement: Some(i),
            steps,
        };
        // Check now that the static parts do not conflict with each other.
        if plan
            .steps
            .iter()
            .all(|(_, s)| !matches!(s, SchemeStep::Login { .. }))
        {
            plan.material(&BTreeMap::new())?;
        }
        return Ok(plan);
    }
    if ctx.provider_configured {
        return Ok(AuthPlan::default());
    }
    let required = reqs
        .iter()
        .map(|r| r.schemes.keys().cloned().collect::<Vec<_>>().join("+"))
        .collect::<Vec<_>>()
        .join(" | ");
    Err(AuthError::NoUsableCredentials {
        agent: card.name.clone(),
        required,
    })
}

// ------------------------------------------------------------------------------------------
// Login (AU-6)
// ------------------------------------------------------------------------------------------

/// A login HTTP request. Send it with the transport's TLS policy and a 30 s timeout.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginRequest {
    /// HTTP method.
    pub method: String,
    /// The login URL.
    pub url: String,
    /// `Content-Type` of the body.
    pub content_type: String,
    /// Headers to send (`Content-Type`, `Accept: application/json`).
    pub headers: Vec<(String, String)>,
    /// The body: JSON or form data. Holds secrets: log it only through
    /// [`crate::protolog::format_login_request`].
    pub body: Vec<u8>,
}

impl std::fmt::Debug for LoginRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginRequest")
            .field("method", &self.method)
            .field("url", &crate::redact::redact_url(&self.url))
            .field("content_type", &self.content_type)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .finish()
    }
}

/// Builds the login request of `config`: `request_fields` (or `username`/`password`
/// under their field names when `request_fields` is empty) as a form when the content type is
/// `application/x-www-form-urlencoded`, as a JSON object otherwise.
pub fn login_request(config: &LoginConfig) -> LoginRequest {
    let mut fields: Vec<(String, Value)> = config
        .request_fields
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if fields.is_empty() {
        if let Some(u) = &config.username {
            fields.push((
                config.username_field.clone(),
                Value::String(u.expose().to_owned()),
            ));
        }
        if let Some(p) = &config.password {
            fields.push((
                config.password_field.clone(),
                Value::String(p.expose().to_owned()),
            ));
        }
    }
    let body = if is_form_content_type(&config.content_type) {
        fields
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                format!("{}={}", url_encode(k), url_encode(&v))
            })
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes()
    } else {
        let m: Map<String, Value> = fields.into_iter().collect();
        Value::Object(m).to_string().into_bytes()
    };
    LoginRequest {
        method: config.method.clone(),
        url: config.login_url.clone(),
        content_type: config.content_type.clone(),
        headers: vec![
            ("Content-Type".to_owned(), config.content_type.clone()),
            ("Accept".to_owned(), "application/json".to_owned()),
        ],
        body,
    }
}

/// A token from a login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The token.
    pub value: Secret,
}

impl Token {
    /// Wraps a token string.
    pub fn new(s: impl Into<String>) -> Token {
        Token {
            value: Secret::new(s),
        }
    }
}

/// The fallbacks tried after `token_field`.
pub const TOKEN_FALLBACKS: [&str; 4] = ["accessSession", "access_session", "access_token", "token"];

/// Reads the token of a login response: non-2xx is an error; the token is the non-empty
/// string at the dotted `token_field` path, else at `accessSession`, `access_session`,
/// `access_token`, `token` (top level).
pub fn parse_login_response(
    status: u16,
    body: &[u8],
    token_field: &str,
) -> Result<Token, LoginError> {
    if !(200..300).contains(&status) {
        return Err(LoginError::Status { status });
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| LoginError::NotJson)?;
    let mut tried = Vec::new();
    for path in std::iter::once(token_field).chain(TOKEN_FALLBACKS) {
        if path.is_empty() || tried.contains(&path) {
            continue;
        }
        tried.push(path);
        let mut cur = Some(&v);
        for seg in path.split('.') {
            cur = cur.and_then(|c| c.get(seg));
        }
        if let Some(Value::String(s)) = cur
            && !s.is_empty()
        {
            return Ok(Token::new(s.clone()));
        }
    }
    Err(LoginError::NoToken {
        tried: tried.join(", "),
    })
}

// ------------------------------------------------------------------------------------------
// Token cache (AU-7)
// ------------------------------------------------------------------------------------------

/// The cache's answer for (agent, scheme) at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheState {
    /// A token valid for more than [`REFRESH_SKEW_SECS`].
    Fresh(Token),
    /// No usable token and no login running: call [`TokenCache::begin_login`].
    NeedsLogin,
    /// A login is running: wait for it.
    LoginInProgress,
}

/// The answer of [`TokenCache::begin_login`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginLogin {
    /// This caller logs in, then calls `finish_login` or `fail_login`.
    Go,
    /// Another caller is logging in: wait for it.
    Wait,
}

#[derive(Debug, Clone, Default)]
struct Entry {
    token: Option<(Token, u64)>,
    logging_in: bool,
}

/// Tokens per (agent, scheme) with their expiry, and a "login running" flag so that one key
/// never has two concurrent logins. Time is epoch seconds passed by the caller.
#[derive(Debug, Clone, Default)]
pub struct TokenCache {
    entries: BTreeMap<(String, String), Entry>,
}

impl TokenCache {
    /// An empty cache.
    pub fn new() -> TokenCache {
        TokenCache::default()
    }

    /// The state of (agent, scheme) at `now`. A token is fresh until [`REFRESH_SKEW_SECS`]
    /// before its expiry.
    pub fn get(&self, agent: &str, scheme: &str, now: u64) -> CacheState {
        let Some(e) = self.entries.get(&(agent.to_owned(), scheme.to_owned())) else {
            return CacheState::NeedsLogin;
        };
        match &e.token {
            Some((t, expires)) if now.saturating_add(REFRESH_SKEW_SECS) < *expires => {
                CacheState::Fresh(t.clone())
            }
            _ if e.logging_in => CacheState::LoginInProgress,
            _ => CacheState::NeedsLogin,
        }
    }

    /// Marks a login as running for (agent, scheme), unless one already is.
    pub fn begin_login(&mut self, agent: &str, scheme: &str) -> BeginLogin {
        let e = self
            .entries
            .entry((agent.to_owned(), scheme.to_owned()))
            .or_default();
        if e.logging_in {
            BeginLogin::Wait
        } else {
            e.logging_in = true;
            BeginLogin::Go
        }
    }

    /// Stores the token of a successful login, valid for `ttl_secs` from `now`.
    pub fn finish_login(
        &mut self,
        agent: &str,
        scheme: &str,
        token: Token,
        ttl_secs: u64,
        now: u64,
    ) {
        let e = self
            .entries
            .entry((agent.to_owned(), scheme.to_owned()))
            .or_default();
        e.logging_in = false;
        e.token = Some((token, now.saturating_add(ttl_secs)));
    }

    /// Ends a failed login: waiters will see [`CacheState::NeedsLogin`] and may try again.
    pub fn fail_login(&mut self, agent: &str, scheme: &str) {
        if let Some(e) = self.entries.get_mut(&(agent.to_owned(), scheme.to_owned())) {
            e.logging_in = false;
        }
    }

    /// Forgets the token of (agent, scheme), e.g. after the agent answered 401.
    pub fn invalidate(&mut self, agent: &str, scheme: &str) {
        if let Some(e) = self.entries.get_mut(&(agent.to_owned(), scheme.to_owned())) {
            e.token = None;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Merging and applying (AU-2)
// ------------------------------------------------------------------------------------------

/// Merges built-in auth headers with an AuthProvider's. The same header name (any case)
/// with the same value is kept once; with different values it is
/// [`AuthError::HeaderConflict`].
pub fn merge_headers(
    builtin: &[(String, String)],
    provider: &[(String, String)],
) -> Result<Vec<(String, String)>, AuthError> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(builtin.len() + provider.len());
    for (name, value) in builtin.iter().chain(provider) {
        match out.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, v)) if v == value => {}
            Some(_) => {
                return Err(AuthError::HeaderConflict {
                    header: name.clone(),
                });
            }
            None => out.push((name.clone(), value.clone())),
        }
    }
    Ok(out)
}

/// Puts `material` and the AuthProvider's `provider_headers` on `req`: the headers are
/// merged with [`merge_headers`] and replace same-named request headers (e.g. `Accept`), query
/// parameters are URL-encoded and appended with `?` or `&` (before any `#fragment`), cookies
/// join an existing `Cookie` header with `; `. On an HTTP/2 (gRPC) request the headers are its
/// metadata, and query parameters are refused ([`AuthError::QueryOverGrpc`], `req` unchanged).
pub fn apply(
    material: &AuthMaterial,
    provider_headers: &[(String, String)],
    req: &mut HttpRequest,
) -> Result<(), AuthError> {
    if req.http2 && !material.query.is_empty() {
        return Err(AuthError::QueryOverGrpc {
            agent: req.agent.to_string(),
        });
    }
    let headers = merge_headers(&material.headers, provider_headers)?;
    for (name, value) in headers {
        req.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        req.headers.push((name.into(), value.into()));
    }
    if !material.cookies.is_empty() {
        let add = material
            .cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        match req
            .headers
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        {
            Some((_, v)) if !v.trim().is_empty() => *v = format!("{v}; {add}").into(),
            Some((_, v)) => *v = add.into(),
            None => req.headers.push(("Cookie".into(), add.into())),
        }
    }
    if !material.query.is_empty() {
        req.url = append_query(&req.url, &material.query);
    }
    Ok(())
}

/// Masks, in `sent` (a request after [`apply`]), every value that authentication put there, for
/// the protocol log: the headers of `material` and of the AuthProvider (`Accept` excepted),
/// whatever their names, and the query parameters of `material` (the URL is rebuilt from
/// `url_before`, the URL before [`apply`]). Cookies travel in `Cookie`, which the protocol log masks anyway.
/// Custom header names such as `X-Session` are not on the protocol log's list of secret names, so this is what keeps
/// their tokens out of logs.
pub fn mask_applied(
    sent: &mut HttpRequest,
    material: &AuthMaterial,
    provider_headers: &[(String, String)],
    url_before: &str,
) {
    let added = material
        .headers
        .iter()
        .chain(provider_headers)
        .map(|(n, _)| n.as_str())
        .filter(|n| !n.eq_ignore_ascii_case("accept"));
    for name in added {
        for (n, v) in sent.headers.iter_mut() {
            if n.eq_ignore_ascii_case(name) {
                *v = crate::redact::MASK.into();
            }
        }
    }
    if !material.query.is_empty() {
        let (base, fragment) = match url_before.find('#') {
            Some(i) => (&url_before[..i], &url_before[i..]),
            None => (url_before, ""),
        };
        let masked = material
            .query
            .iter()
            .map(|(n, _)| format!("{}={}", url_encode(n), crate::redact::MASK))
            .collect::<Vec<_>>()
            .join("&");
        let sep = match base.find('?') {
            None => "?",
            Some(i) if i + 1 == base.len() || base.ends_with('&') => "",
            Some(_) => "&",
        };
        sent.url = format!("{base}{sep}{masked}{fragment}");
    }
}
