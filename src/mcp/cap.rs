//! The one way a size or count bound is read from an environment variable: a [`Cap`] names the
//! variable, its default and the range it accepts, so a bad value is refused with an error
//! naming what to fix and the range, and no value can make a bound zero or absurd.
//!
//! As with durations (`crate::duration`), variables are read twice on purpose: [`check_env`] at
//! the edge (the CLI) refuses a bad value before anything starts, and the readers deep inside
//! ([`Cap::from_env_or_default`]) stay infallible.

/// What a cap counts: bytes (`64MiB`, `512K` or a plain number of bytes) or items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes; binary suffixes `K`/`KiB`, `M`/`MiB`, `G`/`GiB` accepted.
    Bytes,
    /// A plain count.
    Items,
}

/// A bound a user can set through an environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// The environment variable.
    pub name: &'static str,
    /// The value when it is unset or empty.
    pub default: usize,
    /// The smallest value accepted.
    pub min: usize,
    /// The largest value accepted.
    pub max: usize,
    /// What it counts.
    pub unit: Unit,
}

/// A value a [`Cap`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} {value:?} is {}: it takes {}", if *.unreadable { "not a number" } else { "out of range" }, accepted(*.min, *.max, *.unit))]
pub struct CapError {
    /// The variable.
    pub name: &'static str,
    /// The value as given.
    pub value: String,
    /// True when the text is no number at all (else it is out of range).
    pub unreadable: bool,
    /// The smallest value accepted.
    pub min: usize,
    /// The largest value accepted.
    pub max: usize,
    /// What the cap counts.
    pub unit: Unit,
}

impl CapError {
    /// A stable name for the JSON envelope.
    pub fn kind(&self) -> &'static str {
        "invalid_limit"
    }

    /// What to do.
    pub fn help(&self) -> String {
        let form = match self.unit {
            Unit::Bytes => "a number of bytes (1048576) or a size such as 64MiB or 512K",
            Unit::Items => "a whole number",
        };
        format!(
            "set {} to {form}, {}, or unset it for the default",
            self.name,
            accepted(self.min, self.max, self.unit)
        )
    }
}

fn accepted(min: usize, max: usize, unit: Unit) -> String {
    match unit {
        Unit::Bytes => format!("from {} to {}", bytes_text(min), bytes_text(max)),
        Unit::Items => format!("from {min} to {max}"),
    }
}

/// `n` bytes in the largest binary unit that divides it.
pub fn bytes_text(n: usize) -> String {
    for (suffix, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= size && n.is_multiple_of(size) {
            return format!("{}{suffix}", n / size);
        }
    }
    format!("{n} bytes")
}

impl Cap {
    /// A cap; `default` must lie in `min..=max` (checked by each cap's tests).
    pub const fn new(
        name: &'static str,
        default: usize,
        min: usize,
        max: usize,
        unit: Unit,
    ) -> Self {
        Cap {
            name,
            default,
            min,
            max,
            unit,
        }
    }

    /// `text` read as this cap's value.
    pub fn parse(&self, text: &str) -> Result<usize, CapError> {
        let refuse = |unreadable| CapError {
            name: self.name,
            value: text.to_string(),
            unreadable,
            min: self.min,
            max: self.max,
            unit: self.unit,
        };
        let value = read(text.trim(), self.unit).ok_or(refuse(true))?;
        match value {
            Some(v) if (self.min..=self.max).contains(&v) => Ok(v),
            _ => Err(refuse(false)),
        }
    }

    /// The variable's value; the default when it is unset or empty.
    pub fn from_env(&self) -> Result<usize, CapError> {
        match std::env::var_os(self.name) {
            None => Ok(self.default),
            Some(value) if value.is_empty() => Ok(self.default),
            Some(value) => self.parse(&value.to_string_lossy()),
        }
    }

    /// The variable's value, or the default with a warning when it is unusable (the CLI has
    /// refused such a value already, through [`check_env`]).
    pub fn from_env_or_default(&self) -> usize {
        self.from_env().unwrap_or_else(|e| {
            tracing::warn!("{e}; using {}", self.default);
            self.default
        })
    }
}

/// The first variable among `caps` whose value is unusable.
pub fn check_env(caps: &[&Cap]) -> Result<(), CapError> {
    caps.iter().try_for_each(|c| c.from_env().map(drop))
}

/// `text` as a number: `None` when it is not one, `Some(None)` when it overflows.
fn read(text: &str, unit: Unit) -> Option<Option<usize>> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let multiplier: usize = match (unit, suffix.trim().to_ascii_lowercase().as_str()) {
        (_, "") => 1,
        (Unit::Bytes, "k" | "kib") => 1 << 10,
        (Unit::Bytes, "m" | "mib") => 1 << 20,
        (Unit::Bytes, "g" | "gib") => 1 << 30,
        _ => return None,
    };
    Some(
        digits
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_mul(multiplier)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: Cap = Cap::new("MCP_TEST_BYTES", 1 << 20, 1 << 10, 1 << 30, Unit::Bytes);
    const COUNT: Cap = Cap::new("MCP_TEST_COUNT", 8, 1, 100, Unit::Items);

    #[test]
    fn sizes_and_counts_are_read() {
        for (text, n) in [
            ("2048", 2048),
            ("64MiB", 64 << 20),
            ("64m", 64 << 20),
            (" 512K ", 512 << 10),
            ("1 GiB", 1 << 30),
        ] {
            assert_eq!(SIZE.parse(text), Ok(n), "{text}");
        }
        assert_eq!(COUNT.parse("42"), Ok(42));
    }

    #[test]
    fn bad_values_are_refused_naming_the_variable_and_range() {
        for text in ["", "abc", "-1", "1.5M", "12 parsecs", "5MB"] {
            assert!(SIZE.parse(text).unwrap_err().unreadable, "{text:?}");
        }
        for text in [
            "0",
            "1023",
            "2G",
            "99999999999999999999999",
            "18446744073709551615G",
        ] {
            assert!(!SIZE.parse(text).unwrap_err().unreadable, "{text:?}");
        }
        assert!(
            COUNT.parse("10K").unwrap_err().unreadable,
            "no sizes for counts"
        );
        let e = SIZE.parse("0").unwrap_err();
        assert_eq!(
            e.to_string(),
            "MCP_TEST_BYTES \"0\" is out of range: it takes from 1KiB to 1GiB"
        );
        assert!(e
            .help()
            .starts_with("set MCP_TEST_BYTES to a number of bytes"));
        assert_eq!(e.kind(), "invalid_limit");
        let e = COUNT.parse("many").unwrap_err();
        assert_eq!(
            e.to_string(),
            "MCP_TEST_COUNT \"many\" is not a number: it takes from 1 to 100"
        );
    }
}
