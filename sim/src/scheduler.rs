//! The one scheduler: events ordered by virtual time, ties by the order they were scheduled, so
//! a run is a pure function of its seed.

use std::collections::BTreeMap;
use std::time::Duration;

/// Pending events of type `E`, earliest first.
#[derive(Debug)]
pub struct Scheduler<E> {
    queue: BTreeMap<(Duration, u64), E>,
    seq: u64,
}

impl<E> Scheduler<E> {
    /// An empty scheduler.
    pub fn new() -> Self {
        Self {
            queue: BTreeMap::new(),
            seq: 0,
        }
    }

    /// Schedules `event` at virtual time `at`.
    pub fn at(&mut self, at: Duration, event: E) {
        self.seq += 1;
        self.queue.insert((at, self.seq), event);
    }

    /// The earliest event and its time.
    pub fn pop(&mut self) -> Option<(Duration, E)> {
        self.queue.pop_first().map(|((at, _), e)| (at, e))
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_in_the_order_they_were_scheduled() {
        let mut s = Scheduler::new();
        s.at(Duration::from_millis(2), "late");
        s.at(Duration::from_millis(1), "first");
        s.at(Duration::from_millis(1), "second");
        let order: Vec<_> = std::iter::from_fn(|| s.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["first", "second", "late"]);
    }
}
