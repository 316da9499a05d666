//! Shared copies of the values many cached objects repeat (namespaces, owner kinds and names,
//! node names, whole label sets): one allocation per distinct value, one pointer per object.
//!
//! Written here rather than taken from a crate: `internment`'s `ArcIntern` keeps one global
//! `DashMap` per type and frees an entry on the last drop, which costs a map lock and removal on
//! every drop of every clone's last holder (a Pod deleted is several drops); interners such as
//! `lasso` or `ustr` never free at all, and a cluster's namespaces and nodes come and go. Here
//! a value is an ordinary `Arc`, so a clone or drop costs what any `Arc` does; the table is
//! split into shards behind their own locks so decoding threads rarely meet, and a shard sweeps
//! out the entries only it still holds whenever it has doubled since its last sweep, so a table
//! never holds more than about twice what is alive.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// How many independently locked parts a table has: enough that a few decoding threads
/// rarely wait on one another.
const SHARDS: usize = 16;

/// Entries a shard may hold before its first sweep.
const FIRST_SWEEP_AT: usize = 64;

/// A table of shared values of type `T`.
pub struct Interner<T: ?Sized> {
    shards: [Mutex<Shard<T>>; SHARDS],
    hasher: ahash::RandomState,
}

struct Shard<T: ?Sized> {
    entries: ahash::AHashSet<Arc<T>>,
    sweep_at: usize,
}

impl<T: ?Sized + Hash + Eq> Shard<T> {
    fn insert(&mut self, made: Arc<T>) -> Arc<T> {
        if self.entries.len() >= self.sweep_at {
            self.entries.retain(|entry| Arc::strong_count(entry) > 1);
            self.sweep_at = (self.entries.len() * 2).max(FIRST_SWEEP_AT);
        }
        self.entries.insert(Arc::clone(&made));
        made
    }
}

impl<T: ?Sized + Hash + Eq> Default for Interner<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ?Sized + Hash + Eq> Interner<T> {
    /// An empty table.
    pub fn new() -> Self {
        Self {
            shards: std::array::from_fn(|_| {
                Mutex::new(Shard {
                    entries: ahash::AHashSet::new(),
                    sweep_at: FIRST_SWEEP_AT,
                })
            }),
            hasher: ahash::RandomState::with_seeds(
                0x243f_6a88_85a3_08d3,
                0x1319_8a2e_0370_7344,
                0xa409_3822_299f_31d0,
                0x082e_fa98_ec4e_6c89,
            ),
        }
    }

    /// The shared copy of `value`, made by `make` when there is none.
    pub fn intern_with<Q>(&self, value: &Q, make: impl FnOnce() -> Arc<T>) -> Arc<T>
    where
        Arc<T>: Borrow<Q>,
        Q: ?Sized + Hash + Eq,
    {
        let mut shard = self.shard_of(value);
        if let Some(found) = shard.entries.get(value) {
            return Arc::clone(found);
        }
        shard.insert(make())
    }

    /// The shared copy of `value`, which becomes it when there is none.
    pub fn intern_boxed(&self, value: Box<T>) -> Arc<T>
    where
        Arc<T>: From<Box<T>>,
    {
        let mut shard = self.shard_of(&*value);
        if let Some(found) = shard.entries.get(&*value) {
            return Arc::clone(found);
        }
        shard.insert(Arc::from(value))
    }

    fn shard_of<Q: ?Sized + Hash>(&self, value: &Q) -> MutexGuard<'_, Shard<T>> {
        let at = (self.hasher.hash_one(value) as usize) % SHARDS;
        // A panic while a shard was held cannot leave its set half changed in a way that
        // matters here: every entry in it is still a whole value.
        self.shards[at]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many values the table holds, some of them perhaps no longer used elsewhere.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                s.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entries
                    .len()
            })
            .sum()
    }

    /// True when the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Interner<str> {
    /// The shared copy of `text`.
    pub fn intern(&self, text: &str) -> Arc<str> {
        self.intern_with(text, || Arc::from(text))
    }
}

/// The table of short strings objects repeat: namespaces, owner kinds and names, node names.
pub fn strings() -> &'static Interner<str> {
    static STRINGS: std::sync::LazyLock<Interner<str>> = std::sync::LazyLock::new(Interner::new);
    &STRINGS
}

/// The shared copy of `text` from [`strings`].
pub fn string(text: &str) -> Arc<str> {
    strings().intern(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_allocation_and_different_ones_do_not() {
        let table: Interner<str> = Interner::new();
        let a = table.intern("kube-system");
        let b = table.intern(&String::from("kube-system"));
        let c = table.intern("default");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*a, "kube-system");
        assert_eq!(&*c, "default");
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn values_nothing_else_holds_are_reclaimed_as_the_table_grows() {
        let table: Interner<str> = Interner::new();
        let kept = table.intern("kept");
        for round in 0..200 {
            for i in 0..100 {
                drop(table.intern(&format!("node-{round}-{i}")));
            }
        }
        assert!(
            table.len() <= SHARDS * (FIRST_SWEEP_AT + 1),
            "{} entries after churn",
            table.len()
        );
        assert!(Arc::ptr_eq(&kept, &table.intern("kept")));
    }

    #[test]
    fn values_still_held_survive_a_sweep() {
        let table: Interner<str> = Interner::new();
        let held: Vec<Arc<str>> = (0..2_000)
            .map(|i| table.intern(&format!("ns-{i}")))
            .collect();
        for (i, value) in held.iter().enumerate() {
            assert!(Arc::ptr_eq(value, &table.intern(&format!("ns-{i}"))));
        }
    }

    #[test]
    fn threads_interning_the_same_values_get_the_same_copies() {
        let table: Arc<Interner<str>> = Arc::new(Interner::new());
        let per_thread: Vec<Vec<Arc<str>>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let table = Arc::clone(&table);
                    scope.spawn(move || {
                        (0..1_000)
                            .map(|i| table.intern(&format!("value-{}", i % 300)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_default())
                .collect()
        });
        for values in &per_thread[1..] {
            assert_eq!(values.len(), per_thread[0].len());
            for (a, b) in values.iter().zip(&per_thread[0]) {
                assert!(Arc::ptr_eq(a, b));
            }
        }
        assert_eq!(table.len(), 300);
    }

    #[test]
    fn a_slice_type_interns_whole_sets() {
        let table: Interner<[(Box<str>, Box<str>)]> = Interner::new();
        let set = |v: &str| -> Box<[(Box<str>, Box<str>)]> { Box::new([("app".into(), v.into())]) };
        let a = table.intern_boxed(set("web"));
        let b = table.intern_with(&*set("web"), || Arc::from(set("web")));
        let c = table.intern_boxed(set("db"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
    }
}
