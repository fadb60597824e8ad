//! A2A-T conventions: extension URIs, metadata keys and the Negotiation-T context.
//!
//! See a2a-wire §8. URIs are compared exactly; the
//! Negotiation-T `NL` alias is accepted on read and never emitted.

use crate::a2a::ReceivedMessage;
use serde_json::{Map, Value};

/// The prefix shared by every A2A-T extension URI.
pub const EXTENSION_URI_BASE: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/";
/// Task-T: structured task prompt.
pub const TASK_T_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/v1";
/// Negotiation-T, canonical (the only spelling this crate emits).
pub const NEGOTIATION_T_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1";
/// Negotiation-T legacy `NL` alias (accepted on read only).
pub const NEGOTIATION_T_NL_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/NL/v1";
/// Authorization-T: one-shot authorization.
pub const AUTHORIZATION_T_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Authorization-T/v1";
/// Notification-T: long-lived subscription.
pub const NOTIFICATION_T_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Notification-T/v1";

/// Metadata key of the template the A2A-T text was rendered from.
pub const TEMPLATE_URI_KEY: &str = "templateUri";
/// Metadata key of the Negotiation-T context object.
pub const NEGOTIATION_CONTEXT_KEY: &str = "negotiationContext";

/// Whether `uri` is the canonical Negotiation-T URI or its `NL` alias (exact match).
pub fn is_negotiation_uri(uri: &str) -> bool {
    uri == NEGOTIATION_T_URI || uri == NEGOTIATION_T_NL_URI
}

/// A Negotiation-T performative (exact uppercase on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Performative {
    /// `PROPOSE`.
    Propose,
    /// `ACCEPT`.
    Accept,
    /// `REJECT`.
    Reject,
    /// `ABORT`.
    Abort,
}

impl Performative {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Performative::Propose => "PROPOSE",
            Performative::Accept => "ACCEPT",
            Performative::Reject => "REJECT",
            Performative::Abort => "ABORT",
        }
    }

    /// Parses the exact uppercase spelling.
    pub fn parse(s: &str) -> Option<Performative> {
        match s {
            "PROPOSE" => Some(Performative::Propose),
            "ACCEPT" => Some(Performative::Accept),
            "REJECT" => Some(Performative::Reject),
            "ABORT" => Some(Performative::Abort),
            _ => None,
        }
    }

    /// ACCEPT, REJECT and ABORT end a negotiation.
    pub fn is_terminal(self) -> bool {
        self != Performative::Propose
    }
}

impl core::fmt::Display for Performative {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a `negotiationContext` is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NegotiationContextError {
    /// The context is not a JSON object.
    #[error("negotiationContext is not an object (found {found})")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A member is missing.
    #[error("negotiationContext.{field} is missing")]
    Missing {
        /// The member name.
        field: &'static str,
    },
    /// `id` is not a non-blank string.
    #[error("negotiationContext.id must be a non-blank string, found {found}")]
    InvalidId {
        /// The offending value.
        found: String,
    },
    /// `round`/`maxRounds` is not an integral JSON number ≥ 1 fitting `u32`.
    #[error("negotiationContext.{field} must be an integral JSON number >= 1, found {found}")]
    InvalidInteger {
        /// `round` or `maxRounds`.
        field: &'static str,
        /// The offending value.
        found: String,
    },
    /// The performative is not exactly PROPOSE, ACCEPT, REJECT or ABORT.
    #[error(
        "negotiationContext.performative must be PROPOSE, ACCEPT, REJECT or ABORT, found {found}"
    )]
    InvalidPerformative {
        /// The offending value.
        found: String,
    },
    /// No metadata layer of the received response carries a `negotiationContext`.
    #[error("no negotiationContext in any metadata layer")]
    Absent,
    /// Two metadata layers carry different contexts.
    #[error(
        "conflicting negotiation contexts: {first} in {first_layer} vs {second} in {second_layer}"
    )]
    Conflicting {
        /// Layer of the first context (`message`, `task`, `artifact <id>`).
        first_layer: String,
        /// The first context, as JSON.
        first: String,
        /// Layer of the differing context.
        second_layer: String,
        /// The differing context, as JSON.
        second: String,
    },
}

/// The Negotiation-T context `{"id","round","maxRounds","performative"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NegotiationContext {
    /// Negotiation id (agents require a UUID shape; only non-blank is checked here).
    pub id: String,
    /// 1-based round.
    pub round: u32,
    /// Highest allowed round.
    pub max_rounds: u32,
    /// The performative.
    pub performative: Performative,
}

fn short_json(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        let mut t: String = s.chars().take(80).collect();
        t.push('…');
        t
    } else {
        s
    }
}

/// A JSON number with an integral value ≥ 1 that fits `u32` (`1`, `1.0`, `1e0`); strings,
/// booleans and fractions are rejected.
fn round_number(v: &Value, field: &'static str) -> Result<u32, NegotiationContextError> {
    let bad = || NegotiationContextError::InvalidInteger {
        field,
        found: short_json(v),
    };
    let Value::Number(n) = v else {
        return Err(bad());
    };
    let i = if let Some(u) = n.as_u64() {
        u
    } else {
        let f = n.as_f64().ok_or_else(bad)?;
        if !(f.is_finite() && f.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&f)) {
            return Err(bad());
        }
        f as u64
    };
    match u32::try_from(i) {
        Ok(r) if r >= 1 => Ok(r),
        _ => Err(bad()),
    }
}

