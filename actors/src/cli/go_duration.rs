//! Durations as Go's `time.ParseDuration` reads them (`1m0s`, `1h30m`, `250ms`, `1.5s`, `300µs`,
//! `0`) and as Go's `Duration.String` writes them, for flags copied from a kube-controller-manager
//! command line.

use std::fmt;
use std::time::Duration;

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// Go's largest duration, `math.MaxInt64` nanoseconds (about 292 years).
const MAX_NANOS: u128 = i64::MAX as u128;

/// A text `time.ParseDuration` refuses, or a negative duration, which no Tidemark flag takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoDurationError {
    /// Not a duration at all (empty, a stray character, a dot with no digit).
    #[error("{0:?} is not a duration like 1m30s, 250ms or 1.5h")]
    Invalid(String),
    /// A number with no unit; Go allows that for `0` only.
    #[error("{0:?} has no unit: give one of ns, us, µs, ms, s, m, h (only 0 may go without)")]
    MissingUnit(String),
    /// A unit Go does not know.
    #[error("unknown unit {unit:?} in duration {text:?} (ns, us, µs, ms, s, m, h)")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole text.
        text: String,
    },
    /// Go would read it, but a negative wait or period means nothing for these flags.
    #[error("{0:?} is negative; this flag takes a duration of 0 or more")]
    Negative(String),
    /// Longer than Go's `math.MaxInt64` nanoseconds.
    #[error("{0:?} is longer than the longest Go duration (2562047h47m16.854775807s)")]
    Overflow(String),
}

/// Reads a Go duration: a sign, then one or more decimal numbers each with a unit; `0` alone
/// needs none. A fraction finer than a nanosecond is cut off, as Go does.
pub fn parse_go_duration(text: &str) -> Result<Duration, GoDurationError> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if body == "0" {
        return Ok(Duration::ZERO);
    }
    if body.is_empty() {
        return Err(GoDurationError::Invalid(text.to_string()));
    }
    let mut nanos: u128 = 0;
    let mut rest = body;
    while !rest.is_empty() {
        let (component, after) = component(rest, text)?;
        nanos = nanos
            .checked_add(component)
            .filter(|n| *n <= MAX_NANOS)
            .ok_or_else(|| GoDurationError::Overflow(text.to_string()))?;
        rest = after;
    }
    if negative && nanos > 0 {
        return Err(GoDurationError::Negative(text.to_string()));
    }
    Ok(nanos_to_duration(nanos))
}

/// Reads `--duration`: a Go duration, or a bare whole number of seconds as this flag took
/// before Go durations (the tests and `.ci/run` pass `--duration 30`).
pub fn parse_duration_or_seconds(text: &str) -> Result<Duration, GoDurationError> {
    match text.parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => parse_go_duration(text),
    }
}

/// One `<number><unit>` at the start of `rest`, in nanoseconds, and what follows it.
fn component<'a>(rest: &'a str, text: &str) -> Result<(u128, &'a str), GoDurationError> {
    let invalid = || GoDurationError::Invalid(text.to_string());
    let overflow = || GoDurationError::Overflow(text.to_string());
    let int_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (int_digits, after_int) = rest.split_at(int_end);
    let (frac_digits, after_number) = match after_int.strip_prefix('.') {
        Some(after_dot) => {
            let end = after_dot
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after_dot.len());
            after_dot.split_at(end)
        }
        None => ("", after_int),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(invalid());
    }
    let unit_end = after_number
        .find(|c: char| c == '.' || c.is_ascii_digit())
        .unwrap_or(after_number.len());
    let (unit, after) = after_number.split_at(unit_end);
    if unit.is_empty() {
        return Err(GoDurationError::MissingUnit(text.to_string()));
    }
    let unit_nanos = unit_nanos(unit).ok_or_else(|| GoDurationError::UnknownUnit {
        unit: unit.to_string(),
        text: text.to_string(),
    })?;
    let whole = if int_digits.is_empty() {
        0
    } else {
        int_digits.parse::<u128>().map_err(|_| overflow())?
    };
    let mut nanos = whole.checked_mul(unit_nanos).ok_or_else(overflow)?;
    // At most 18 fraction digits count: hours need 13 for a nanosecond, and 10^18 * 3.6e12
    // stays far inside u128.
    let frac_digits = &frac_digits[..frac_digits.len().min(18)];
    if !frac_digits.is_empty() {
        let fraction: u128 = frac_digits.parse().map_err(|_| invalid())?;
        let scale = 10u128.pow(u32::try_from(frac_digits.len()).map_err(|_| invalid())?);
        nanos = nanos
            .checked_add(fraction * unit_nanos / scale)
            .ok_or_else(overflow)?;
    }
    Ok((nanos, after))
}

fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        // Go takes both the micro sign U+00B5 and the Greek mu U+03BC.
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => NANOS_PER_SECOND,
        "m" => 60 * NANOS_PER_SECOND,
        "h" => 3_600 * NANOS_PER_SECOND,
        _ => return None,
    })
}

fn nanos_to_duration(nanos: u128) -> Duration {
    let secs = u64::try_from(nanos / NANOS_PER_SECOND).unwrap_or(u64::MAX);
    // The remainder is below 10^9, so it fits a u32.
    let subsec = u32::try_from(nanos % NANOS_PER_SECOND).unwrap_or(0);
    Duration::new(secs, subsec)
}

