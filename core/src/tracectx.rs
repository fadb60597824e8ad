//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>) on every outgoing request.
//!
//! Each request carries a `traceparent` header (`00-<trace id>-<span id>-<flags>`, lowercase
//! hex) and, when the host gave one, its `tracestate` unchanged. Over gRPC the same pair travels
//! as request metadata, which is HTTP/2 headers.
//!
//! The ids are a pure function of the run's seed, like every other id the core draws, so a
//! recorded run replays with the same headers:
//!
//! * the **trace id** (16 bytes, never all zero) is drawn once per run, from a generator seeded
//!   with the run's seed mixed with a fixed constant, so drawing it shifts none of the run's
//!   other ids; when the host passes a [`TraceParent`], the run joins that trace instead;
//! * the **span id** (8 bytes, never zero) of an exchange is a bijective mix of the exchange's
//!   [`OpId`] with a per-run salt: every exchange, hence every attempt of a retried request, has
//!   its own span id, and two exchanges of one run never share one.
//!
//! The span of an exchange is a child of the host's span when the host gave a parent; the
//! driver's `tracing` spans record the same ids (`trace_id`, `span_id`).

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::{IdGenerator, OpId, hex_digits};
use crate::io::HeaderText;

/// The name of the header that carries the trace id and the sender's span id.
pub const TRACEPARENT: &str = "traceparent";
/// The name of the header that carries vendor-specific trace state, passed on unchanged.
pub const TRACESTATE: &str = "tracestate";

/// Longest `tracestate` value accepted (the W3C limit for what a vendor must propagate).
pub const MAX_TRACESTATE_LEN: usize = 512;

/// Mixed into the run's seed for the trace id generator, so that trace ids never repeat the run's
/// message or context ids drawn from the plain seed.
const TRACE_SALT: u64 = 0x7472_6163_6570_6172;

/// The `sampled` flag of the trace flags.
pub const SAMPLED: u8 = 0x01;

/// A parsed `traceparent` value: the trace to join and the span to parent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: u128,
    parent_id: u64,
    flags: u8,
}

/// Why a `traceparent` or `tracestate` value is refused; the message never repeats the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceContextError {
    /// Not of the form `00-<32 hex>-<16 hex>-<2 hex>`.
    #[error("traceparent must have the form 00-<32 lowercase hex>-<16 lowercase hex>-<2 hex>")]
    Malformed,
    /// A version this client does not read (only `00` is defined; `ff` is invalid).
    #[error("traceparent version must be 00")]
    Version,
    /// The trace id is all zero, which the standard declares invalid.
    #[error("traceparent trace id must not be all zero")]
    ZeroTraceId,
    /// The parent span id is all zero, which the standard declares invalid.
    #[error("traceparent parent id must not be all zero")]
    ZeroParentId,
    /// A `tracestate` that is empty, longer than [`MAX_TRACESTATE_LEN`] or holds a character
    /// outside printable ASCII (it would not be a valid header value).
    #[error("tracestate must be 1 to 512 printable ASCII characters")]
    TraceState,
}

