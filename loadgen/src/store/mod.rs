//! The revisioned object store: one global revision counter, pre-encoded objects, an
//! append-only event log (with each event's previous object) for watches and snapshots.

pub mod customs;
pub mod defaults;
pub mod deletion;
pub mod gc;
pub mod list;
pub mod patch;
pub mod selector;
pub mod watch_stream;

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::admission::validation;
use crate::apiserver::status::ApiError;
use crate::object::{meta_mut, meta_str, now_rfc3339, random_suffix, random_uid};
use crate::oracle::in_flight::{ArrivalId, Decision};
use crate::oracle::{
    Commit, Oracle, ReplicaSetTruth, Verb, Violation, WriteRecord, desired_replicas,
};
use crate::resource::Resource;

/// An object's key: `(namespace, name)`. Ordered as the real server orders lists.
pub type Key = (String, String);

/// An object as stored: its JSON value and the same value pre-encoded.
#[derive(Debug)]
pub struct Stored {
    /// The object.
    pub value: Value,
    /// `value` encoded as JSON, with `kind` and `apiVersion`.
    pub bytes: Bytes,
    /// The object's resourceVersion (the revision of its last write).
    pub rv: u64,
}

impl Stored {
    pub(crate) fn encode(value: Value, rv: u64) -> Arc<Stored> {
        let bytes = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Arc::new(Stored { value, bytes, rv })
    }
}

/// The type of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The watch event `type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed write, as kept in the event log.
#[derive(Debug)]
pub struct Event {
    /// The revision of the write.
    pub rev: u64,
    /// The resource written.
    pub resource: Resource,
    /// What happened.
    pub kind: EventType,
    /// The key of the object.
    pub key: Key,
    /// The new state; for a deletion the last state with the deletion's revision.
    pub object: Arc<Stored>,
    /// The state before the write (none for a creation).
    pub prev: Option<Arc<Stored>>,
    /// When the write committed.
    pub at: Instant,
}

/// Which part of an object a PUT replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// The main resource: everything but `status`.
    Main,
    /// `/status`: only `status`.
    Status,
}

/// DeleteOptions preconditions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// Delete only if the uid matches.
    pub uid: Option<String>,
    /// Delete only if the resourceVersion matches.
    pub resource_version: Option<String>,
}

/// A Pod the kubelet emulation should start.
#[derive(Debug, Clone)]
pub struct PodStarted {
    /// Namespace and name.
    pub key: Key,
    /// The Pod's uid, so a re-created Pod of the same name is not confused with it.
    pub uid: String,
    /// When it was created.
    pub at: Instant,
}

/// The result of reading events from the log.
#[derive(Debug)]
pub enum LogRead {
    /// Events (of the requested resource) after the position, and the revision read up to.
    Events(Vec<Arc<Event>>, u64),
    /// The position is older than the compaction point (given).
    Compacted(u64),
}

/// A Pod write that reached the server, as [`Store::arrive`] takes it.
#[derive(Debug, Clone, Copy)]
pub enum Arriving<'a> {
    /// A create with this body.
    Create(&'a Value),
    /// A delete of the Pod with this name.
    Delete(&'a str),
}

/// User agent of in-process writes.
pub const LOADGEN_USER_AGENT: &str = "loadgen";
pub use crate::store::gc::GC_USER_AGENT;
const MAX_LOG_READ: usize = 4096;

pub(crate) struct Inner {
    pub(crate) revision: u64,
    pub(crate) objects: [BTreeMap<Key, Arc<Stored>>; Resource::SLOTS],
    /// Contiguous: `log[i].rev == compacted + 1 + i`.
    log: VecDeque<Arc<Event>>,
    /// The oldest revision whose state can be reconstructed; the log holds every later event.
    compacted: u64,
    window: u64,
    oracle: Oracle,
    /// Dependents of every controlling owner, by the owner's uid.
    pub(crate) dependents: crate::store::gc::Dependents,
    /// Owners in Foreground deletion, by uid, waiting for their dependents to go.
    pub(crate) foreground: std::collections::HashMap<String, (Resource, Key)>,
}

/// The store. All writes serialise on one short lock; commit order is revision order.
pub struct Store {
    pub(crate) inner: Mutex<Inner>,
    /// The revision of the last write to each resource, readable without the lock (the
    /// authorizer rebuilds its RBAC index when an RBAC kind's moves).
    resource_revisions: [std::sync::atomic::AtomicU64; Resource::SLOTS],
    /// The custom resources served: one per valid CustomResourceDefinition stored.
    customs: parking_lot::RwLock<Vec<Resource>>,
    revision_tx: watch::Sender<u64>,
    kubelet: Option<mpsc::UnboundedSender<PodStarted>>,
    pub(crate) terminations: std::sync::OnceLock<mpsc::UnboundedSender<PodTerminating>>,
}

/// How a write is carried out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and return the result without storing it or taking a revision.
    pub dry_run: bool,
    /// Validate the object as upstream does (requests over HTTP); in-process writes skip it.
    pub validate: bool,
}

