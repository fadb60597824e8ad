//! Typed identifiers and the deterministic id generator.
//!
//! Local ids are per-run sequence numbers wrapped in newtypes so that a step index can never be
//! passed where a host-call id is expected. Wire ids (message ids, context ids, JSON-RPC request
//! ids) are UUID-shaped strings drawn from [`IdGenerator`], a SplitMix64 stream seeded by the
//! caller: the same seed gives the same ids, so a recorded run replays byte for byte.

use serde::{Deserialize, Serialize};

use crate::SharedStr;

macro_rules! local_id {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}#{}", stringify!($name), self.0)
            }
        }
    };
}

local_id!(
    /// Index of a step in its [`ValidatedWorkflow`](crate::workflow::ValidatedWorkflow).
    StepId(u32)
);
local_id!(
    /// One host callback the machine is waiting for.
    CallId(u64)
);
local_id!(
    /// One HTTP exchange the machine asked the driver to carry out.
    OpId(u64)
);

impl StepId {
    /// The index into the workflow's step list.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Identifies one subtask of one step: the unit that becomes a task invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskKey {
    /// The step.
    pub step: StepId,
    /// Index of the subtask within the step.
    pub subtask: u32,
}

impl core::fmt::Display for TaskKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "step {} subtask {}", self.step.0, self.subtask)
    }
}

/// A deterministic stream of 64-bit values and UUID-shaped strings.
///
/// SplitMix64 is tiny, has no bad seeds and passes the usual statistical batteries; it is not
/// cryptographic, which is fine because these ids only need to be unique, not secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdGenerator {
    state: u64,
}

