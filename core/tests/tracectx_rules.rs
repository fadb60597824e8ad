//! Rules of the W3C trace context a run sends: the `traceparent` text it reads and writes, the
//! `tracestate` it lets through, and the ids a seed gives, stated against the public API.

use a2at_core::OpId;
use a2at_core::tracectx::*;
use proptest::prelude::*;

/// The offsets of the three dashes of a `traceparent` (after the version, the trace id and the
/// parent id).
const DASHES: [usize; 3] = [2, 35, 52];

fn canonical(trace_id: u128, parent_id: u64, flags: u8) -> String {
    format!("00-{trace_id:032x}-{parent_id:016x}-{flags:02x}")
}

proptest! {
    /// Any valid parent is written as `00-<32 hex>-<16 hex>-<2 hex>` in lowercase and read back
    /// as itself, by `parse`, `FromStr` and serde alike: a host's parent survives a trace file.
    #[test]
    fn a_traceparent_is_written_in_canonical_form_and_read_back_as_itself(
        trace_id in 1..=u128::MAX,
        parent_id in 1..=u64::MAX,
        flags in any::<u8>(),
    ) {
        let p = TraceParent::new(trace_id, parent_id, flags).expect("non-zero ids");
        let text = canonical(trace_id, parent_id, flags);
        prop_assert_eq!(p.to_string(), text.clone());
        let parsed = TraceParent::parse(&text).expect("a canonical traceparent");
        prop_assert_eq!(
            (parsed.trace_id(), parsed.parent_id(), parsed.flags()),
            (trace_id, parent_id, flags)
        );
        prop_assert_eq!(text.parse::<TraceParent>(), Ok(p));
        let json = serde_json::to_string(&p).expect("serialisable");
        prop_assert_eq!(json.clone(), format!("\"{text}\""));
        prop_assert_eq!(serde_json::from_str::<TraceParent>(&json).expect("readable"), p);
    }

    /// Each of the three separators must be a dash: a value with any other character in one of
    /// them is not a `traceparent`, even when its fields are valid hex.
    #[test]
    fn a_traceparent_with_any_separator_other_than_a_dash_is_malformed(
        trace_id in 1..=u128::MAX,
        parent_id in 1..=u64::MAX,
        at in 0..DASHES.len(),
        sep in proptest::char::range(' ', '~').prop_filter("not a dash", |c| *c != '-'),
    ) {
        let mut text = canonical(trace_id, parent_id, 1).into_bytes();
        text[DASHES[at]] = sep as u8;
        let text = String::from_utf8(text).expect("ASCII");
        prop_assert_eq!(TraceParent::parse(&text), Err(TraceContextError::Malformed));
        prop_assert_eq!(text.parse::<TraceParent>(), Err(TraceContextError::Malformed));
    }
}

/// A JSON string that is not a `traceparent` does not deserialise: a trace file with a bad
/// parent is refused rather than read as some other trace.
#[test]
fn a_malformed_traceparent_string_does_not_deserialise() {
    for json in [
        r#""00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7""#,
        r#""00-00000000000000000000000000000000-00f067aa0ba902b7-01""#,
        r#""""#,
    ] {
        assert!(serde_json::from_str::<TraceParent>(json).is_err(), "{json}");
    }
}

/// A `tracestate` travels when it is 1 to 512 printable ASCII characters, and only then: the
/// limits are inclusive, and a control or non-ASCII character would break the header.
#[test]
fn a_tracestate_of_one_to_512_printable_characters_is_accepted_and_nothing_else() {
    assert_eq!(MAX_TRACESTATE_LEN, 512);
    assert_eq!(check_tracestate("k"), Ok(()));
    assert_eq!(check_tracestate(&"a".repeat(512)), Ok(()));
    let printable: String = (' '..='~').collect();
    assert_eq!(check_tracestate(&printable), Ok(()));
    for bad in [
        String::new(),
        "a".repeat(513),
        "k=v\u{7f}".to_owned(),
        "k=v\u{1f}".to_owned(),
        "k=v\t".to_owned(),
        "k=\u{e9}".to_owned(),
    ] {
        assert_eq!(
            check_tracestate(&bad),
            Err(TraceContextError::TraceState),
            "{bad:?}"
        );
    }
}

/// The ids of a seed do not change between builds: recorded runs (golden traces) carry them in
/// every request's `traceparent`, and replay compares those headers byte for byte.
#[test]
fn the_trace_and_span_ids_of_a_seed_are_stable_across_builds() {
    // (seed, trace id, [(op, span id)])
    type Ids = (u64, u128, [(u64, u64); 5]);
    let cases: [Ids; 2] = [
        (
            0,
            0x80be496de47ff7bb3a84a1b428129a46,
            [
                (0, 0x61e1af70c0245ca9),
                (1, 0x7201767b408a8d1a),
                (2, 0x97177e8230b1611e),
                (3, 0x5c17d40cda3ad4b3),
                (u64::MAX, 0x9204300833c206e4),
            ],
        ),
        (
            7,
            0x736a99d525e5172c11f18626e9a6fde9,
            [
                (0, 0x35cd2e58a974d1bf),
                (1, 0xdad939ebf493a827),
                (2, 0x5a1163016310b839),
                (3, 0x7df23f0c95b880cc),
                (u64::MAX, 0x06c3bd102d8d1b02),
            ],
        ),
    ];
    for (seed, trace_id, spans) in cases {
        let ctx = TraceContext::new(seed, None, None);
        assert_eq!(ctx.trace_id(), trace_id, "seed {seed}");
        for (op, span) in spans {
            assert_eq!(ctx.span_id(OpId(op)), span, "seed {seed}, op {op}");
            assert_eq!(
                ctx.traceparent(OpId(op)),
                canonical(trace_id, span, SAMPLED),
                "seed {seed}, op {op}"
            );
        }
    }
}

/// Joining a host's trace keeps its trace id and flags, and the span ids stay those of the
/// seed: the parent decides the trace, the run's own exchanges still get their own spans.
#[test]
fn a_joined_trace_keeps_the_parents_trace_and_flags_and_the_seeds_spans() {
    let parent = TraceParent::new(0x0af7651916cd43dd8448eb211c80319c, 0xb7ad6b7169203331, 0)
        .expect("non-zero ids");
    let own = TraceContext::new(7, None, None);
    let joined = TraceContext::new(7, Some(&parent), Some("k=v"));
    assert_eq!(joined.trace_id(), parent.trace_id());
    for op in [0, 1, 9] {
        assert_eq!(joined.span_id(OpId(op)), own.span_id(OpId(op)));
        assert_eq!(
            joined.traceparent(OpId(op)),
            canonical(parent.trace_id(), own.span_id(OpId(op)), 0)
        );
    }
}