impl NegotiationContext {
    /// Parses a context strictly: `id` a non-blank string; `round`/`maxRounds` integral
    /// JSON numbers ≥ 1; `performative` exactly uppercase. Unknown members are ignored.
    pub fn from_json(v: &Value) -> Result<Self, NegotiationContextError> {
        let m = v.as_object().ok_or(NegotiationContextError::NotAnObject {
            found: crate::a2a::protojson::type_name(v),
        })?;
        let get = |field: &'static str| {
            m.get(field)
                .ok_or(NegotiationContextError::Missing { field })
        };
        let id = match get("id")? {
            Value::String(s) if !s.trim().is_empty() => s.clone(),
            other => {
                return Err(NegotiationContextError::InvalidId {
                    found: short_json(other),
                });
            }
        };
        let round = round_number(get("round")?, "round")?;
        let max_rounds = round_number(get("maxRounds")?, "maxRounds")?;
        let p = get("performative")?;
        let performative = p.as_str().and_then(Performative::parse).ok_or_else(|| {
            NegotiationContextError::InvalidPerformative {
                found: short_json(p),
            }
        })?;
        Ok(NegotiationContext {
            id,
            round,
            max_rounds,
            performative,
        })
    }

    /// `{"id","round","maxRounds","performative"}` in that order, integers as integers.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".to_owned(), Value::String(self.id.clone()));
        m.insert("round".to_owned(), Value::from(self.round));
        m.insert("maxRounds".to_owned(), Value::from(self.max_rounds));
        m.insert(
            "performative".to_owned(),
            Value::String(self.performative.as_str().to_owned()),
        );
        Value::Object(m)
    }

    /// `round > maxRounds` (`round == maxRounds` can still be answered).
    pub fn is_exhausted(&self) -> bool {
        self.round > self.max_rounds
    }

    /// Same id, round and maxRounds with a new performative (for replies).
    pub fn with_performative(&self, p: Performative) -> Self {
        NegotiationContext {
            performative: p,
            ..self.clone()
        }
    }

    /// Same id, maxRounds and performative, `round + 1` (for a proposer's next Propose).
    pub fn next_round(&self) -> Self {
        NegotiationContext {
            round: self.round.saturating_add(1),
            ..self.clone()
        }
    }
}

/// The context in `meta[negotiationContext]`: `Ok(None)` when the key is absent, an error when
/// present but invalid.
pub fn metadata_negotiation(
    meta: &Map<String, Value>,
) -> Result<Option<NegotiationContext>, NegotiationContextError> {
    meta.get(NEGOTIATION_CONTEXT_KEY)
        .map(NegotiationContext::from_json)
        .transpose()
}

/// Whether a Negotiation-T URI key (canonical or `NL` alias) is present in `meta`.
pub fn metadata_has_negotiation_key(meta: &Map<String, Value>) -> bool {
    meta.contains_key(NEGOTIATION_T_URI) || meta.contains_key(NEGOTIATION_T_NL_URI)
}

/// The negotiation context of a received message across its metadata layers:
/// the message metadata, the task metadata and each artifact's metadata. Contexts found in
/// several layers must be identical ([`NegotiationContextError::Conflicting`] otherwise); an
/// invalid context in any layer is an error; none at all is `Ok(None)`.
pub fn context_of(
    received: &ReceivedMessage,
) -> Result<Option<NegotiationContext>, NegotiationContextError> {
    let mut layers: Vec<(String, &Map<String, Value>)> = Vec::new();
    if let Some(m) = received.message.as_ref().and_then(|m| m.metadata.as_ref()) {
        layers.push(("message".to_owned(), m));
    }
    if let Some(m) = received.task_metadata.as_ref() {
        layers.push(("task".to_owned(), m));
    }
    for a in &received.artifacts {
        if let Some(m) = a.metadata.as_ref() {
            layers.push((format!("artifact {}", a.artifact_id), m));
        }
    }
    let mut found: Option<(String, NegotiationContext)> = None;
    for (layer, meta) in layers {
        let Some(ctx) = metadata_negotiation(meta)? else {
            continue;
        };
        match &found {
            None => found = Some((layer, ctx)),
            Some((first_layer, first)) if *first != ctx => {
                return Err(NegotiationContextError::Conflicting {
                    first_layer: first_layer.clone(),
                    first: first.to_json().to_string(),
                    second_layer: layer,
                    second: ctx.to_json().to_string(),
                });
            }
            Some(_) => {}
        }
    }
    Ok(found.map(|(_, c)| c))
}

/// Whether content activates `uri`: it is listed in `extensions` **and** present as a metadata
/// key (exact match).
pub fn activates(extensions: &[String], metadata: &Map<String, Value>, uri: &str) -> bool {
    extensions.iter().any(|e| e == uri) && metadata.contains_key(uri)
}
