//! AgentCards: tolerant parsing with the normalisations of features.md §2.3 and a2a-wire §1.7,
//! set validation and extension checks.

use super::protojson::{
    DecodeError, ObjectWriter, Path, as_object, boolean, list, member, opt_bool, opt_string,
    opt_struct, string, string_list, via_protojson, wrong,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Why an AgentCard could not be read or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    /// The card is not a JSON object.
    #[error("agent card is not a JSON object (found {found})")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A member has the wrong shape.
    #[error("invalid agent card: {0}")]
    Invalid(#[from] DecodeError),
    /// The preferred binding is not offered by the card (no silent fallback).
    #[error("agent {agent:?} offers no usable {preferred} interface (offered: {offered})")]
    PreferredBindingUnavailable {
        /// The agent name.
        agent: String,
        /// The binding the host asked for.
        preferred: String,
        /// The interfaces the card offers, as `binding version url`, comma-separated.
        offered: String,
    },
    /// No interface has a binding and version this client implements.
    #[error(
        "agent {agent:?} offers no usable interface: need JSONRPC, HTTP+JSON or GRPC (with a usable target) with protocol version 1.x (offered: {offered})"
    )]
    NoUsableInterface {
        /// The agent name.
        agent: String,
        /// The interfaces the card offers, as `binding version url`, comma-separated.
        offered: String,
    },
}

/// The organisation behind an agent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentProvider {
    /// Provider URL.
    pub url: String,
    /// Organisation name.
    pub organization: String,
}

/// One endpoint of an agent (a2a-wire §1.6).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentInterface {
    /// JSON-RPC endpoint, REST base URL or gRPC `host:port`.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON`, `GRPC` or a custom URI.
    pub protocol_binding: String,
    /// Opaque routing string.
    pub tenant: Option<String>,
    /// `Major.Minor`, e.g. `1.0`.
    pub protocol_version: String,
}

/// An extension declared by the agent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentExtension {
    /// Extension URI (compared exactly).
    pub uri: String,
    /// Description.
    pub description: Option<String>,
    /// Whether clients must activate it.
    pub required: bool,
    /// Extension parameters.
    pub params: Option<Map<String, Value>>,
}

/// What the agent supports.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentCapabilities {
    /// Streaming (`None` = not stated = false).
    pub streaming: Option<bool>,
    /// Push notifications.
    pub push_notifications: Option<bool>,
    /// Declared extensions.
    pub extensions: Vec<AgentExtension>,
    /// An extended card is available.
    pub extended_agent_card: Option<bool>,
}

/// A skill advertised by the agent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentSkill {
    /// Skill id.
    pub id: String,
    /// Skill name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Example prompts.
    pub examples: Vec<String>,
    /// Accepted input MIME types.
    pub input_modes: Vec<String>,
    /// Produced output MIME types.
    pub output_modes: Vec<String>,
    /// Skill-specific security requirements.
    pub security_requirements: Vec<SecurityRequirement>,
}

/// How to authenticate (a2a-wire §1.6, §5.1).
#[derive(Debug, Clone, PartialEq)]
pub enum SecurityScheme {
    /// `apiKeySecurityScheme`.
    ApiKey {
        /// Description.
        description: Option<String>,
        /// `header`, `query` or `cookie`.
        location: String,
        /// Header, query parameter or cookie name.
        name: String,
    },
    /// `httpAuthSecurityScheme`.
    HttpAuth {
        /// Description.
        description: Option<String>,
        /// `Bearer`, `Basic`, … (case-insensitive).
        scheme: String,
        /// Bearer token format hint, e.g. `JWT`.
        bearer_format: Option<String>,
    },
    /// `oauth2SecurityScheme`.
    OAuth2 {
        /// Description.
        description: Option<String>,
        /// OAuthFlows, kept as JSON.
        flows: Value,
        /// RFC 8414 metadata URL.
        oauth2_metadata_url: Option<String>,
    },
    /// `openIdConnectSecurityScheme`.
    OpenIdConnect {
        /// Description.
        description: Option<String>,
        /// OpenID Connect discovery URL.
        open_id_connect_url: String,
    },
    /// `mtlsSecurityScheme`.
    Mtls {
        /// Description.
        description: Option<String>,
    },
    /// A scheme in a shape this client does not know, kept verbatim.
    Other(Value),
}

