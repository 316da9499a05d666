//! A request's `timeout` query parameter (a Go duration: `30s`, `500ms`, `1m30s`, `1.5s`), which
//! kube-apiserver honours for every request but watches: a request still waiting when it passes
//! is answered `504 Timeout` and never reaches storage.

use std::time::Duration;

/// The `timeout` of a query string, if it has a valid one.
pub fn of_query(query: &str) -> Option<Duration> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix("timeout="))
        .and_then(parse_go_duration)
}

/// A Go duration (`time.ParseDuration`) that is not negative: numbers with optional fractions,
/// each followed by `ns`, `us`, `µs`, `ms`, `s`, `m` or `h`; `0` alone is zero.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0.0_f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * seconds_per_unit;
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_as_time_parse_duration_reads_them() {
        let ms = Duration::from_millis;
        assert_eq!(parse_go_duration("30s"), Some(ms(30_000)));
        assert_eq!(parse_go_duration("500ms"), Some(ms(500)));
        assert_eq!(parse_go_duration("1m30s"), Some(ms(90_000)));
        assert_eq!(parse_go_duration("1.5s"), Some(ms(1_500)));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("10"), None, "a unit is required");
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn the_timeout_is_read_from_the_query_string() {
        assert_eq!(
            of_query("fieldManager=x&timeout=900ms"),
            Some(Duration::from_millis(900))
        );
        assert_eq!(of_query("timeoutSeconds=30"), None);
    }
}