impl TraceParent {
    /// A parent from its parts; `None` when the trace id or the parent id is zero.
    pub fn new(trace_id: u128, parent_id: u64, flags: u8) -> Option<TraceParent> {
        (trace_id != 0 && parent_id != 0).then_some(TraceParent {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// Parses a `traceparent` header value of version `00` (surrounding spaces allowed).
    pub fn parse(value: &str) -> Result<TraceParent, TraceContextError> {
        let v = value.trim().as_bytes();
        if v.len() != 55 || v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
            return Err(TraceContextError::Malformed);
        }
        let version = hex_value(&v[0..2]).ok_or(TraceContextError::Malformed)?;
        if version != 0 {
            return Err(TraceContextError::Version);
        }
        let trace_id = hex_value(&v[3..35]).ok_or(TraceContextError::Malformed)?;
        let parent_id = hex_value(&v[36..52]).ok_or(TraceContextError::Malformed)?;
        let flags = hex_value(&v[53..55]).ok_or(TraceContextError::Malformed)?;
        if trace_id == 0 {
            return Err(TraceContextError::ZeroTraceId);
        }
        if parent_id == 0 {
            return Err(TraceContextError::ZeroParentId);
        }
        Ok(TraceParent {
            trace_id,
            parent_id: parent_id as u64,
            flags: flags as u8,
        })
    }

    /// The trace id (16 bytes, big-endian).
    pub fn trace_id(&self) -> u128 {
        self.trace_id
    }

    /// The span id of the sender (8 bytes, big-endian).
    pub fn parent_id(&self) -> u64 {
        self.parent_id
    }

    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.flags
    }
}

/// Checks a `tracestate` value for what can travel as a header: 1 to [`MAX_TRACESTATE_LEN`]
/// printable ASCII characters. Its list structure is the vendors' business and passed on as is.
pub fn check_tracestate(value: &str) -> Result<(), TraceContextError> {
    let ok = !value.is_empty()
        && value.len() <= MAX_TRACESTATE_LEN
        && value.bytes().all(|b| (0x20..0x7f).contains(&b));
    if ok {
        Ok(())
    } else {
        Err(TraceContextError::TraceState)
    }
}

/// The value of 1 to 32 lowercase hex digits; `None` for anything else (uppercase is invalid in
/// `traceparent`).
fn hex_value(digits: &[u8]) -> Option<u128> {
    digits.iter().try_fold(0u128, |acc, &b| {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        Some((acc << 4) | u128::from(d))
    })
}

/// The canonical `00-<trace id>-<span id>-<flags>` text.
fn traceparent_text(trace_id: u128, span_id: u64, flags: u8) -> String {
    let mut buf = *b"00-00000000000000000000000000000000-0000000000000000-00";
    buf[3..19].copy_from_slice(&hex_digits((trace_id >> 64) as u64));
    buf[19..35].copy_from_slice(&hex_digits(trace_id as u64));
    buf[36..52].copy_from_slice(&hex_digits(span_id));
    buf[53..55].copy_from_slice(&hex_digits(u64::from(flags))[14..]);
    // Only ASCII hex digits and dashes were written, so the text is always valid UTF-8.
    String::from(core::str::from_utf8(&buf).unwrap_or_default())
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&traceparent_text(self.trace_id, self.parent_id, self.flags))
    }
}

impl FromStr for TraceParent {
    type Err = TraceContextError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TraceParent::parse(s)
    }
}

impl Serialize for TraceParent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TraceParent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        TraceParent::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The trace context of one run (or one extension or task operation): the trace id, the flags
/// and the trace state every request carries, and the salt its span ids are mixed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: u128,
    flags: u8,
    state: Option<String>,
    salt: u64,
}

impl TraceContext {
    /// The context of a run seeded with `seed`: the trace of `parent` when given (with its
    /// flags), else a trace id drawn from the seed (sampled). `state` is sent as `tracestate`.
    pub fn new(seed: u64, parent: Option<&TraceParent>, state: Option<&str>) -> TraceContext {
        Self::build(seed, parent, state)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(seed: u64, parent: Option<&TraceParent>, state: Option<&str>) -> TraceContext {
        let mut ids = IdGenerator::new(seed ^ TRACE_SALT);
        let hi = ids.next_u64();
        let lo = ids.next_u64();
        let salt = ids.next_u64();
        // All zero is invalid; 2^-128 unlikely, but cheap to rule out.
        let drawn = ((u128::from(hi) << 64) | u128::from(lo)).max(1);
        let (trace_id, flags) = match parent {
            Some(p) => (p.trace_id, p.flags),
            None => (drawn, SAMPLED),
        };
        TraceContext {
            trace_id,
            flags,
            state: state.map(str::to_owned),
            salt,
        }
    }

    /// The trace id every request of the run carries.
    pub fn trace_id(&self) -> u128 {
        self.trace_id
    }

    /// The span id of exchange `op`: distinct for distinct ops of one context (a bijection of
    /// the op id), never zero.
    pub fn span_id(&self, op: OpId) -> u64 {
        // SplitMix64's finaliser is a bijection and so is adding the salt to an odd multiple
        // of the op id, so two ops never share a span id. The one op that would map to zero
        // takes 1 instead (a 2^-64 chance of sharing it with the op that maps to 1).
        let mut z = self
            .salt
            .wrapping_add(op.0.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)).max(1)
    }