impl SecurityScheme {
    fn decode(v: &Value, path: &Path<'_>) -> Result<SecurityScheme, DecodeError> {
        let Some(m) = v.as_object() else {
            return Ok(SecurityScheme::Other(v.clone()));
        };
        if let Some(inner) = member(m, "apiKeySecurityScheme") {
            let p = path.key("apiKeySecurityScheme");
            let i = as_object(inner, &p)?;
            return Ok(SecurityScheme::ApiKey {
                description: opt_string(i, "description", &p)?,
                location: string(i, "location", &p)?,
                name: string(i, "name", &p)?,
            });
        }
        if let Some(inner) = member(m, "httpAuthSecurityScheme") {
            let p = path.key("httpAuthSecurityScheme");
            let i = as_object(inner, &p)?;
            return Ok(SecurityScheme::HttpAuth {
                description: opt_string(i, "description", &p)?,
                scheme: string(i, "scheme", &p)?,
                bearer_format: opt_string(i, "bearerFormat", &p)?,
            });
        }
        if let Some(inner) = member(m, "oauth2SecurityScheme") {
            let p = path.key("oauth2SecurityScheme");
            let i = as_object(inner, &p)?;
            return Ok(SecurityScheme::OAuth2 {
                description: opt_string(i, "description", &p)?,
                flows: member(i, "flows").cloned().unwrap_or(Value::Null),
                oauth2_metadata_url: opt_string(i, "oauth2MetadataUrl", &p)?,
            });
        }
        if let Some(inner) = member(m, "openIdConnectSecurityScheme") {
            let p = path.key("openIdConnectSecurityScheme");
            let i = as_object(inner, &p)?;
            return Ok(SecurityScheme::OpenIdConnect {
                description: opt_string(i, "description", &p)?,
                open_id_connect_url: string(i, "openIdConnectUrl", &p)?,
            });
        }
        if let Some(inner) = member(m, "mtlsSecurityScheme") {
            let p = path.key("mtlsSecurityScheme");
            let i = as_object(inner, &p)?;
            return Ok(SecurityScheme::Mtls {
                description: opt_string(i, "description", &p)?,
            });
        }
        Ok(SecurityScheme::Other(v.clone()))
    }

    /// Encodes the v1.0 wrapper form.
    pub fn to_json(&self) -> Value {
        let (key, inner) = match self {
            SecurityScheme::ApiKey {
                description,
                location,
                name,
            } => (
                "apiKeySecurityScheme",
                ObjectWriter::new()
                    .opt_str("description", description)
                    .str("location", location)
                    .str("name", name)
                    .finish(),
            ),
            SecurityScheme::HttpAuth {
                description,
                scheme,
                bearer_format,
            } => (
                "httpAuthSecurityScheme",
                ObjectWriter::new()
                    .opt_str("description", description)
                    .str("scheme", scheme)
                    .opt_str("bearerFormat", bearer_format)
                    .finish(),
            ),
            SecurityScheme::OAuth2 {
                description,
                flows,
                oauth2_metadata_url,
            } => {
                let mut w = ObjectWriter::new();
                w.opt_str("description", description);
                if !flows.is_null() {
                    w.put("flows", flows.clone());
                }
                (
                    "oauth2SecurityScheme",
                    w.opt_str("oauth2MetadataUrl", oauth2_metadata_url).finish(),
                )
            }
            SecurityScheme::OpenIdConnect {
                description,
                open_id_connect_url,
            } => (
                "openIdConnectSecurityScheme",
                ObjectWriter::new()
                    .opt_str("description", description)
                    .str("openIdConnectUrl", open_id_connect_url)
                    .finish(),
            ),
            SecurityScheme::Mtls { description } => (
                "mtlsSecurityScheme",
                ObjectWriter::new()
                    .opt_str("description", description)
                    .finish(),
            ),
            SecurityScheme::Other(v) => return v.clone(),
        };
        ObjectWriter::new().put(key, inner).finish()
    }
}

