//! Injected time.
//!
//! The core never reads a clock. Every input that can change state is stamped by the driver
//! with a [`Timestamp`]: a monotonic count of microseconds since the run's epoch (the moment the
//! driver created it). Timestamps serialise as plain numbers, so a recorded trace replays
//! exactly.

use core::time::Duration;
use serde::{Deserialize, Serialize};

/// Microseconds since the epoch chosen by the driver (normally the creation of the machine).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The epoch itself.
    pub const ZERO: Timestamp = Timestamp(0);

    /// Builds a timestamp from microseconds since the epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Timestamp(micros)
    }

    /// Builds a timestamp from milliseconds since the epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Timestamp(millis.saturating_mul(1_000))
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// This instant plus `d`, saturating at the far future instead of wrapping.
    pub fn saturating_add(self, d: Duration) -> Timestamp {
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(micros))
    }

    /// Time from `earlier` to `self`, or zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl core::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}us", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_saturates_instead_of_wrapping() {
        let t = Timestamp(u64::MAX - 1);
        assert_eq!(
            t.saturating_add(Duration::from_secs(1)),
            Timestamp(u64::MAX)
        );
        assert_eq!(
            Timestamp::from_millis(250).saturating_add(Duration::from_millis(250)),
            Timestamp(500_000)
        );
    }

    #[test]
    fn duration_since_a_later_instant_is_zero() {
        assert_eq!(
            Timestamp(5).saturating_duration_since(Timestamp(9)),
            Duration::ZERO
        );
        assert_eq!(
            Timestamp(9).saturating_duration_since(Timestamp(5)),
            Duration::from_micros(4)
        );
    }
}
