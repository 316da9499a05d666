//! A bounded map that forgets the least recently used entry, as the `lru.Cache` client-go's
//! event correlator keeps its records in (4096 entries): memory stays bounded however many
//! objects a storm touches.

use ahash::AHashMap;
use std::collections::BTreeMap;
use std::hash::Hash;

/// At most `capacity` entries; a `get` or `put` makes an entry the most recent.
#[derive(Debug)]
pub struct Lru<K, V> {
    capacity: usize,
    tick: u64,
    entries: AHashMap<K, (V, u64)>,
    by_use: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty cache of `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            tick: 0,
            entries: AHashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    fn touch(&mut self, key: &K) {
        self.tick += 1;
        if let Some((_, used)) = self.entries.get_mut(key) {
            self.by_use.remove(used);
            *used = self.tick;
            self.by_use.insert(self.tick, key.clone());
        }
    }

    /// The entry of `key`, now the most recent.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.touch(key);
        self.entries.get_mut(key).map(|(v, _)| v)
    }

    /// Stores `value` under `key`, forgetting the least recent entry when full.
    pub fn put(&mut self, key: K, value: V) {
        if let Some(slot) = self.entries.get_mut(&key) {
            slot.0 = value;
            self.touch(&key);
            return;
        }
        if self.entries.len() >= self.capacity
            && let Some((_, oldest)) = self.by_use.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.tick += 1;
        self.by_use.insert(self.tick, key.clone());
        self.entries.insert(key, (value, self.tick));
    }

    /// How many entries it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_is_forgotten_first() {
        let mut lru = Lru::new(2);
        lru.put("a", 1);
        lru.put("b", 2);
        assert_eq!(lru.get_mut(&"a"), Some(&mut 1));
        lru.put("c", 3);
        assert_eq!(lru.get_mut(&"b"), None, "b was the least recent");
        assert_eq!(lru.get_mut(&"a"), Some(&mut 1));
        assert_eq!(lru.get_mut(&"c"), Some(&mut 3));
        assert_eq!(lru.len(), 2);
    }
}