/// One alternative of the security requirements: every named scheme must be satisfied (AND);
/// the list of requirements is OR-ed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SecurityRequirement {
    /// Scheme name → required scopes.
    pub schemes: BTreeMap<String, Vec<String>>,
}

impl SecurityRequirement {
    fn decode(v: &Value, path: &Path<'_>) -> Result<SecurityRequirement, DecodeError> {
        let m = as_object(v, path)?;
        let mut schemes = BTreeMap::new();
        if let Some(s) = member(m, "schemes") {
            let p = path.key("schemes");
            match s {
                Value::Object(o) => {
                    for (name, scopes) in o {
                        let sp = p.key(name);
                        let list_value = match scopes {
                            Value::Object(l) => member(l, "list"),
                            Value::Array(_) => Some(scopes),
                            Value::Null => None,
                            other => return Err(wrong(&sp, "object", other)),
                        };
                        let scopes = match list_value {
                            None => Vec::new(),
                            Some(Value::Array(items)) => items
                                .iter()
                                .enumerate()
                                .map(|(i, x)| match x {
                                    Value::String(s) => Ok(s.clone()),
                                    other => Err(wrong(&sp.index(i), "string", other)),
                                })
                                .collect::<Result<_, _>>()?,
                            Some(other) => return Err(wrong(&sp.key("list"), "array", other)),
                        };
                        schemes.insert(name.clone(), scopes);
                    }
                }
                Value::Array(names) => {
                    for (i, n) in names.iter().enumerate() {
                        match n {
                            Value::String(s) => {
                                schemes.insert(s.clone(), Vec::new());
                            }
                            other => return Err(wrong(&p.index(i), "string", other)),
                        }
                    }
                }
                other => return Err(wrong(&p, "object", other)),
            }
        }
        Ok(SecurityRequirement { schemes })
    }

    /// Encodes the v1.0 form (`{}` for an empty scope list).
    pub fn to_json(&self) -> Value {
        let mut schemes = Map::new();
        for (name, scopes) in &self.schemes {
            let mut inner = Map::new();
            if !scopes.is_empty() {
                inner.insert(
                    "list".to_owned(),
                    Value::Array(scopes.iter().cloned().map(Value::String).collect()),
                );
            }
            schemes.insert(name.clone(), Value::Object(inner));
        }
        ObjectWriter::new()
            .put("schemes", Value::Object(schemes))
            .finish()
    }
}

/// An agent's self-description (a2a-wire §1.6).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentCard {
    /// Agent name; the engine's key for the agent.
    pub name: String,
    /// Description.
    pub description: String,
    /// Agent version.
    pub version: String,
    /// Endpoints in order of preference.
    pub supported_interfaces: Vec<AgentInterface>,
    /// Provider.
    pub provider: Option<AgentProvider>,
    /// Documentation URL.
    pub documentation_url: Option<String>,
    /// Icon URL.
    pub icon_url: Option<String>,
    /// Capabilities (defaults when absent on the wire; see [`AgentCard::has_capabilities`]).
    pub capabilities: AgentCapabilities,
    /// Whether the card carried a `capabilities` object on the wire (a card without one is invalid).
    pub has_capabilities: bool,
    /// Scheme name → scheme.
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Alternatives (OR) of scheme sets (AND).
    pub security_requirements: Vec<SecurityRequirement>,
    /// Default input MIME types.
    pub default_input_modes: Vec<String>,
    /// Default output MIME types.
    pub default_output_modes: Vec<String>,
    /// Skills.
    pub skills: Vec<AgentSkill>,
    /// JWS signatures, kept as raw JSON.
    pub signatures: Vec<Value>,
}

const WRAPPER_KEYS: [&str; 5] = [
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
];

