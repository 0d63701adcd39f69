//! The one way a duration is read from a flag or an environment variable.
//!
//! Accepted forms: a number of seconds (`30`, `2.5`, `1e3`) or a duration with units (`500ms`,
//! `90s`, `30m`, `12h`, `7d`, `1h 30m`: `humantime`'s forms). Every reader names a [`Setting`]:
//! the flag or variable, its default and the range it accepts. So an error names what to fix and
//! the range, and no value can overflow — `1e20` is out of range, never a panic in
//! `Duration::from_secs_f64`, and `999999999999d` never wraps around.
//!
//! Variables are read twice on purpose: [`check_env`] at the edge (the CLI) refuses a bad value
//! before anything starts, and the readers deep inside ([`Setting::from_env_or_default`]) stay
//! infallible, warning and keeping the default should a library user skip the check.

use std::time::Duration;

/// A duration a user can set: its name, default and accepted range (both ends included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The flag (`--timeout`) or environment variable (`MCP_INIT_TIMEOUT_SEC`).
    pub name: &'static str,
    /// The value when none is given.
    pub default: Duration,
    /// The smallest value accepted.
    pub min: Duration,
    /// The largest value accepted.
    pub max: Duration,
}

/// One day: the ceiling of every timeout. Waiting longer than that for an answer is a hang.
pub const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// One millisecond: the floor of every timeout (zero would fail everything at once).
pub const MILLISECOND: Duration = Duration::from_millis(1);

/// Why a value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Not a number of seconds nor a duration with units.
    Unreadable,
    /// A duration, but outside the setting's range (or too large for any duration).
    OutOfRange,
}

/// A value a [`Setting`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} {value:?} is {}: it takes {}", match .problem {
    Problem::Unreadable => "not a duration",
    Problem::OutOfRange => "out of range",
}, accepted(*.min, *.max))]
pub struct DurationError {
    /// The flag or variable.
    pub name: &'static str,
    /// The value as given.
    pub value: String,
    /// Why it was refused.
    pub problem: Problem,
    /// The smallest value accepted.
    pub min: Duration,
    /// The largest value accepted.
    pub max: Duration,
}

impl DurationError {
    /// A stable name for the JSON envelope.
    pub fn kind(&self) -> &'static str {
        "invalid_duration"
    }

    /// What to do.
    pub fn help(&self) -> String {
        let how = if self.name.starts_with('-') {
            format!("pass {} with", self.name)
        } else {
            format!("set {} to", self.name)
        };
        format!(
            "{how} a number of seconds (30, 2.5) or a duration such as 90s, 30m or 12h, {}",
            accepted(self.min, self.max)
        )
    }
}

fn accepted(min: Duration, max: Duration) -> String {
    format!("from {} to {}", shown(min), shown(max))
}

/// A bound as a person reads it: humantime's form, except whole days from a month up, which
/// humantime would give in its 30.44-day months and 365.25-day years (`1year 18h` for 365d).
fn shown(bound: Duration) -> String {
    let days = bound.as_secs() / DAY.as_secs();
    if days >= 30 && bound == DAY * days as u32 {
        format!("{days}days")
    } else {
        humantime::format_duration(bound).to_string()
    }
}

impl Setting {
    /// A setting; `default` must lie in `min..=max` (checked by each setting's tests).
    pub const fn new(name: &'static str, default: Duration, min: Duration, max: Duration) -> Self {
        Setting {
            name,
            default,
            min,
            max,
        }
    }

    /// A timeout: from one millisecond to one day.
    pub const fn timeout(name: &'static str, default: Duration) -> Self {
        Setting::new(name, default, MILLISECOND, DAY)
    }

    /// `text` read as this setting's value.
    pub fn parse(&self, text: &str) -> Result<Duration, DurationError> {
        let refuse = |problem| DurationError {
            name: self.name,
            value: text.to_string(),
            problem,
            min: self.min,
            max: self.max,
        };
        let value = read(text).map_err(refuse)?;
        if value < self.min || value > self.max {
            return Err(refuse(Problem::OutOfRange));
        }
        Ok(value)
    }

    /// The variable's value; the default when it is unset or empty.
    pub fn from_env(&self) -> Result<Duration, DurationError> {
        match std::env::var_os(self.name) {
            None => Ok(self.default),
            Some(value) if value.is_empty() => Ok(self.default),
            Some(value) => self.parse(&value.to_string_lossy()),
        }
    }

    /// The variable's value, or the default with a warning when it is unusable (the CLI has
    /// refused such a value already, through [`check_env`]).
    pub fn from_env_or_default(&self) -> Duration {
        self.from_env().unwrap_or_else(|e| {
            tracing::warn!("{e}; using {}", humantime::format_duration(self.default));
            self.default
        })
    }
}