/// Writes a duration as Go's `Duration.String` does: `1h0m0s`, `1m30s`, `1.5s`, `250ms`,
/// `300µs`, `10ns`, `0s`; `--help` defaults and log lines read like upstream's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoDuration(pub Duration);

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        if nanos == 0 {
            return f.write_str("0s");
        }
        if nanos < 1_000 {
            return write!(f, "{nanos}ns");
        }
        if nanos < 1_000_000 {
            return write!(f, "{}\u{b5}s", decimal(nanos, 1_000, 3));
        }
        if nanos < NANOS_PER_SECOND {
            return write!(f, "{}ms", decimal(nanos, 1_000_000, 6));
        }
        let minutes = nanos / (60 * NANOS_PER_SECOND);
        let seconds = nanos % (60 * NANOS_PER_SECOND);
        let (hours, minutes) = (minutes / 60, minutes % 60);
        if hours > 0 {
            write!(f, "{hours}h")?;
        }
        if hours > 0 || minutes > 0 {
            write!(f, "{minutes}m")?;
        }
        write!(f, "{}s", decimal(seconds, NANOS_PER_SECOND, 9))
    }
}

/// `value / unit` with the remainder as up to `digits` fraction digits, trailing zeros dropped.
fn decimal(value: u128, unit: u128, digits: usize) -> String {
    let (whole, rest) = (value / unit, value % unit);
    if rest == 0 {
        return whole.to_string();
    }
    let fraction = format!("{rest:0digits$}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_forms_kube_controller_manager_flags_use_are_read() {
        let cases = [
            ("1m0s", Duration::from_secs(60)),
            ("1h30m", Duration::from_secs(5_400)),
            ("250ms", ms(250)),
            ("1.5s", ms(1_500)),
            ("2h45m30.5s", ms(9_930_500)),
            ("300us", Duration::from_micros(300)),
            ("300µs", Duration::from_micros(300)),
            ("300μs", Duration::from_micros(300)),
            ("10ns", Duration::from_nanos(10)),
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("+15s", Duration::from_secs(15)),
            ("-0", Duration::ZERO),
            (".5s", ms(500)),
            ("5.s", Duration::from_secs(5)),
            ("1.0000000001s", Duration::from_secs(1)),
            ("0.1h", Duration::from_secs(360)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_go_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn a_bare_number_other_than_zero_needs_a_unit() {
        assert_eq!(
            parse_go_duration("15"),
            Err(GoDurationError::MissingUnit("15".into()))
        );
        assert_eq!(
            parse_go_duration("1m30"),
            Err(GoDurationError::MissingUnit("1m30".into()))
        );
        let message = GoDurationError::MissingUnit("15".into()).to_string();
        assert!(
            message.contains("no unit") && message.contains("ms"),
            "{message}"
        );
    }

    #[test]
    fn negative_durations_are_refused_with_a_clear_message() {
        let err = parse_go_duration("-5s").expect_err("negative");
        assert_eq!(err, GoDurationError::Negative("-5s".into()));
        assert!(err.to_string().contains("negative"), "{err}");
    }

    #[test]
    fn texts_go_refuses_are_errors() {
        for text in [
            "", "s", ".s", "-", "1.5", "abc", "1 s", "1s ", "1..5s", "1e3s",
        ] {
            assert!(parse_go_duration(text).is_err(), "{text:?}");
        }
        assert!(matches!(
            parse_go_duration("3d"),
            Err(GoDurationError::UnknownUnit { unit, .. }) if unit == "d"
        ));
    }

    #[test]
    fn durations_beyond_gos_max_overflow() {
        assert_eq!(
            parse_go_duration("2562047h47m16.854775807s"),
            Ok(Duration::new(9_223_372_036, 854_775_807))
        );
        assert_eq!(
            parse_go_duration("2562048h"),
            Err(GoDurationError::Overflow("2562048h".into()))
        );
        assert!(matches!(
            parse_go_duration("99999999999999999999999999999999999999999h"),
            Err(GoDurationError::Overflow(_))
        ));
    }

    #[test]
    fn the_run_duration_also_takes_bare_seconds() {
        assert_eq!(parse_duration_or_seconds("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration_or_seconds("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration_or_seconds("-3").is_err());
    }

    #[test]
    fn display_writes_what_go_writes() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(10), "10ns"),
            (Duration::from_micros(300), "300µs"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (ms(250), "250ms"),
            (ms(1_500), "1.5s"),
            (Duration::from_secs(60), "1m0s"),
            (Duration::from_secs(3_600), "1h0m0s"),
            (ms(9_930_500), "2h45m30.5s"),
            (
                Duration::new(9_223_372_036, 854_775_807),
                "2562047h47m16.854775807s",
            ),
        ];
        for (duration, text) in cases {
            assert_eq!(GoDuration(duration).to_string(), text);
        }
    }

    proptest! {
        #[test]
        fn what_display_writes_parses_back_to_the_same_duration(nanos in 0..=i64::MAX as u64) {
            let duration = Duration::from_nanos(nanos);
            let text = GoDuration(duration).to_string();
            prop_assert_eq!(parse_go_duration(&text), Ok(duration), "{}", text);
        }

        #[test]
        fn components_add_up(h in 0u64..1000, m in 0u64..1000, s in 0u64..1000, milli in 0u64..1000) {
            let text = format!("{h}h{m}m{s}s{milli}ms");
            let expected = Duration::from_millis(((h * 60 + m) * 60 + s) * 1000 + milli);
            prop_assert_eq!(parse_go_duration(&text), Ok(expected));
        }
    }
}
