//! RFC 3339 timestamps as Kubernetes writes them (`2026-12-02T15:03:38Z`), to and from Unix seconds.

/// Parses an RFC 3339 UTC timestamp (`Z` or `+00:00`, optional fraction) to Unix seconds.
/// Returns `None` for anything else; callers treat an unreadable time as unknown, not as an error.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(range)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    if rest != "Z" && rest != "+00:00" {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Formats Unix seconds as an RFC 3339 UTC timestamp.
pub fn format_rfc3339(unix_secs: i64) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs = unix_secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

/// Formats Unix microseconds as a Kubernetes `MicroTime`, e.g. `2026-01-01T00:00:00.000000Z`
/// (a Lease's `acquireTime` and `renewTime`).
pub fn format_micro_time(unix_micros: i64) -> String {
    let secs = format_rfc3339(unix_micros.div_euclid(1_000_000));
    format!(
        "{}.{:06}Z",
        secs.trim_end_matches('Z'),
        unix_micros.rem_euclid(1_000_000)
    )
}

// Howard Hinnant's civil calendar algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_timestamps_parse_to_unix_seconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2026-12-02T15:03:38Z"), Some(1_796_223_818));
        assert_eq!(
            parse_rfc3339("2026-12-02T15:03:38.123456Z"),
            Some(1_796_223_818)
        );
        assert_eq!(parse_rfc3339("2026-12-02 15:03:38Z"), None);
        assert_eq!(parse_rfc3339("garbage"), None);
        assert_eq!(parse_rfc3339("2026-13-02T15:03:38Z"), None);
    }

    #[test]
    fn formatting_round_trips() {
        for t in [0, 1_796_223_818, 951_782_400, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&format_rfc3339(t)), Some(t));
        }
    }

    #[test]
    fn micro_time_keeps_six_fraction_digits() {
        assert_eq!(
            format_micro_time(1_767_225_600_000_042),
            "2026-01-01T00:00:00.000042Z"
        );
    }
}