/// Applies the card normalisations (features.md §2.3, a2a-wire §1.7) to a JSON card and returns
/// the normalised copy. Requirements are never auto-populated. Non-objects are returned as is.
pub fn normalize_card_json(v: &Value) -> Value {
    let Some(src) = v.as_object() else {
        return v.clone();
    };
    let mut card = src.clone();

    // securitySchemes: flat/OpenAPI shapes → wrapper keys.
    if let Some(Value::Object(schemes)) = card.get("securitySchemes") {
        let mut out = Map::new();
        for (name, scheme) in schemes {
            out.insert(name.clone(), normalize_scheme(scheme));
        }
        card.insert("securitySchemes".to_owned(), Value::Object(out));
    }

    // securityRequirements: list form → map form; legacy `security` when absent.
    match card.get("securityRequirements") {
        Some(Value::Array(reqs)) => {
            let out: Vec<Value> = reqs
                .iter()
                .filter(|r| r.is_object())
                .map(|r| {
                    let mut r = r.as_object().cloned().unwrap_or_default();
                    if let Some(Value::Array(names)) = r.get("schemes") {
                        let mut m = Map::new();
                        for n in names {
                            if let Value::String(s) = n {
                                m.insert(s.clone(), Value::Object(Map::new()));
                            }
                        }
                        r.insert("schemes".to_owned(), Value::Object(m));
                    }
                    Value::Object(r)
                })
                .collect();
            card.insert("securityRequirements".to_owned(), Value::Array(out));
        }
        Some(Value::Null) | None => {
            if let Some(Value::Array(legacy)) = card.get("security") {
                let out: Vec<Value> = legacy
                    .iter()
                    .filter_map(|r| r.as_object())
                    .map(|r| {
                        let mut m = Map::new();
                        for (name, scopes) in r {
                            let mut inner = Map::new();
                            if let Value::Array(s) = scopes {
                                if !s.is_empty() {
                                    inner.insert("list".to_owned(), Value::Array(s.clone()));
                                }
                            }
                            m.insert(name.clone(), Value::Object(inner));
                        }
                        let mut w = Map::new();
                        w.insert("schemes".to_owned(), Value::Object(m));
                        Value::Object(w)
                    })
                    .collect();
                card.insert("securityRequirements".to_owned(), Value::Array(out));
            }
        }
        Some(_) => {
            card.insert("securityRequirements".to_owned(), Value::Array(Vec::new()));
        }
    }

    // v0.3 endpoints → supportedInterfaces.
    let has_interfaces =
        matches!(card.get("supportedInterfaces"), Some(Value::Array(a)) if !a.is_empty());
    if !has_interfaces {
        if let Some(Value::String(url)) = card.get("url") {
            if !url.is_empty() {
                let version = match card.get("protocolVersion") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    _ => "0.3".to_owned(),
                };
                let binding = match card.get("preferredTransport") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    _ => "JSONRPC".to_owned(),
                };
                let mut out = vec![interface_json(url, &binding, &version)];
                if let Some(Value::Array(extra)) = card.get("additionalInterfaces") {
                    for e in extra.iter().filter_map(|e| e.as_object()) {
                        if let (Some(Value::String(u)), Some(Value::String(t))) =
                            (e.get("url"), e.get("transport"))
                        {
                            // The preferred one is usually repeated here; keep it once.
                            if u == url && t.eq_ignore_ascii_case(&binding) {
                                continue;
                            }
                            out.push(interface_json(u, t, &version));
                        }
                    }
                }
                card.insert("supportedInterfaces".to_owned(), Value::Array(out));
            }
        }
    }

    // v0.3 supportsAuthenticatedExtendedCard → capabilities.extendedAgentCard.
    if let Some(Value::Bool(true)) = card.get("supportsAuthenticatedExtendedCard") {
        if let Some(Value::Object(caps)) = card.get_mut("capabilities") {
            caps.entry("extendedAgentCard").or_insert(Value::Bool(true));
        }
    }
    Value::Object(card)
}

fn interface_json(url: &str, binding: &str, version: &str) -> Value {
    ObjectWriter::new()
        .put("url", Value::String(url.to_owned()))
        .put("protocolBinding", Value::String(binding.to_owned()))
        .put("protocolVersion", Value::String(version.to_owned()))
        .finish()
}

