//! Reads: one object, a list page at any revision still in history (a snapshot rebuilt from
//! the log), and the log itself for watches and commit observers.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::apiserver::status::ApiError;
use crate::resource::Resource;
use crate::store::{Key, LogRead, Store, Stored};

/// The most events one log read returns.
const MAX_LOG_READ: usize = 4096;

impl Store {
    /// The revision of the last write to `r` (0 before the first).
    pub fn resource_revision(&self, r: Resource) -> u64 {
        self.resource_revisions[r.index()].load(std::sync::atomic::Ordering::Acquire)
    }

    /// The current state of one object.
    pub fn get(&self, r: Resource, ns: &str, name: &str) -> Option<Arc<Stored>> {
        self.inner.lock().objects[r.index()]
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Every current object of `r` (optionally in one namespace), and the current revision.
    pub fn all(&self, r: Resource, ns: Option<&str>) -> (Vec<Arc<Stored>>, u64) {
        let inner = self.inner.lock();
        let map = &inner.objects[r.index()];
        let items = match ns {
            None => map.values().cloned().collect(),
            Some(ns) => map
                .range((ns.to_string(), String::new())..)
                .take_while(|(k, _)| k.0 == ns)
                .map(|(_, v)| v.clone())
                .collect(),
        };
        (items, inner.revision)
    }

    /// One page of a list at revision `rev` (the current one or a reconstructed snapshot):
    /// up to `limit` objects after `after` matching `filter`, and whether more match.
    pub fn list_page(
        &self,
        r: Resource,
        ns: Option<&str>,
        rev: u64,
        after: Option<&Key>,
        limit: usize,
        filter: &dyn Fn(&Value) -> bool,
    ) -> Result<(Vec<Arc<Stored>>, bool), ApiError> {
        let inner = self.inner.lock();
        if rev < inner.compacted {
            return Err(ApiError::expired(format!(
                "The resourceVersion for the provided list is too old: {rev} ({})",
                inner.compacted
            )));
        }
        // The state before the first event after `rev`, for every key changed since.
        let mut overlay: BTreeMap<&Key, Option<&Arc<Stored>>> = BTreeMap::new();
        let skip = usize::try_from(rev.saturating_sub(inner.compacted)).unwrap_or(usize::MAX);
        for e in inner.log.iter().skip(skip) {
            if e.resource == r {
                overlay.entry(&e.key).or_insert(e.prev.as_ref());
            }
        }
        let start = match after {
            Some(k) => Bound::Excluded(k.clone()),
            None => match ns {
                Some(ns) => Bound::Included((ns.to_string(), String::new())),
                None => Bound::Unbounded,
            },
        };
        let mut current = inner.objects[r.index()]
            .range((start.clone(), Bound::Unbounded))
            .peekable();
        let start_ref = match &start {
            Bound::Excluded(k) => Bound::Excluded(k),
            Bound::Included(k) => Bound::Included(k),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut changed = overlay
            .range::<&Key, _>((start_ref, Bound::Unbounded))
            .peekable();
        let mut items = Vec::new();
        loop {
            let next = match (current.peek(), changed.peek()) {
                (None, None) => break,
                (Some((ck, _)), Some((ok, _))) if ck < *ok => {
                    current.next().map(|(k, v)| (k, Some(v)))
                }
                (Some((ck, _)), Some((ok, _))) if ck == *ok => {
                    current.next();
                    changed.next().map(|(k, v)| (*k, *v))
                }
                (Some(_), None) => current.next().map(|(k, v)| (k, Some(v))),
                _ => changed.next().map(|(k, v)| (*k, *v)),
            };
            let Some((key, state)) = next else { break };
            if let Some(ns) = ns
                && key.0 != ns
            {
                break;
            }
            let Some(obj) = state else { continue };
            if filter(&obj.value) {
                if items.len() == limit {
                    return Ok((items, true));
                }
                items.push(obj.clone());
            }
        }
        Ok((items, false))
    }

    /// The newest revision committed at least `ago` before now: what a cache lagging by `ago`
    /// has seen. Never older than the compaction point.
    pub fn revision_before(&self, ago: std::time::Duration) -> u64 {
        let inner = self.inner.lock();
        let Some(cutoff) = Instant::now().checked_sub(ago) else {
            return inner.compacted;
        };
        match inner.log.iter().rev().find(|e| e.at <= cutoff) {
            Some(e) => e.rev,
            None => inner
                .log
                .front()
                .map_or(inner.revision, |first| first.rev.saturating_sub(1))
                .max(inner.compacted),
        }
    }

    /// Events of `r` after revision `pos`, up to a bounded batch.
    pub fn events_after(&self, r: Resource, pos: u64) -> LogRead {
        self.log_after(Some(r), pos)
    }

    /// Every commit after revision `pos`, of any resource, in revision order, up to a bounded
    /// batch: what an invariant checker observes.
    pub fn commits_after(&self, pos: u64) -> LogRead {
        self.log_after(None, pos)
    }

    fn log_after(&self, only: Option<Resource>, pos: u64) -> LogRead {
        let inner = self.inner.lock();
        if pos < inner.compacted {
            return LogRead::Compacted(inner.compacted);
        }
        let skip = usize::try_from(pos - inner.compacted).unwrap_or(usize::MAX);
        let mut read_to = pos.max(inner.compacted);
        let mut events = Vec::new();
        for e in inner.log.iter().skip(skip).take(MAX_LOG_READ) {
            read_to = e.rev;
            if only.is_none_or(|r| e.resource == r) {
                events.push(e.clone());
            }
        }
        if skip >= inner.log.len() {
            read_to = inner.revision.max(pos);
        }
        LogRead::Events(events, read_to)
    }
}
