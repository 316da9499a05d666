//! The trace of a run: every scheduler event as one line, folded into a hash (two runs of one
//! seed must agree on it) and kept in a ring of the last lines for the failure report.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The trace of one run.
#[derive(Clone, Debug)]
pub struct Trace {
    hash: u64,
    events: u64,
    keep: usize,
    last: VecDeque<String>,
    full: Option<Vec<String>>,
    line: String,
}

impl Trace {
    /// A trace that keeps the last `keep` lines (and every line when `full`).
    pub fn new(keep: usize, full: bool) -> Self {
        Self {
            hash: FNV_OFFSET,
            events: 0,
            keep,
            last: VecDeque::with_capacity(keep),
            full: full.then(Vec::new),
            line: String::new(),
        }
    }

    /// Records one event at virtual time `at`.
    pub fn record(&mut self, at: Duration, what: std::fmt::Arguments<'_>) {
        self.line.clear();
        let _ = write!(self.line, "{:>9.3}s {}", at.as_secs_f64(), what);
        for byte in self.line.as_bytes() {
            self.hash = (self.hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME);
        }
        self.hash = (self.hash ^ u64::from(b'\n')).wrapping_mul(FNV_PRIME);
        self.events += 1;
        if self.keep > 0 {
            if self.last.len() == self.keep {
                self.last.pop_front();
            }
            self.last.push_back(self.line.clone());
        }
        if let Some(full) = &mut self.full {
            full.push(self.line.clone());
        }
    }

    /// The hash of every line so far.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// How many events were recorded.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The last lines, oldest first.
    pub fn tail(&self) -> impl Iterator<Item = &str> {
        self.last.iter().map(String::as_str)
    }

    /// Every line, when the trace was asked to keep them all.
    pub fn full(&self) -> Option<&[String]> {
        self.full.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_lines_give_the_same_hash_and_another_line_another() {
        let mut a = Trace::new(2, false);
        let mut b = Trace::new(0, false);
        for t in [&mut a, &mut b] {
            t.record(Duration::from_millis(5), format_args!("write {}", 1));
        }
        assert_eq!(a.hash(), b.hash());
        b.record(Duration::from_millis(6), format_args!("write {}", 2));
        assert_ne!(a.hash(), b.hash());
    }

    #[test]
    fn the_tail_keeps_only_the_last_lines() {
        let mut t = Trace::new(2, false);
        for i in 0..5 {
            t.record(Duration::ZERO, format_args!("e{i}"));
        }
        let tail: Vec<_> = t.tail().collect();
        assert_eq!(tail.len(), 2);
        assert!(tail[1].ends_with("e4"), "{tail:?}");
    }
}
