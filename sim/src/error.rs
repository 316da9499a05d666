//! What the command line refuses.

/// A bad argument.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SimError {
    /// `--seeds` is not `A..B` (or `A..=B`, or one number).
    #[error("--seeds {0:?}: expected a range such as 1..10000")]
    Seeds(String),
    /// An unknown consistency mode.
    #[error(transparent)]
    Mode(#[from] tidemark_engine::UnknownMode),
    /// An unknown seeded bug.
    #[error(transparent)]
    Bug(#[from] tidemark_engine::seeded_bug::UnknownBug),
    /// An unknown workload.
    #[error("--workload {0:?}: one of replicaset, statefulset, daemonset, job, nodelifecycle")]
    UnknownWorkload(String),
    /// An unknown schedule.
    #[error("--schedule {0:?}: random or relist-race")]
    UnknownSchedule(String),
    /// Shards out of range.
    #[error("--shards {0}: between 1 and 4")]
    Shards(usize),
}

/// Parses `A..B` (B excluded), `A..=B` or `N`.
pub fn parse_seeds(text: &str) -> Result<std::ops::Range<u64>, SimError> {
    let bad = || SimError::Seeds(text.to_string());
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    if let Some((a, b)) = text.split_once("..=") {
        let (a, b) = (number(a)?, number(b)?);
        return (a <= b).then(|| a..b + 1).ok_or_else(bad);
    }
    if let Some((a, b)) = text.split_once("..") {
        let (a, b) = (number(a)?, number(b)?);
        return (a < b).then_some(a..b).ok_or_else(bad);
    }
    let n = number(text)?;
    Ok(n..n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_read_as_rust_ranges() {
        assert_eq!(parse_seeds("1..10000"), Ok(1..10000));
        assert_eq!(parse_seeds("1..=3"), Ok(1..4));
        assert_eq!(parse_seeds("7"), Ok(7..8));
        assert!(parse_seeds("5..2").is_err());
        assert!(parse_seeds("a..b").is_err());
    }
}