fn normalize_scheme(scheme: &Value) -> Value {
    let Some(s) = scheme.as_object() else {
        return scheme.clone();
    };
    if WRAPPER_KEYS.iter().any(|k| s.contains_key(*k)) {
        return scheme.clone();
    }
    let copy = |inner: &mut Map<String, Value>, from: &str, to: &str| {
        if let Some(v) = s.get(from) {
            if !v.is_null() && v != &Value::String(String::new()) {
                inner.insert(to.to_owned(), v.clone());
            }
        }
    };
    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
    let mut inner = Map::new();
    copy(&mut inner, "description", "description");
    let key = if s.get("scheme").is_some_and(Value::is_string)
        && (ty.is_empty() || ty.eq_ignore_ascii_case("http"))
    {
        copy(&mut inner, "scheme", "scheme");
        copy(&mut inner, "bearerFormat", "bearerFormat");
        "httpAuthSecurityScheme"
    } else if ty == "apiKey" {
        copy(&mut inner, "in", "location");
        copy(&mut inner, "location", "location");
        copy(&mut inner, "name", "name");
        "apiKeySecurityScheme"
    } else if ty == "oauth2" {
        copy(&mut inner, "flows", "flows");
        copy(&mut inner, "oauth2MetadataUrl", "oauth2MetadataUrl");
        "oauth2SecurityScheme"
    } else if ty == "openIdConnect" {
        copy(&mut inner, "openIdConnectUrl", "openIdConnectUrl");
        "openIdConnectSecurityScheme"
    } else if ty == "mutualTLS" {
        "mtlsSecurityScheme"
    } else {
        return scheme.clone();
    };
    let mut w = Map::new();
    w.insert(key.to_owned(), Value::Object(inner));
    Value::Object(w)
}

impl AgentCard {
    /// Parses a card, applying [`normalize_card_json`] first. Unknown members are ignored;
    /// wrongly typed members are a [`CardError::Invalid`] naming the path.
    pub fn from_json_value(v: &Value) -> Result<AgentCard, CardError> {
        if !v.is_object() {
            return Err(CardError::NotAnObject {
                found: super::protojson::type_name(v),
            });
        }
        let n = normalize_card_json(v);
        Ok(AgentCard::decode(&n, &Path::Root)?)
    }

    /// Same as [`AgentCard::from_json_value`], with [`DecodeError`] as the error (used by serde).
    pub fn from_json(v: &Value) -> Result<AgentCard, DecodeError> {
        AgentCard::decode(&normalize_card_json(v), &Path::Root)
    }

    fn decode(v: &Value, path: &Path<'_>) -> Result<AgentCard, DecodeError> {
        let m = as_object(v, path)?;
        let caps = member(m, "capabilities");
        let mut security_schemes = BTreeMap::new();
        if let Some(s) = member(m, "securitySchemes") {
            let p = path.key("securitySchemes");
            for (name, scheme) in as_object(s, &p)? {
                security_schemes
                    .insert(name.clone(), SecurityScheme::decode(scheme, &p.key(name))?);
            }
        }
        Ok(AgentCard {
            name: string(m, "name", path)?,
            description: string(m, "description", path)?,
            version: string(m, "version", path)?,
            supported_interfaces: list(m, "supportedInterfaces", path, decode_interface)?,
            provider: member(m, "provider")
                .map(|p| {
                    let pp = path.key("provider");
                    let o = as_object(p, &pp)?;
                    Ok::<_, DecodeError>(AgentProvider {
                        url: string(o, "url", &pp)?,
                        organization: string(o, "organization", &pp)?,
                    })
                })
                .transpose()?,
            documentation_url: opt_string(m, "documentationUrl", path)?,
            icon_url: opt_string(m, "iconUrl", path)?,
            capabilities: match caps {
                Some(c) => decode_capabilities(c, &path.key("capabilities"))?,
                None => AgentCapabilities::default(),
            },
            has_capabilities: caps.is_some(),
            security_schemes,
            security_requirements: list(
                m,
                "securityRequirements",
                path,
                SecurityRequirement::decode,
            )?,
            default_input_modes: string_list(m, "defaultInputModes", path)?,
            default_output_modes: string_list(m, "defaultOutputModes", path)?,
            skills: list(m, "skills", path, decode_skill)?,
            signatures: list(m, "signatures", path, |v, _| Ok(v.clone()))?,
        })
    }