impl WriteOptions {
    /// The options of a request over HTTP: validated, dry run as asked.
    pub fn request(dry_run: bool) -> WriteOptions {
        WriteOptions {
            dry_run,
            validate: true,
        }
    }
}

/// A Pod that got a deletionTimestamp with a grace period: the kubelet emulation removes it.
#[derive(Debug, Clone)]
pub struct PodTerminating {
    /// Namespace and name.
    pub key: Key,
    /// The Pod's uid.
    pub uid: String,
    /// The grace period granted.
    pub grace: Duration,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("revision", &self.current_revision())
            .finish()
    }
}

fn check_type_meta(r: Resource, obj: &Value) -> Result<(), ApiError> {
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str)
        && av != r.api_version()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            r.api_version()
        )));
    }
    if let Some(k) = obj.get("kind").and_then(Value::as_str)
        && k != r.kind()
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            r.kind()
        )));
    }
    Ok(())
}

fn set_type_meta(r: Resource, obj: &mut Value) {
    if let Value::Object(m) = obj {
        m.insert("apiVersion".into(), Value::from(r.api_version()));
        m.insert("kind".into(), Value::from(r.kind()));
    }
}

fn check_body(r: Resource, ns: &str, obj: &Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(format!(
            "the body of the request was not a JSON object for kind {}",
            r.kind()
        )));
    }
    if !obj["metadata"].is_null() && !obj["metadata"].is_object() {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    check_type_meta(r, obj)?;
    let body_ns = meta_str(obj, "namespace");
    if r.namespaced() && !body_ns.is_empty() && body_ns != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// The status a new object starts with; `given` is the status in the request body.
fn status_on_create(r: Resource, given: Option<Value>) -> Option<Value> {
    use serde_json::json;
    match r {
        Resource::Pods => Some(json!({"phase": "Pending"})),
        Resource::ReplicaSets => Some(json!({"replicas": 0})),
        Resource::StatefulSets => Some(json!({"replicas": 0, "availableReplicas": 0})),
        Resource::DaemonSets => Some(json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        })),
        Resource::Jobs => Some(json!({})),
        Resource::PersistentVolumeClaims => Some(json!({"phase": "Pending"})),
        Resource::Namespaces => Some(json!({"phase": "Active"})),
        // A kubelet registers its Node with a status; kinds without a status keep the body.
        Resource::Nodes
        | Resource::Events
        | Resource::ControllerRevisions
        | Resource::Leases
        | Resource::ServiceAccounts
        | Resource::ClusterRoles
        | Resource::ClusterRoleBindings
        | Resource::Roles
        | Resource::RoleBindings => given,
        // The CRD's status is set when it is admitted.
        Resource::CustomResourceDefinitions => None,
        // With the status subresource a custom object starts without a status, as upstream.
        Resource::Custom(_) if r.has_status() => None,
        Resource::Custom(_) => given,
    }
}

fn take_status(obj: &mut Value) -> Option<Value> {
    obj.as_object_mut().and_then(|m| m.remove("status"))
}

fn put_status(obj: &mut Value, status: Option<Value>) {
    if let (Value::Object(m), Some(s)) = (obj, status) {
        m.insert("status".into(), s);
    }
}

