//! Rules of the engine's ids, stated against the public generator and the text it returns: the
//! wire ids are those of the published SplitMix64 and FNV-1a algorithms in UUID form, so a
//! recorded run replays byte for byte with any other implementation of them.

use a2at_core::ids::name_based_uuid;
use a2at_core::{CallId, IdGenerator, OpId, StepId, TaskKey};
use proptest::prelude::*;

/// SplitMix64 as published by its author, written independently of the engine.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a of `bytes` from `basis`.
fn fnv1a(bytes: &[u8], basis: u64) -> u64 {
    bytes.iter().fold(basis, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// `hi` and `lo` as the `8-4-4-4-12` text of a UUID.
fn uuid(hi: u64, lo: u64) -> String {
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFFF,
        lo >> 48,
        lo & 0xFFFF_FFFF_FFFF
    )
}

/// Whether `s` is a lowercase UUID text of `version` with the RFC 4122 variant.
fn is_uuid_of_version(s: &str, version: char) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                *c == b'-'
            } else {
                c.is_ascii_digit() || (b'a'..=b'f').contains(c)
            }
        })
        && b[14] == version as u8
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
}

/// The generator's first draws from seed 0 are the published SplitMix64 test values: the
/// stream is the algorithm itself, not something close to it.
#[test]
fn the_generator_draws_the_published_splitmix64_values() {
    let mut g = IdGenerator::new(0);
    assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
    assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
}

/// A version-4 id is the next two draws with the version and variant bits set, and nothing
/// else changed: every other bit still comes from the stream.
#[test]
fn a_random_uuid_is_two_draws_with_only_the_version_and_variant_set() {
    for seed in [0, 1, 0x0123_4567_89AB_CDEF, u64::MAX] {
        let mut g = IdGenerator::new(seed);
        let mut state = seed;
        for _ in 0..3 {
            let hi = splitmix64(&mut state);
            let lo = splitmix64(&mut state);
            let want = uuid(
                (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x4000,
                (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000,
            );
            let got = g.next_uuid();
            assert!(is_uuid_of_version(&got, '4'), "{got}");
            assert_eq!(got, want, "seed {seed}");
        }
    }
}

/// A fork is seeded with the parent's next draw and moves the parent by exactly that draw,
/// so a consumer's ids depend only on where it forked.
#[test]
fn a_fork_is_seeded_by_the_parents_next_draw() {
    let mut parent = IdGenerator::new(42);
    let mut reference = IdGenerator::new(42);
    let seed = reference.next_u64();
    let mut child = parent.fork();
    assert_eq!(child, IdGenerator::new(seed));
    assert_eq!(child.next_u64(), IdGenerator::new(seed).next_u64());
    assert_eq!(parent, reference);
    assert_eq!(parent.next_u64(), reference.next_u64());
}

/// A name-based id is FNV-1a of the name (the high half) and FNV-1a again from a basis mixed
/// with that hash (the low half), with the version-8 and variant bits set.
#[test]
fn a_name_based_uuid_is_the_fnv1a_hash_of_the_name() {
    for name in ["", "a", "exec:step:0", "exécution:étape:12345"] {
        let hi = fnv1a(name.as_bytes(), 0xCBF2_9CE4_8422_2325);
        let lo = fnv1a(name.as_bytes(), 0x6C62_272E_07BB_0142 ^ hi);
        let want = uuid(
            (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x8000,
            (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000,
        );
        let got = name_based_uuid(name);
        assert!(is_uuid_of_version(&got, '8'), "{got}");
        assert_eq!(got, want, "{name:?}");
    }
    // FNV-1a of "a" is a published test value.
    assert_eq!(fnv1a(b"a", 0xCBF2_9CE4_8422_2325), 0xAF63_DC4C_8601_EC8C);
    assert!(name_based_uuid("a").starts_with("af63dc4c-8601-8c8c-"));
}

/// Local ids print with their kind, so a log line never leaves a reader guessing which
/// counter a number belongs to; a step id indexes the workflow's steps by its number.
#[test]
fn local_ids_print_their_kind_and_a_step_id_is_its_index() {
    assert_eq!(StepId(3).to_string(), "StepId#3");
    assert_eq!(CallId(4).to_string(), "CallId#4");
    assert_eq!(OpId(5).to_string(), "OpId#5");
    let key = TaskKey {
        step: StepId(1),
        subtask: 2,
    };
    assert_eq!(key.to_string(), "step 1 subtask 2");
    for i in [0u32, 1, 2, 7, u32::MAX] {
        assert_eq!(StepId(i).index(), i as usize);
    }
}

proptest! {
    // Rule: the same seed gives the same stream, draw for draw, and it is SplitMix64's.
    #[test]
    fn any_seed_gives_the_splitmix64_stream(seed in any::<u64>()) {
        let mut g = IdGenerator::new(seed);
        let mut state = seed;
        for _ in 0..4 {
            prop_assert_eq!(g.next_u64(), splitmix64(&mut state));
        }
        let mut again = IdGenerator::new(seed);
        let mut g = IdGenerator::new(seed);
        prop_assert_eq!(g.next_uuid(), again.next_uuid());
    }

    // Rule: a name-based id depends on the name alone and is the FNV-1a UUID of it.
    #[test]
    fn any_name_gives_its_fnv1a_uuid(name in "\\PC{0,40}") {
        let hi = fnv1a(name.as_bytes(), 0xCBF2_9CE4_8422_2325);
        let lo = fnv1a(name.as_bytes(), 0x6C62_272E_07BB_0142 ^ hi);
        let want = uuid(
            (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x8000,
            (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000,
        );
        prop_assert_eq!(name_based_uuid(&name), want);
    }
}