    /// Encodes the v1.0 form.
    pub fn to_json(&self) -> Value {
        let mut w = ObjectWriter::new();
        w.str("name", &self.name)
            .str("description", &self.description)
            .list("supportedInterfaces", &self.supported_interfaces, |i| {
                ObjectWriter::new()
                    .str("url", &i.url)
                    .str("protocolBinding", &i.protocol_binding)
                    .opt_str("tenant", &i.tenant)
                    .str("protocolVersion", &i.protocol_version)
                    .finish()
            });
        if let Some(p) = &self.provider {
            w.put(
                "provider",
                ObjectWriter::new()
                    .str("url", &p.url)
                    .str("organization", &p.organization)
                    .finish(),
            );
        }
        w.str("version", &self.version)
            .opt_str("documentationUrl", &self.documentation_url);
        if self.has_capabilities || self.capabilities != AgentCapabilities::default() {
            let c = &self.capabilities;
            w.put(
                "capabilities",
                ObjectWriter::new()
                    .opt_bool("streaming", c.streaming)
                    .opt_bool("pushNotifications", c.push_notifications)
                    .list("extensions", &c.extensions, |e| {
                        ObjectWriter::new()
                            .str("uri", &e.uri)
                            .opt_str("description", &e.description)
                            .flag("required", e.required)
                            .opt_struct("params", &e.params)
                            .finish()
                    })
                    .opt_bool("extendedAgentCard", c.extended_agent_card)
                    .finish(),
            );
        }
        if !self.security_schemes.is_empty() {
            let mut s = Map::new();
            for (k, v) in &self.security_schemes {
                s.insert(k.clone(), v.to_json());
            }
            w.put("securitySchemes", Value::Object(s));
        }
        w.list(
            "securityRequirements",
            &self.security_requirements,
            SecurityRequirement::to_json,
        )
        .strings("defaultInputModes", &self.default_input_modes)
        .strings("defaultOutputModes", &self.default_output_modes)
        .list("skills", &self.skills, |s| {
            ObjectWriter::new()
                .str("id", &s.id)
                .str("name", &s.name)
                .str("description", &s.description)
                .strings("tags", &s.tags)
                .strings("examples", &s.examples)
                .strings("inputModes", &s.input_modes)
                .strings("outputModes", &s.output_modes)
                .list(
                    "securityRequirements",
                    &s.security_requirements,
                    SecurityRequirement::to_json,
                )
                .finish()
        })
        .list("signatures", &self.signatures, Clone::clone)
        .opt_str("iconUrl", &self.icon_url)
        .finish()
    }

    /// Whether the card declares the extension `uri` (exact match).
    pub fn declares_extension(&self, uri: &str) -> bool {
        self.capabilities.extensions.iter().any(|e| e.uri == uri)
    }

    /// The URIs of the extensions declared with `required: true`, in card order.
    pub fn required_extensions(&self) -> impl Iterator<Item = &str> {
        self.capabilities
            .extensions
            .iter()
            .filter(|e| e.required)
            .map(|e| e.uri.as_str())
    }

    /// Whether `capabilities.streaming` is `true`.
    pub fn supports_streaming(&self) -> bool {
        self.capabilities.streaming == Some(true)
    }
}
via_protojson!(AgentCard);

fn decode_interface(v: &Value, path: &Path<'_>) -> Result<AgentInterface, DecodeError> {
    let m = as_object(v, path)?;
    let binding = match opt_string(m, "protocolBinding", path)? {
        Some(b) => b,
        None => string(m, "transport", path)?,
    };
    Ok(AgentInterface {
        url: string(m, "url", path)?,
        protocol_binding: binding,
        tenant: opt_string(m, "tenant", path)?,
        protocol_version: string(m, "protocolVersion", path)?,
    })
}

