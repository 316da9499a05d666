//! Comparable resource versions (KEP-5504): parse, compare, and a typed "not comparable".

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A resourceVersion that can be ordered: a decimal integer without leading zeros, greater than 0.
///
/// KEP-5504 (Kubernetes 1.35) makes every resourceVersion such a string and defines the order as
/// "shorter is older, equal lengths compare lexicographically", which for canonical decimals is the
/// numeric order. etcd revisions are `int64`, so a `u64` holds every value a real server sends.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ResourceVersion(u64);

/// Why a resourceVersion string cannot be ordered. Never a panic: callers decide what unknown means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotComparable {
    /// The empty string (for example an object that was never stored).
    #[error("resourceVersion is empty")]
    Empty,
    /// `"0"`: "any version" in list and watch requests, not a position in history.
    #[error("resourceVersion \"0\" means \"any\", it is not a position")]
    Zero,
    /// A leading zero makes the string non-canonical, so length no longer orders it.
    #[error("resourceVersion has a leading zero")]
    LeadingZero,
    /// Anything but ASCII digits (opaque versions of older or aggregated servers).
    #[error("resourceVersion is not a decimal integer")]
    NotDecimal,
    /// More than a 64-bit integer; no etcd-backed server produces one.
    #[error("resourceVersion does not fit in 64 bits")]
    TooLarge,
}

impl ResourceVersion {
    /// Parses a resourceVersion string by the KEP-5504 rules.
    pub fn parse(text: &str) -> Result<Self, NotComparable> {
        let bytes = text.as_bytes();
        match bytes {
            [] => return Err(NotComparable::Empty),
            [b'0'] => return Err(NotComparable::Zero),
            [b'0', ..] if bytes.iter().all(u8::is_ascii_digit) => {
                return Err(NotComparable::LeadingZero);
            }
            _ => {}
        }
        let mut value: u64 = 0;
        for &b in bytes {
            if !b.is_ascii_digit() {
                return Err(NotComparable::NotDecimal);
            }
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .ok_or(NotComparable::TooLarge)?;
        }
        Ok(Self(value))
    }

    /// Builds a version from a revision number; `None` for 0, which is not a position.
    pub fn new(revision: u64) -> Option<Self> {
        (revision > 0).then_some(Self(revision))
    }

    /// The revision as an integer.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl FromStr for ResourceVersion {
    type Err = NotComparable;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for ResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Compares two resourceVersion strings; `Err` when either one is not comparable.
pub fn compare(a: &str, b: &str) -> Result<Ordering, NotComparable> {
    Ok(ResourceVersion::parse(a)?.cmp(&ResourceVersion::parse(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_zero_and_opaque_versions_are_not_comparable() {
        assert_eq!(ResourceVersion::parse(""), Err(NotComparable::Empty));
        assert_eq!(ResourceVersion::parse("0"), Err(NotComparable::Zero));
        assert_eq!(
            ResourceVersion::parse("007"),
            Err(NotComparable::LeadingZero)
        );
        assert_eq!(
            ResourceVersion::parse("12a"),
            Err(NotComparable::NotDecimal)
        );
        assert_eq!(ResourceVersion::parse("-1"), Err(NotComparable::NotDecimal));
        assert_eq!(ResourceVersion::parse(" 1"), Err(NotComparable::NotDecimal));
        assert_eq!(
            ResourceVersion::parse("99999999999999999999"),
            Err(NotComparable::TooLarge)
        );
    }

    #[test]
    fn shorter_versions_are_older() {
        assert_eq!(compare("9", "10"), Ok(Ordering::Less));
        assert_eq!(compare("100", "99"), Ok(Ordering::Greater));
        assert_eq!(compare("42", "42"), Ok(Ordering::Equal));
        assert!(compare("0", "1").is_err());
    }

    proptest! {
        #[test]
        fn order_matches_length_then_lexicographic(a in 1u64.., b in 1u64..) {
            let (sa, sb) = (a.to_string(), b.to_string());
            let by_rule = sa.len().cmp(&sb.len()).then_with(|| sa.cmp(&sb));
            prop_assert_eq!(compare(&sa, &sb), Ok(by_rule));
        }

        #[test]
        fn parsing_round_trips(a in 1u64..) {
            let rv = ResourceVersion::parse(&a.to_string()).expect("canonical decimal");
            prop_assert_eq!(rv.get(), a);
            prop_assert_eq!(rv.to_string(), a.to_string());
        }

        #[test]
        fn arbitrary_strings_never_panic(s in ".{0,24}") {
            let _ = ResourceVersion::parse(&s);
        }

        #[test]
        fn leading_zeros_are_rejected(a in 1u64..1_000_000_000) {
            let padded = format!("0{a}");
            prop_assert_eq!(ResourceVersion::parse(&padded), Err(NotComparable::LeadingZero));
        }
    }
}