/// Keeps the server-owned metadata of `stored` in `new`; bumps generation when spec changed.
fn carry_metadata(new: &mut Value, stored: &Value, bump: bool) {
    let spec_changed = bump && new.get("spec") != stored.get("spec");
    let old_meta = &stored["metadata"];
    let generation = old_meta["generation"].as_i64().unwrap_or(1) + i64::from(spec_changed);
    let meta = meta_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "name",
        "namespace",
    ] {
        match old_meta.get(field) {
            Some(v) if !v.is_null() => {
                meta.insert(field.to_string(), v.clone());
            }
            _ => {
                meta.remove(field);
            }
        }
    }
    meta.insert("generation".into(), Value::from(generation));
}

fn set_rv(obj: &mut Value, rv: u64) {
    meta_mut(obj).insert("resourceVersion".into(), Value::from(rv.to_string()));
}

impl Store {
    /// A store keeping `window` revisions of history, optionally telling a kubelet of new Pods.
    pub fn new(window: u64, kubelet: Option<mpsc::UnboundedSender<PodStarted>>) -> Store {
        // Revision 1 is the bootstrap revision: resourceVersions start at 2, never "0".
        Store {
            inner: Mutex::new(Inner {
                revision: 1,
                objects: std::array::from_fn(|_| BTreeMap::new()),
                log: VecDeque::new(),
                compacted: 1,
                window: window.max(1),
                oracle: Oracle::default(),
                dependents: Default::default(),
                foreground: Default::default(),
            }),
            resource_revisions: std::array::from_fn(|_| Default::default()),
            customs: parking_lot::RwLock::new(Vec::new()),
            revision_tx: watch::Sender::new(1),
            kubelet,
            terminations: std::sync::OnceLock::new(),
        }
    }

    /// The revision of the last committed write.
    pub fn current_revision(&self) -> u64 {
        self.inner.lock().revision
    }

    /// The oldest revision that can still be listed or watched from.
    pub fn compacted_revision(&self) -> u64 {
        self.inner.lock().compacted
    }