fn decode_capabilities(v: &Value, path: &Path<'_>) -> Result<AgentCapabilities, DecodeError> {
    let m = as_object(v, path)?;
    Ok(AgentCapabilities {
        streaming: opt_bool(m, "streaming", path)?,
        push_notifications: opt_bool(m, "pushNotifications", path)?,
        extensions: list(m, "extensions", path, |e, p| {
            let o = as_object(e, p)?;
            Ok(AgentExtension {
                uri: string(o, "uri", p)?,
                description: opt_string(o, "description", p)?,
                required: boolean(o, "required", p)?,
                params: opt_struct(o, "params", p)?,
            })
        })?,
        extended_agent_card: opt_bool(m, "extendedAgentCard", path)?,
    })
}

fn decode_skill(v: &Value, path: &Path<'_>) -> Result<AgentSkill, DecodeError> {
    let m = as_object(v, path)?;
    Ok(AgentSkill {
        id: string(m, "id", path)?,
        name: string(m, "name", path)?,
        description: string(m, "description", path)?,
        tags: string_list(m, "tags", path)?,
        examples: string_list(m, "examples", path)?,
        input_modes: string_list(m, "inputModes", path)?,
        output_modes: string_list(m, "outputModes", path)?,
        security_requirements: list(m, "securityRequirements", path, SecurityRequirement::decode)?,
    })
}

/// One problem found by [`validate_cards`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardProblem {
    /// The card at `index` has a blank name.
    #[error("card #{index} has a blank name")]
    BlankName {
        /// Position in the input.
        index: usize,
    },
    /// The card lacked a `capabilities` object.
    #[error("agent {name:?} (card #{index}) has no capabilities")]
    MissingCapabilities {
        /// Position in the input.
        index: usize,
        /// Agent name.
        name: String,
    },
    /// The card lists no `supportedInterfaces`.
    #[error("agent {name:?} (card #{index}) has no supportedInterfaces")]
    NoInterfaces {
        /// Position in the input.
        index: usize,
        /// Agent name.
        name: String,
    },
    /// Two cards share a name.
    #[error("agent name {name:?} is used by cards #{first} and #{index}")]
    DuplicateName {
        /// Position of the later card.
        index: usize,
        /// Position of the first card with this name.
        first: usize,
        /// The shared name.
        name: String,
    },
}

/// Every problem of a card set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid agent cards: {}", .problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct CardSetError {
    /// The problems, in card order.
    pub problems: Vec<CardProblem>,
}

/// Validates a set of cards: non-blank names, `capabilities` present, at least one
/// interface, unique names. Reports every problem.
pub fn validate_cards(cards: &[AgentCard]) -> Result<(), CardSetError> {
    let mut problems = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, c) in cards.iter().enumerate() {
        let name = c.name.trim();
        if name.is_empty() {
            problems.push(CardProblem::BlankName { index });
        } else if let Some(&first) = seen.get(name) {
            problems.push(CardProblem::DuplicateName {
                index,
                first,
                name: c.name.clone(),
            });
        } else {
            seen.insert(name, index);
        }
        if !c.has_capabilities {
            problems.push(CardProblem::MissingCapabilities {
                index,
                name: c.name.clone(),
            });
        }
        if c.supported_interfaces.is_empty() {
            problems.push(CardProblem::NoInterfaces {
                index,
                name: c.name.clone(),
            });
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CardSetError { problems })
    }
}

/// A required extension the content did not activate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequiredExtensionError {
    /// The card marks `uri` as required but it is not among the activated URIs.
    #[error("Required extension not activated: {uri}")]
    RequiredNotActivated {
        /// The first missing URI (card order).
        uri: String,
    },
}

/// Checks that every extension the card marks `required` is in `activated` (exact match).
pub fn check_required_extensions(
    card: &AgentCard,
    activated: &[String],
) -> Result<(), RequiredExtensionError> {
    match card
        .required_extensions()
        .find(|r| !activated.iter().any(|a| a == r))
    {
        Some(uri) => Err(RequiredExtensionError::RequiredNotActivated {
            uri: uri.to_owned(),
        }),
        None => Ok(()),
    }
}
