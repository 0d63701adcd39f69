//! Timing helpers shared by the benches (included with `#[path]`).

use std::time::Duration;

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of `rounds` timings of `f`.
pub fn median(rounds: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut all: Vec<Duration> = (0..rounds).map(|_| f()).collect();
    all.sort();
    all[rounds / 2]
}