/// The first variable among `settings` whose value is unusable.
pub fn check_env(settings: &[&Setting]) -> Result<(), DurationError> {
    settings.iter().try_for_each(|s| s.from_env().map(drop))
}

/// `text` as a duration, unbounded: a number of seconds or a `humantime` duration.
fn read(text: &str) -> Result<Duration, Problem> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        if seconds.is_nan() {
            return Err(Problem::Unreadable);
        }
        // Negative, infinite and too-large values are all out of any range.
        return Duration::try_from_secs_f64(seconds).map_err(|_| Problem::OutOfRange);
    }
    humantime::parse_duration(text).map_err(|e| match e {
        humantime::DurationError::NumberOverflow => Problem::OutOfRange,
        _ => Problem::Unreadable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TIMEOUT: Setting = Setting::timeout("--timeout", Duration::from_secs(30));

    #[test]
    fn numbers_are_seconds_and_units_are_read() {
        let cases = [
            ("30", 30_000),
            ("2.5", 2_500),
            (" 1e3 ", 1_000_000),
            ("500ms", 500),
            ("90s", 90_000),
            ("30m", 1_800_000),
            ("12h", 43_200_000),
            ("1h 30m", 5_400_000),
            ("1d", 86_400_000),
        ];
        for (text, ms) in cases {
            assert_eq!(TIMEOUT.parse(text), Ok(Duration::from_millis(ms)), "{text}");
        }
    }

    #[test]
    fn what_panicked_or_wrapped_is_out_of_range() {
        for text in [
            "1e20",
            "inf",
            "-1",
            "-0.5",
            "0",
            "0.0000001",
            "2d",
            "999999999999999999999d",
            "18446744073709551615s",
        ] {
            let e = TIMEOUT.parse(text).unwrap_err();
            assert_eq!(e.problem, Problem::OutOfRange, "{text}");
        }
        for text in ["", "abc", "nan", "5 parsecs", "1.5.2", "--3"] {
            let e = TIMEOUT.parse(text).unwrap_err();
            assert_eq!(e.problem, Problem::Unreadable, "{text:?}");
        }
    }

    #[test]
    fn the_error_names_the_setting_and_the_range() {
        let e = TIMEOUT.parse("1e20").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--timeout \"1e20\" is out of range: it takes from 1ms to 1day"
        );
        assert!(e
            .help()
            .starts_with("pass --timeout with a number of seconds"));
        let env = Setting::timeout("MCP_INIT_TIMEOUT_SEC", Duration::from_secs(20));
        let e = env.parse("soon").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("MCP_INIT_TIMEOUT_SEC \"soon\" is not a duration"));
        assert!(
            e.help().starts_with("set MCP_INIT_TIMEOUT_SEC to"),
            "{}",
            e.help()
        );
        assert_eq!(e.kind(), "invalid_duration");
    }

    #[test]
    fn a_range_of_a_year_reads_in_days() {
        let year = DAY * 365;
        let since = Setting::new("--since", DAY, Duration::from_secs(60), year);
        let e = since.parse("yesterday").unwrap_err();
        assert!(
            e.to_string().ends_with("it takes from 1m to 365days"),
            "{e}"
        );
    }

    proptest! {
        /// Whatever the text, parsing returns (never panics), and what it accepts is in range.
        #[test]
        fn any_text_is_accepted_in_range_or_refused(text in "\\PC{0,24}") {
            if let Ok(d) = TIMEOUT.parse(&text) {
                prop_assert!(d >= TIMEOUT.min && d <= TIMEOUT.max);
            }
        }

        /// Number-like text of any magnitude and sign never panics.
        #[test]
        fn any_number_is_accepted_in_range_or_refused(x in proptest::num::f64::ANY) {
            let text = x.to_string();
            match TIMEOUT.parse(&text) {
                Ok(d) => prop_assert!(d >= TIMEOUT.min && d <= TIMEOUT.max),
                Err(e) => prop_assert_eq!(e.value, text),
            }
        }

        /// A duration in range reads back as itself, written in seconds or with units.
        #[test]
        fn durations_in_range_round_trip(ms in 1u64..=86_400_000) {
            let d = Duration::from_millis(ms);
            prop_assert_eq!(TIMEOUT.parse(&humantime::format_duration(d).to_string()), Ok(d));
            prop_assert_eq!(TIMEOUT.parse(&format!("{}", ms as f64 / 1000.0)).map(|p| p.as_millis()), Ok(ms as u128));
        }

        /// Any count of any unit either fits or is refused as out of range (no wrap-around).
        #[test]
        fn large_counts_never_wrap(n in any::<u64>(), unit in prop::sample::select(vec!["s", "m", "h", "d", "ms"])) {
            let text = format!("{n}{unit}");
            if let Err(e) = TIMEOUT.parse(&text) {
                prop_assert_eq!(e.problem, Problem::OutOfRange);
            }
        }
    }
}
