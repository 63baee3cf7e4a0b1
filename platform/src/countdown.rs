//! Countdowns the kernel reports: an address's valid and preferred lifetimes, a route's
//! `expires`.
//!
//! The kernel sends what is left of them at the moment it writes the message. A cache keeps an
//! object for hours, so a count read once is stale a second later. Like NetworkManager's
//! platform cache (which keeps a timestamp next to each lifetime), the cache keeps the end
//! instead: the second the count reaches zero, on a monotonic clock that starts with the
//! process. What is left is computed when asked, as `ip` would print it then.
//!
//! Two readings of an object the kernel did not change have the same end, so they compare
//! equal (to within the second in which each was read); a lifetime set again, even to the
//! same count, has a new end and compares different.

use std::sync::OnceLock;
use std::time::Instant;

/// The instant the countdowns' clock starts from: the first time one is read or asked.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Whole seconds from the countdowns' epoch to `at` (0 before it).
pub(crate) fn seconds_at(at: Instant) -> i64 {
    let secs = at.saturating_duration_since(epoch()).as_secs();
    i64::try_from(secs).unwrap_or(i64::MAX)
}

/// A count of seconds that either stands still (set by hand, to be sent to the kernel as it
/// is) or runs down to an end read from the kernel. `N` holds the seconds: `i64` for an
/// address's lifetimes (up to `u32::MAX - 1` seconds), `i32` for a route's `expires` (the
/// kernel's `__s32`), which keeps a route's rare parts small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Countdown<N = i64> {
    /// This many seconds, not running.
    Left(N),
    /// Runs out at this second of the countdowns' clock ([`seconds_at`]).
    Until(N),
}

/// The integers a [`Countdown`] holds its seconds in.
pub(crate) trait Seconds: Copy + Into<i64> {
    /// `secs`, or the nearest bound when it does not fit.
    fn saturating(secs: i64) -> Self;
}

impl Seconds for i64 {
    fn saturating(secs: i64) -> Self {
        secs
    }
}

impl Seconds for i32 {
    fn saturating(secs: i64) -> Self {
        let clamped = secs.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
        i32::try_from(clamped).unwrap_or_default()
    }
}

impl<N: Seconds> Countdown<N> {
    /// A count of `left` seconds the kernel reported at `at`.
    pub(crate) fn read(left: i64, at: Instant) -> Self {
        Countdown::Until(N::saturating(seconds_at(at).saturating_add(left)))
    }

    /// A count of `left` seconds the kernel reported just now.
    pub(crate) fn read_now(left: i64) -> Self {
        Self::read(left, Instant::now())
    }

    /// The seconds left at `at` (negative past the end).
    pub(crate) fn left_at(self, at: Instant) -> i64 {
        match self {
            Countdown::Left(left) => left.into(),
            Countdown::Until(end) => end.into().saturating_sub(seconds_at(at)),
        }
    }

    /// The seconds left now.
    pub(crate) fn left(self) -> i64 {
        match self {
            Countdown::Left(left) => left.into(),
            Countdown::Until(_) => self.left_at(Instant::now()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_count_read_runs_down_from_when_it_was_read() {
        let read = Instant::now() + Duration::from_secs(10);
        let countdown = Countdown::<i64>::read(600, read);
        assert_eq!(countdown.left_at(read), 600);
        assert_eq!(countdown.left_at(read + Duration::from_secs(1)), 599);
        assert_eq!(countdown.left_at(read + Duration::from_secs(700)), -100);
        // The same end read a few seconds later compares equal; a count set again does not.
        let later = read + Duration::from_secs(5);
        assert_eq!(Countdown::read(595, later), countdown);
        assert_ne!(Countdown::read(600, later), countdown);
    }

    #[test]
    fn a_count_set_by_hand_stands_still() {
        let countdown = Countdown::<i32>::Left(30);
        assert_eq!(
            countdown.left_at(Instant::now() + Duration::from_secs(100)),
            30
        );
        assert_eq!(countdown.left(), 30);
    }
}