    /// A receiver of the latest revision, notified on every commit.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision_tx.subscribe()
    }

    /// Waits until the revision reaches `rev`; false after `timeout`.
    pub async fn wait_for_revision(&self, rev: u64, timeout: Duration) -> bool {
        let mut rx = self.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|v| *v >= rev))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Creates an object (POST), applying `generateName` and server-owned metadata.
    pub fn create(
        &self,
        r: Resource,
        ns: &str,
        obj: Value,
        user_agent: Option<&str>,
    ) -> Result<Arc<Stored>, ApiError> {
        self.create_with(r, ns, obj, user_agent, WriteOptions::default())
    }

    /// [`Store::create`] with validation and dry run as `opts` ask.
    pub fn create_with(
        &self,
        r: Resource,
        ns: &str,
        mut obj: Value,
        user_agent: Option<&str>,
        opts: WriteOptions,
    ) -> Result<Arc<Stored>, ApiError> {
        check_body(r, ns, &obj)?;
        let name = meta_str(&obj, "name").to_string();
        let generate = meta_str(&obj, "generateName").to_string();
        let causes = validation::validate_name(r, &obj);
        if !causes.is_empty() {
            return Err(ApiError::invalid_causes(
                r.kind(),
                if name.is_empty() { &generate } else { &name },
                causes,
            ));
        }
        set_type_meta(r, &mut obj);
        let given = take_status(&mut obj);
        put_status(&mut obj, status_on_create(r, given));
        let uid = random_uid();
        {
            let meta = meta_mut(&mut obj);
            if r.namespaced() {
                meta.insert("namespace".into(), Value::from(ns));
            } else {
                meta.remove("namespace");
            }
            meta.insert("uid".into(), Value::from(uid.clone()));
            meta.insert("creationTimestamp".into(), Value::from(now_rfc3339()));
            meta.insert("generation".into(), Value::from(1));
            meta.remove("resourceVersion");
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            meta.remove("selfLink");
        }
        let ns = if r.namespaced() { ns } else { "" };
        for _ in 0..8 {
            let key = (
                ns.to_string(),
                if name.is_empty() {
                    format!("{generate}{}", random_suffix())
                } else {
                    name.clone()
                },
            );
            let mut candidate = obj.clone();
            meta_mut(&mut candidate).insert("name".into(), Value::from(key.1.clone()));
            defaults::apply_defaults(r, &mut candidate, &uid, &key.1);
            if r == Resource::CustomResourceDefinitions {
                customs::admit_create(&mut candidate)?;
            }
            if opts.validate {
                let causes = validation::validate(r, &candidate);
                if !causes.is_empty() {
                    return Err(ApiError::invalid_causes(r.kind(), &key.1, causes));
                }
            }
            let stored = {
                let mut inner = self.inner.lock();
                if inner.objects[r.index()].contains_key(&key) {
                    if name.is_empty() {
                        continue;
                    }
                    return Err(ApiError::already_exists(r.plural(), &key.1));
                }
                if opts.dry_run {
                    return Ok(Stored::encode(candidate, 0));
                }
                self.commit(
                    &mut inner,
                    r,
                    Verb::Create,
                    key.clone(),
                    Some(candidate),
                    user_agent,
                )
            };
            if r == Resource::Pods
                && let Some(k) = &self.kubelet
            {
                let _ = k.send(PodStarted {
                    key,
                    uid,
                    at: Instant::now(),
                });
            }
            return Ok(stored);
        }
        Err(ApiError::already_exists(r.plural(), &generate))
    }

    /// Replaces an object (PUT) with optimistic concurrency on `metadata.resourceVersion`.
    pub fn update(
        &self,
        r: Resource,
        ns: &str,
        name: &str,
        body: Value,
        sub: Subresource,
        user_agent: Option<&str>,
    ) -> Result<Arc<Stored>, ApiError> {
        self.update_opts(r, ns, name, body, sub, user_agent, WriteOptions::default())
    }

    /// [`Store::update`] with validation and dry run as `opts` ask.
    #[allow(clippy::too_many_arguments)]
    pub fn update_opts(
        &self,
        r: Resource,
        ns: &str,
        name: &str,
        mut body: Value,
        sub: Subresource,
        user_agent: Option<&str>,
        opts: WriteOptions,
    ) -> Result<Arc<Stored>, ApiError> {
        check_body(r, ns, &body)?;
        let body_name = meta_str(&body, "name");
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let wanted_rv = meta_str(&body, "resourceVersion").to_string();
        let ns = if r.namespaced() { ns } else { "" };
        let mut inner = self.inner.lock();
        let key = (ns.to_string(), name.to_string());
        let Some(stored) = inner.objects[r.index()].get(&key).cloned() else {
            return Err(ApiError::not_found(r.plural(), name));
        };
        if !wanted_rv.is_empty() && wanted_rv != stored.rv.to_string() {
            return Err(ApiError::conflict_modified(r.plural(), name));
        }
        let mut new = match sub {
            Subresource::Main if r.has_status() => {
                set_type_meta(r, &mut body);
                take_status(&mut body);
                put_status(&mut body, stored.value.get("status").cloned());
                carry_metadata(&mut body, &stored.value, true);
                body
            }
            Subresource::Main => {
                set_type_meta(r, &mut body);
                carry_metadata(&mut body, &stored.value, true);
                body
            }
            Subresource::Status => {
                let mut new = stored.value.clone();
                take_status(&mut new);
                put_status(&mut new, take_status(&mut body));
                new
            }
        };
        if r == Resource::CustomResourceDefinitions && sub == Subresource::Main {
            customs::admit_update(&stored.value, &new)?;
        }
        if opts.validate && sub == Subresource::Main {
            let mut causes = validation::validate(r, &new);
            causes.extend(validation::validate_update(r, &stored.value, &new));
            if !causes.is_empty() {
                return Err(ApiError::invalid_causes(r.kind(), name, causes));
            }
        }
        if opts.dry_run {
            set_rv(&mut new, stored.rv);
            return Ok(Stored::encode(new, stored.rv));
        }
        let verb = match sub {
            Subresource::Main => Verb::Update,
            Subresource::Status => Verb::UpdateStatus,
        };
        Ok(self.commit_if_changed(&mut inner, r, verb, key, new, &stored, user_agent))
    }

    /// Read-modify-write of the whole object (spec and status), for in-process scenarios.
    pub fn update_with(
        &self,
        r: Resource,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
        user_agent: Option<&str>,
    ) -> Result<Arc<Stored>, ApiError> {
        self.modify(r, ns, name, f, Verb::Update, true, user_agent)
    }

    /// Read-modify-write recorded with `verb`, without bumping `metadata.generation`
    /// (for system writers such as the kubelet binding and starting a Pod).
    pub fn write_as(
        &self,
        r: Resource,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
        verb: Verb,
        user_agent: &str,
    ) -> Result<Arc<Stored>, ApiError> {
        self.modify(r, ns, name, f, verb, false, Some(user_agent))
    }

    #[allow(clippy::too_many_arguments)]
    fn modify(
        &self,
        r: Resource,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
        verb: Verb,
        bump_generation: bool,
        user_agent: Option<&str>,
    ) -> Result<Arc<Stored>, ApiError> {
        let ns = if r.namespaced() { ns } else { "" };
        let mut inner = self.inner.lock();
        let key = (ns.to_string(), name.to_string());
        let Some(stored) = inner.objects[r.index()].get(&key).cloned() else {
            return Err(ApiError::not_found(r.plural(), name));
        };
        let mut new = stored.value.clone();
        f(&mut new);
        set_type_meta(r, &mut new);
        carry_metadata(&mut new, &stored.value, bump_generation);
        Ok(self.commit_if_changed(&mut inner, r, verb, key, new, &stored, user_agent))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn commit_if_changed(
        &self,
        inner: &mut Inner,
        r: Resource,
        verb: Verb,
        key: Key,
        mut new: Value,
        stored: &Arc<Stored>,
        user_agent: Option<&str>,
    ) -> Arc<Stored> {
        set_rv(&mut new, stored.rv);
        if new == stored.value {
            // The real server skips no-op updates: no new revision, no event.
            return stored.clone();
        }
        if crate::store::deletion::ready_to_remove(&new) {
            // The last finalizer of an object being deleted is gone: remove it.
            return self.remove(inner, r, key, Some(new), user_agent);
        }
        self.commit(inner, r, verb, key, Some(new), user_agent)
    }

    /// Commits one write at the next revision. `new == None` deletes.
    pub(crate) fn commit(
        &self,
        inner: &mut Inner,
        r: Resource,
        verb: Verb,
        key: Key,
        new: Option<Value>,
        user_agent: Option<&str>,
    ) -> Arc<Stored> {
        let rev = inner.revision + 1;
        inner.revision = rev;
        let map = &mut inner.objects[r.index()];
        let (kind, object, prev) = match new {
            Some(mut value) => {
                set_rv(&mut value, rev);
                let stored = Stored::encode(value, rev);
                let prev = map.insert(key.clone(), stored.clone());
                let kind = if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                (kind, stored, prev)
            }
            None => {
                let prev = map.remove(&key);
                let mut last = prev.as_ref().map(|p| p.value.clone()).unwrap_or_default();
                set_rv(&mut last, rev);
                (EventType::Deleted, Stored::encode(last, rev), prev)
            }
        };
        let new_value = (kind != EventType::Deleted).then_some(&object.value);
        inner.oracle.observe(&Commit {
            revision: rev,
            verb,
            resource: r,
            prev: prev.as_ref().map(|p| &p.value),
            new: new_value,
            user_agent,
            arrival: crate::oracle::in_flight::current(),
        });
        inner
            .dependents
            .track(r, &key, prev.as_ref().map(|p| &p.value), new_value);
        if r == Resource::CustomResourceDefinitions {
            self.track_crd(prev.as_ref().map(|p| &p.value), new_value);
        }
        inner.log.push_back(Arc::new(Event {
            rev,
            resource: r,
            kind,
            key,
            object: object.clone(),
            prev,
            at: Instant::now(),
        }));
        while inner.log.len() as u64 > inner.window {
            if let Some(e) = inner.log.pop_front() {
                inner.compacted = e.rev;
            }
        }
        self.resource_revisions[r.index()].store(rev, std::sync::atomic::Ordering::Release);
        self.revision_tx.send_replace(rev);
        object
    }

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

    /// A request to create a Pod (`body`) or delete the Pod `name` reached the server: the
    /// oracle judges it against the state now. `None` when there is nothing to judge (no such
    /// Pod to delete).
    pub fn arrive(&self, namespace: &str, arriving: Arriving<'_>) -> Option<ArrivalId> {
        let mut inner = self.inner.lock();
        match arriving {
            Arriving::Create(body) => Some(inner.oracle.arrive(namespace, Decision::Create(body))),
            Arriving::Delete(name) => {
                let key = (namespace.to_string(), name.to_string());
                let pod = inner.objects[Resource::Pods.index()].get(&key)?.clone();
                crate::oracle::pod_is_live(&pod.value)
                    .then(|| inner.oracle.arrive(namespace, Decision::Delete(&pod.value)))
            }
        }
    }

    /// The request `id` ended, committed or not.
    pub fn depart(&self, id: ArrivalId) {
        self.inner.lock().oracle.depart(id);
    }

    /// Lets the oracle judge a decision made on a set's previous size fair while the change is
    /// younger than `allowance` (see [`crate::oracle::knowable`]).
    pub fn set_delivery_allowance(&self, allowance: std::time::Duration) {
        self.inner.lock().oracle.set_delivery_allowance(allowance);
    }

    /// Every violation the oracle found.
    pub fn violations(&self) -> Vec<Violation> {
        self.inner.lock().oracle.violations().to_vec()
    }

    /// How many violations the oracle found (cheap: the simulation checks it after every step).
    pub fn violation_count(&self) -> usize {
        self.inner.lock().oracle.violations().len()
    }

    /// Every write recorded.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.inner.lock().oracle.writes().to_vec()
    }

    /// How many writes were recorded.
    pub fn write_count(&self) -> u64 {
        self.inner.lock().oracle.writes().len() as u64
    }

    /// The ground truth about every ReplicaSet.
    pub fn replicaset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.set_truth(Resource::ReplicaSets)
    }

    /// The ground truth about every StatefulSet (the same figures as for ReplicaSets).
    pub fn statefulset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.set_truth(Resource::StatefulSets)
    }

    fn set_truth(&self, resource: Resource) -> Vec<ReplicaSetTruth> {
        let inner = self.inner.lock();
        inner.objects[resource.index()]
            .values()
            .map(|rs| {
                let v = &rs.value;
                ReplicaSetTruth {
                    namespace: meta_str(v, "namespace").to_string(),
                    name: meta_str(v, "name").to_string(),
                    generation: v["metadata"]["generation"].as_i64().unwrap_or(0),
                    spec_replicas: desired_replicas(v),
                    live_pods: inner.oracle.live_pods(meta_str(v, "uid")),
                    status_replicas: v["status"]["replicas"].as_i64().unwrap_or(0),
                    status_ready_replicas: v["status"]["readyReplicas"].as_i64().unwrap_or(0),
                    observed_generation: v["status"]["observedGeneration"].as_i64().unwrap_or(0),
                    outdated_pods: if resource == Resource::StatefulSets {
                        inner.oracle.outdated_statefulset_pods(meta_str(v, "uid"))
                    } else {
                        0
                    },
                    revisions_settled: resource != Resource::StatefulSets
                        || v["status"]["currentRevision"] == v["status"]["updateRevision"],
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    }

    fn all(_: &Value) -> bool {
        true
    }

    #[test]
    fn every_write_takes_the_next_revision() {
        let s = Store::new(100, None);
        let a = s.create(Resource::Pods, "ns", pod("a"), None).unwrap();
        let b = s.create(Resource::Pods, "ns", pod("b"), None).unwrap();
        assert_eq!(b.rv, a.rv + 1);
        assert_eq!(a.value["metadata"]["resourceVersion"], a.rv.to_string());
        let d = s
            .delete(Resource::Pods, "ns", "a", &Preconditions::default(), None)
            .unwrap();
        assert_eq!(d.rv, b.rv + 1);
        assert_eq!(s.current_revision(), d.rv);
    }

    #[test]
    fn generate_name_creates_distinct_names() {
        let s = Store::new(100, None);
        let mut names = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let p = s
                .create(
                    Resource::Pods,
                    "ns",
                    json!({"metadata": {"generateName": "web-"}}),
                    None,
                )
                .unwrap();
            let n = meta_str(&p.value, "name").to_string();
            assert!(n.starts_with("web-") && n.len() == 9, "{n}");
            names.insert(n);
        }
        assert_eq!(names.len(), 50);
    }

    #[test]
    fn a_no_op_update_takes_no_revision() {
        let s = Store::new(100, None);
        let a = s.create(Resource::Pods, "ns", pod("a"), None).unwrap();
        let same = s
            .update(
                Resource::Pods,
                "ns",
                "a",
                a.value.clone(),
                Subresource::Main,
                None,
            )
            .unwrap();
        assert_eq!(same.rv, a.rv);
    }

    #[test]
    fn the_main_resource_keeps_status_and_bumps_generation_on_spec_changes() {
        let s = Store::new(100, None);
        let a = s
            .create(
                Resource::ReplicaSets,
                "ns",
                json!({"metadata": {"name": "r"}, "spec": {"replicas": 1}}),
                None,
            )
            .unwrap();
        let mut body = a.value.clone();
        body["spec"]["replicas"] = json!(3);
        body["status"] = json!({"replicas": 7});
        body["metadata"]["uid"] = json!("forged");
        let u = s
            .update(
                Resource::ReplicaSets,
                "ns",
                "r",
                body,
                Subresource::Main,
                None,
            )
            .unwrap();
        assert_eq!(u.value["status"], json!({"replicas": 0}));
        assert_eq!(u.value["metadata"]["generation"], 2);
        assert_eq!(u.value["metadata"]["uid"], a.value["metadata"]["uid"]);
    }

    #[test]
    fn a_snapshot_undoes_later_writes() {
        let s = Store::new(100, None);
        for n in ["a", "b", "c"] {
            s.create(Resource::Pods, "ns", pod(n), None).unwrap();
        }
        let rev = s.current_revision();
        s.delete(Resource::Pods, "ns", "b", &Preconditions::default(), None)
            .unwrap();
        s.create(Resource::Pods, "ns", pod("bb"), None).unwrap();
        s.update_with(
            Resource::Pods,
            "ns",
            "a",
            |v| v["spec"]["x"] = json!(1),
            None,
        )
        .unwrap();
        let (items, more) = s
            .list_page(Resource::Pods, Some("ns"), rev, None, 10, &all)
            .unwrap();
        assert!(!more);
        let names: Vec<_> = items
            .iter()
            .map(|i| meta_str(&i.value, "name").to_string())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(items.iter().all(|i| i.rv <= rev));
        let (now, _) = s
            .list_page(Resource::Pods, None, s.current_revision(), None, 10, &all)
            .unwrap();
        assert_eq!(now.len(), 3);
    }

    #[test]
    fn history_beyond_the_window_is_expired() {
        let s = Store::new(2, None);
        let rev = s.current_revision();
        for n in ["a", "b", "c"] {
            s.create(Resource::Pods, "ns", pod(n), None).unwrap();
        }
        let e = s
            .list_page(Resource::Pods, None, rev, None, 10, &all)
            .unwrap_err();
        assert_eq!(e.code(), 410);
        assert!(matches!(
            s.events_after(Resource::Pods, rev),
            LogRead::Compacted(_)
        ));
        match s.events_after(Resource::Pods, s.compacted_revision()) {
            LogRead::Events(ev, to) => {
                assert_eq!(ev.len(), 2);
                assert_eq!(to, s.current_revision());
            }
            LogRead::Compacted(_) => panic!("compacted"),
        }
    }

    #[test]
    fn deleting_a_replicaset_collects_its_pods() {
        let s = Store::new(100, None);
        let rs = s
            .create(
                Resource::ReplicaSets,
                "ns",
                json!({"metadata": {"name": "r"}, "spec": {"replicas": 1}}),
                None,
            )
            .unwrap();
        let uid = meta_str(&rs.value, "uid").to_string();
        let mut p = pod("p");
        p["metadata"]["ownerReferences"] = json!([{"uid": uid, "controller": true, "kind": "ReplicaSet", "name": "r", "apiVersion": "apps/v1"}]);
        s.create(Resource::Pods, "ns", p, None).unwrap();
        s.create(Resource::Pods, "ns", pod("other"), None).unwrap();
        s.delete(
            Resource::ReplicaSets,
            "ns",
            "r",
            &Preconditions::default(),
            None,
        )
        .unwrap();
        assert!(s.get(Resource::Pods, "ns", "p").is_none());
        assert!(s.get(Resource::Pods, "ns", "other").is_some());
        assert!(s.violations().is_empty());
        assert_eq!(
            s.writes().last().map(|w| w.user_agent.clone()),
            Some(Some(GC_USER_AGENT.to_string()))
        );
    }
}