impl IdGenerator {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        IdGenerator { state: seed }
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next id in the textual form of a version-4 UUID (`8-4-4-4-12` lowercase hex).
    ///
    /// Agents that validate ids as UUIDs (the A2A-T rule gate does) accept it.
    pub fn next_uuid(&mut self) -> String {
        let hi = self.next_u64();
        let lo = self.next_u64();
        let hi = (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
        let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
        uuid_text(hi, lo)
    }

    /// Derives an independent generator, so that one consumer's draws never shift another's.
    pub fn fork(&mut self) -> IdGenerator {
        IdGenerator::new(self.next_u64())
    }
}

/// Name-based UUID (version 8 layout, FNV-1a based) for stable logical task ids.
///
/// The same `(execution id, step name, subtask index)` always gives the same id within and across
/// runs, which is what the host needs to correlate its own records; it is not a remote A2A id.
pub fn name_based_uuid(name: &str) -> String {
    uuid_of_parts(&[name.as_bytes()])
}

/// The logical id of subtask `subtask` of step `step`: [`name_based_uuid`] of
/// `"{execution_id}:{step}:{subtask}"`, hashed part by part instead of formatting that name first
/// (two `format!`s per task were a visible share of a run's cost).
pub(crate) fn task_uuid(execution_id: &str, step: &str, subtask: u32) -> SharedStr {
    // Decimal digits of `subtask`, written from the end of the buffer.
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut n = subtask;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let text = uuid_bytes_of_parts(&[
        execution_id.as_bytes(),
        b":",
        step.as_bytes(),
        b":",
        &digits[at..],
    ]);
    SharedStr::from(ascii(&text))
}

/// [`name_based_uuid`] of the concatenation of `parts`: FNV-1a is a streaming hash, so hashing the
/// parts in order equals hashing the joined name.
fn uuid_of_parts(parts: &[&[u8]]) -> String {
    ascii(&uuid_bytes_of_parts(parts)).to_owned()
}

/// [`uuid_of_parts`] as the text's bytes, so that each caller makes the string it keeps in one
/// allocation.
fn uuid_bytes_of_parts(parts: &[&[u8]]) -> [u8; 36] {
    fn fnv1a(parts: &[&[u8]], basis: u64) -> u64 {
        let mut h = basis;
        // Two plain loops: a flattened iterator checks which part it is in at every byte.
        for part in parts {
            for b in *part {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0000_0100_0000_01B3);
            }
        }
        h
    }
    let hi = fnv1a(parts, 0xCBF2_9CE4_8422_2325);
    let lo = fnv1a(parts, 0x6C62_272E_07BB_0142 ^ hi);
    let hi = (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_8000;
    let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    uuid_bytes(hi, lo)
}

/// `hi` and `lo` as `8-4-4-4-12` lowercase hex, the same text as
/// `format!("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", …)` of their fields, written digit by digit:
/// the formatting machinery cost more than the hashing.
fn uuid_text(hi: u64, lo: u64) -> String {
    ascii(&uuid_bytes(hi, lo)).to_owned()
}

/// [`uuid_text`] as bytes.
fn uuid_bytes(hi: u64, lo: u64) -> [u8; 36] {
    let (hi, lo) = (hex_digits(hi), hex_digits(lo));
    let mut out = [b'-'; 36];
    out[..8].copy_from_slice(&hi[..8]);
    out[9..13].copy_from_slice(&hi[8..12]);
    out[14..18].copy_from_slice(&hi[12..]);
    out[19..23].copy_from_slice(&lo[..4]);
    out[24..].copy_from_slice(&lo[4..]);
    out
}

/// The 16 lowercase hex digits of `x`, most significant first, computed eight at a time: each
/// half's nibbles are spread one per byte, then every byte becomes its digit at once.
pub(crate) fn hex_digits(x: u64) -> [u8; 16] {
    fn eight(half: u32) -> [u8; 8] {
        let mut n = u64::from(half);
        n = (n | (n << 16)) & 0x0000_FFFF_0000_FFFF;
        n = (n | (n << 8)) & 0x00FF_00FF_00FF_00FF;
        n = (n | (n << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        // A nibble of 10 or more carries into bit 4 when 6 is added: those bytes move from
        // after '9' up to 'a' (39 places further).
        let letters = ((n + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        (n + 0x3030_3030_3030_3030 + letters * 39).to_be_bytes()
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&eight((x >> 32) as u32));
    out[8..].copy_from_slice(&eight(x as u32));
    out
}

/// The text of bytes the UUID writers filled: only ASCII was written, so the check always
/// passes, and it costs less than building the string char by char.
fn ascii(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_uuid_shaped(s: &str) -> bool {
        let groups: Vec<&str> = s.split('-').collect();
        groups.len() == 5
            && [8, 4, 4, 4, 12]
                .iter()
                .zip(&groups)
                .all(|(n, g)| g.len() == *n && g.chars().all(|c| c.is_ascii_hexdigit()))
    }

    #[test]
    fn same_seed_gives_same_ids_and_different_seeds_differ() {
        let mut a = IdGenerator::new(7);
        let mut b = IdGenerator::new(7);
        let mut c = IdGenerator::new(8);
        let xs: Vec<String> = (0..4).map(|_| a.next_uuid()).collect();
        let ys: Vec<String> = (0..4).map(|_| b.next_uuid()).collect();
        let zs: Vec<String> = (0..4).map(|_| c.next_uuid()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        assert!(xs.iter().all(|x| is_uuid_shaped(x)));
        assert!(xs.iter().all(|x| x.as_bytes()[14] == b'4'));
    }

    #[test]
    fn ids_do_not_repeat_in_a_long_stream() {
        let mut g = IdGenerator::new(0);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..10_000 {
            assert!(seen.insert(g.next_uuid()));
        }
    }

    #[test]
    fn uuid_text_matches_the_formatted_text() {
        let mut draws = IdGenerator::new(1);
        let drawn: Vec<(u64, u64)> = (0..1000)
            .map(|_| (draws.next_u64(), draws.next_u64()))
            .collect();
        for (hi, lo) in [
            (0u64, 0u64),
            (u64::MAX, u64::MAX),
            (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210),
            (0x8000_0000_0000_4000, 0x8000_0000_0000_0001),
            (0x9A9A_9A9A_9A9A_9A9A, 0xA9A9_A9A9_A9A9_A9A9),
        ]
        .into_iter()
        .chain(drawn)
        {
            let formatted = format!(
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                hi >> 32,
                (hi >> 16) & 0xFFFF,
                hi & 0xFFFF,
                lo >> 48,
                lo & 0xFFFF_FFFF_FFFF
            );
            assert_eq!(uuid_text(hi, lo), formatted);
        }
    }

    #[test]
    fn task_uuid_is_the_uuid_of_the_joined_name() {
        for (exec, step, i) in [
            ("e", "s", 0u32),
            ("exec-1", "step two", 7),
            ("", "", u32::MAX),
        ] {
            assert_eq!(
                task_uuid(exec, step, i),
                name_based_uuid(&format!("{exec}:{step}:{i}"))
            );
        }
    }

    #[test]
    fn name_based_ids_are_stable_and_distinct() {
        let a = name_based_uuid("exec:step:0");
        assert_eq!(a, name_based_uuid("exec:step:0"));
        assert_ne!(a, name_based_uuid("exec:step:1"));
        assert!(is_uuid_shaped(&a));
    }
}