    /// The `traceparent` value of exchange `op`.
    pub fn traceparent(&self, op: OpId) -> String {
        traceparent_text(self.trace_id, self.span_id(op), self.flags)
    }

    /// Appends `traceparent` (and `tracestate` when there is one) for exchange `op`.
    pub(crate) fn push_headers(&self, op: OpId, headers: &mut Vec<(HeaderText, HeaderText)>) {
        headers.push((TRACEPARENT.into(), self.traceparent(op).into()));
        if let Some(state) = &self.state {
            headers.push((TRACESTATE.into(), state.clone().into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn parses_and_prints_the_standard_example() {
        let p = TraceParent::parse(SAMPLE).unwrap();
        assert_eq!(p.trace_id(), 0x4bf92f3577b34da6a3ce929d0e0e4736);
        assert_eq!(p.parent_id(), 0x00f067aa0ba902b7);
        assert_eq!(p.flags(), 1);
        assert_eq!(p.to_string(), SAMPLE);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<TraceParent>(&json).unwrap(), p);
    }

    #[test]
    fn the_text_is_the_formatted_fields_for_any_values() {
        let mut draws = IdGenerator::new(3);
        for _ in 0..500 {
            let trace_id = u128::from(draws.next_u64()) << 64 | u128::from(draws.next_u64());
            let (span_id, flags) = (draws.next_u64(), draws.next_u64() as u8);
            assert_eq!(
                traceparent_text(trace_id, span_id, flags),
                format!("00-{trace_id:032x}-{span_id:016x}-{flags:02x}")
            );
        }
        assert_eq!(
            traceparent_text(u128::MAX, u64::MAX, u8::MAX),
            format!("00-{}-{}-ff", "f".repeat(32), "f".repeat(16))
        );
    }

    #[test]
    fn refuses_malformed_values_by_kind() {
        use TraceContextError::*;
        let cases = [
            ("", Malformed),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                Malformed,
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Version,
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                ZeroTraceId,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                ZeroParentId,
            ),
            // A multi-byte character where a dash belongs must not panic on slicing.
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b\u{e9}01",
                Malformed,
            ),
        ];
        for (value, want) in cases {
            assert_eq!(TraceParent::parse(value), Err(want), "{value:?}");
        }
    }

    #[test]
    fn tracestate_must_be_a_printable_header_value() {
        assert!(check_tracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7").is_ok());
        assert!(check_tracestate("").is_err());
        assert!(check_tracestate("a=b\r\nx: y").is_err());
        assert!(check_tracestate(&"a".repeat(513)).is_err());
    }

    #[test]
    fn the_same_seed_gives_the_same_ids_and_ops_get_distinct_spans() {
        let a = TraceContext::new(7, None, None);
        let b = TraceContext::new(7, None, None);
        assert_eq!(a, b);
        assert_ne!(a.trace_id(), TraceContext::new(8, None, None).trace_id());
        assert_ne!(a.trace_id(), 0);
        let spans: std::collections::BTreeSet<u64> =
            (0..1000).map(|i| a.span_id(OpId(i))).collect();
        assert_eq!(spans.len(), 1000);
        assert!(!spans.contains(&0));
        let text = a.traceparent(OpId(3));
        let parsed = TraceParent::parse(&text).unwrap();
        assert_eq!(parsed.trace_id(), a.trace_id());
        assert_eq!(parsed.parent_id(), a.span_id(OpId(3)));
        assert_eq!(parsed.flags(), SAMPLED);
    }

    #[test]
    fn a_host_parent_gives_its_trace_and_flags() {
        let parent =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        let ctx = TraceContext::new(7, Some(&parent), Some("k=v"));
        assert_eq!(ctx.trace_id(), parent.trace_id());
        let mut headers = Vec::new();
        ctx.push_headers(OpId(1), &mut headers);
        assert_eq!(headers[0].0, TRACEPARENT);
        assert!(
            headers[0]
                .1
                .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
        );
        assert!(headers[0].1.ends_with("-00"));
        assert_ne!(
            headers[0].1,
            parent.to_string(),
            "the exchange is a child span"
        );
        assert_eq!(headers[1], (TRACESTATE.into(), "k=v".into()));
    }
}
