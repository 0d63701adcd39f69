//! The one backoff: how long to wait before trying again after a failure (restarting mcpo or
//! cloudflared, reconnecting a server behind the native bridge, and the gateway's pool next).
//!
//! Delays start at `first` and double up to `max`. Success resets them; so does a run that
//! lasted [`Backoff::stable_after`] before it failed (a process that crashes once a day should
//! not wait as long as one that crashes on start).

use std::time::{Duration, Instant};

/// Exponential delays between attempts.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    stable_after: Option<Duration>,
    /// Failures since the last reset.
    attempt: u32,
    /// When the current run started (see [`Backoff::started`]).
    started: Option<Instant>,
}

impl Backoff {
    /// Delays of `first`, doubling, capped at `max`.
    pub const fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max,
            stable_after: None,
            attempt: 0,
            started: None,
        }
    }

    /// A run that lasts `stable` before it fails starts the delays afresh.
    pub const fn stable_after(mut self, stable: Duration) -> Self {
        self.stable_after = Some(stable);
        self
    }

    /// After a failure: the wait before the next attempt, and that attempt's number (1-based).
    pub fn next_delay(&mut self) -> (Duration, u32) {
        let ran_long = match (self.started.take(), self.stable_after) {
            (Some(started), Some(stable)) => started.elapsed() >= stable,
            _ => false,
        };
        if ran_long {
            self.attempt = 0;
        }
        self.attempt = self.attempt.saturating_add(1);
        let doublings = (self.attempt - 1).min(31);
        let delay = self
            .first
            .checked_mul(1u32 << doublings)
            .map_or(self.max, |d| d.min(self.max));
        (delay, self.attempt)
    }

    /// The attempt worked and runs from now (see [`Backoff::stable_after`]).
    pub fn started(&mut self) {
        self.started = Some(Instant::now());
    }

    /// The attempt worked: the next failure waits `first` again.
    pub fn reset(&mut self) {
        self.attempt = 0;
        self.started = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn doubles_and_caps() {
        let mut b = Backoff::new(SECOND, 30 * SECOND);
        let delays: Vec<u64> = (0..8).map(|_| b.next_delay().0.as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(b.next_delay().1, 9);
    }

    #[test]
    fn success_resets() {
        let mut b = Backoff::new(SECOND, 30 * SECOND);
        b.next_delay();
        b.next_delay();
        b.reset();
        assert_eq!(b.next_delay(), (SECOND, 1));
    }

    #[test]
    fn a_long_run_resets_a_short_one_does_not() {
        let mut b = Backoff::new(SECOND, 30 * SECOND).stable_after(Duration::from_secs(60));
        b.next_delay();
        b.started();
        assert_eq!(b.next_delay(), (2 * SECOND, 2), "failed at once");
        b.started = Some(Instant::now() - Duration::from_secs(60));
        assert_eq!(b.next_delay(), (SECOND, 1), "ran a minute");
    }

    #[test]
    fn huge_attempt_counts_stay_at_the_cap() {
        let mut b = Backoff::new(SECOND, 30 * SECOND);
        b.attempt = u32::MAX - 1;
        assert_eq!(b.next_delay().0, 30 * SECOND);
        assert_eq!(b.next_delay().0, 30 * SECOND);
    }
}
