//! Deletion as upstream does it: graceful deletion of Pods (deletionTimestamp, then the
//! kubelet removes them), finalizers that hold an object until they are removed, and the
//! propagation policies (Orphan, Background, Foreground) of the garbage collector.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::apiserver::status::ApiError;
use crate::meta::{controller_uid, meta_mut, meta_str};
use crate::resource::Resource;
use crate::store::Verb;
use crate::store::gc::{self, GC_USER_AGENT};
use crate::store::{Inner, Key, PodTerminating, Preconditions, Store, Stored};

/// The finalizer that holds an owner while its dependents are deleted (Foreground).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The default grace period of a Pod without `spec.terminationGracePeriodSeconds`.
pub const DEFAULT_GRACE_SECONDS: i64 = 30;

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    /// Remove the owner's ownerReferences from its dependents and keep them.
    Orphan,
    /// Delete the owner now and its dependents after it (the default).
    #[default]
    Background,
    /// Delete the dependents first; the owner stays (finalizer `foregroundDeletion`) until they are gone.
    Foreground,
}

impl Propagation {
    /// Parses the wire value.
    pub fn parse(s: &str) -> Result<Propagation, ApiError> {
        match s {
            "Orphan" => Ok(Propagation::Orphan),
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            other => Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))),
        }
    }
}

/// The parsed `DeleteOptions` of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Preconditions on uid and resourceVersion.
    pub preconditions: Preconditions,
    /// `gracePeriodSeconds`; None for the kind's default.
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`; None for the default (Background).
    pub propagation: Option<Propagation>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

/// What a delete did.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; its last state at the deletion's revision.
    Gone(Arc<Stored>),
    /// The object is being deleted (deletionTimestamp set; grace period or finalizers).
    Pending(Arc<Stored>),
}

impl Deleted {
    /// The object in the response.
    pub fn stored(&self) -> &Arc<Stored> {
        match self {
            Deleted::Gone(s) | Deleted::Pending(s) => s,
        }
    }
}

fn finalizers(obj: &Value) -> Vec<&str> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether an object being deleted has nothing left holding it (no finalizers, no grace period).
pub fn ready_to_remove(obj: &Value) -> bool {
    !obj["metadata"]["deletionTimestamp"].is_null()
        && finalizers(obj).is_empty()
        && obj["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0)
            == 0
}

/// The grace period a delete of `obj` gets: only Pods bound to a node and not finished are
/// deleted gracefully (upstream deletes unscheduled and terminated Pods at once).
fn grace_seconds(r: Resource, obj: &Value, asked: Option<i64>) -> i64 {
    if r != Resource::Pods {
        return 0;
    }
    let unbound = obj["spec"]["nodeName"].as_str().unwrap_or("").is_empty();
    let finished = matches!(
        obj["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    if unbound || finished {
        return 0;
    }
    asked
        .or_else(|| obj["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(DEFAULT_GRACE_SECONDS)
        .max(0)
}

fn check_preconditions(
    r: Resource,
    name: &str,
    stored: &Stored,
    pre: &Preconditions,
) -> Result<(), ApiError> {
    let uid = meta_str(&stored.value, "uid");
    if let Some(want) = &pre.uid
        && want != uid
    {
        return Err(ApiError::conflict(
            r.plural(),
            name,
            &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        ));
    }
    if let Some(want) = &pre.resource_version
        && *want != stored.rv.to_string()
    {
        return Err(ApiError::conflict(
            r.plural(),
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {}",
                stored.rv
            ),
        ));
    }
    Ok(())
}

fn deletion_timestamp(grace: i64) -> String {
    let now = crate::clock::now_timestamp();
    let at = now
        .checked_add(jiff::SignedDuration::from_secs(grace))
        .unwrap_or(now);
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl Store {
    /// Deletes an object at once (grace period 0, Background propagation), checking
    /// preconditions; dependents are deleted at later revisions. Returns the last state at
    /// the deletion revision (or, if finalizers hold it, the state with its deletionTimestamp).
    pub fn delete(
        &self,
        r: Resource,
        ns: &str,
        name: &str,
        pre: &Preconditions,
        user_agent: Option<&str>,
    ) -> Result<Arc<Stored>, ApiError> {
        let opts = DeleteOptions {
            preconditions: pre.clone(),
            grace_period_seconds: Some(0),
            ..DeleteOptions::default()
        };
        self.delete_opts(r, ns, name, &opts, user_agent)
            .map(|d| d.stored().clone())
    }

    /// Deletes an object as a DELETE request with `opts` does.
    pub fn delete_opts(
        &self,
        r: Resource,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
        user_agent: Option<&str>,
    ) -> Result<Deleted, ApiError> {
        let ns = if r.namespaced() { ns } else { "" };
        let key: Key = (ns.to_string(), name.to_string());
        let mut inner = self.inner.lock();
        let Some(stored) = inner.objects[r.index()].get(&key).cloned() else {
            return Err(ApiError::not_found(r.plural(), name));
        };
        check_preconditions(r, name, &stored, &opts.preconditions)?;
        let grace = grace_seconds(r, &stored.value, opts.grace_period_seconds);
        let propagation = opts.propagation.unwrap_or_default();
        let mut marked = stored.value.clone();
        let already = !stored.value["metadata"]["deletionTimestamp"].is_null();
        {
            let meta = meta_mut(&mut marked);
            if !already {
                meta.insert(
                    "deletionTimestamp".into(),
                    Value::from(deletion_timestamp(grace)),
                );
            }
            let current = meta
                .get("deletionGracePeriodSeconds")
                .and_then(Value::as_i64);
            // A second delete may shorten the grace period, never lengthen it.
            let effective = current.map_or(grace, |c| c.min(grace));
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(effective));
            if propagation == Propagation::Foreground
                && !finalizers(&stored.value).contains(&FOREGROUND_FINALIZER)
            {
                let list = meta
                    .entry("finalizers")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(a) = list {
                    a.push(Value::from(FOREGROUND_FINALIZER));
                }
            }
        }
        if opts.dry_run {
            return Ok(if ready_to_remove(&marked) {
                Deleted::Gone(stored)
            } else {
                Deleted::Pending(Stored::encode(marked, stored.rv))
            });
        }
        let uid = meta_str(&stored.value, "uid").to_string();
        if propagation == Propagation::Orphan {
            for (dr, dk) in inner.dependents.of(&uid) {
                if let Some(dep) = inner.objects[dr.index()].get(&dk).cloned() {
                    let orphan = gc::without_owner(&dep.value, &uid);
                    self.commit_if_changed(
                        &mut inner,
                        dr,
                        Verb::Update,
                        dk,
                        orphan,
                        &dep,
                        Some(GC_USER_AGENT),
                    );
                }
            }
        }
        if ready_to_remove(&marked) {
            return Ok(Deleted::Gone(self.remove(
                &mut inner,
                r,
                key,
                Some(marked),
                user_agent,
            )));
        }
        let key_for_foreground = key.clone();
        let pending = self.commit_if_changed(
            &mut inner,
            r,
            Verb::Delete,
            key.clone(),
            marked,
            &stored,
            user_agent,
        );
        let grace_now = pending.value["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0);
        if r == Resource::Pods
            && grace_now > 0
            && let Some(tx) = self.terminations.get()
        {
            let _ = tx.send(PodTerminating {
                key,
                uid: uid.clone(),
                grace: Duration::from_secs(u64::try_from(grace_now).unwrap_or(0)),
            });
        }
        if propagation == Propagation::Foreground {
            inner
                .foreground
                .insert(uid.clone(), (r, key_for_foreground));
            self.collect_dependents(&mut inner, &uid);
            self.finish_foreground(&mut inner, &uid);
        }
        Ok(Deleted::Pending(pending))
    }

    /// Removes an object at the next revision and lets the garbage collector act on it:
    /// its dependents are deleted, and an owner waiting in Foreground deletion for it is
    /// removed once it has no dependents left.
    pub(crate) fn remove(
        &self,
        inner: &mut Inner,
        r: Resource,
        key: Key,
        last: Option<Value>,
        user_agent: Option<&str>,
    ) -> Arc<Stored> {
        if r == Resource::CustomResourceDefinitions
            && let Some(crd) = inner.objects[r.index()].get(&key).cloned()
        {
            self.remove_custom_objects(inner, &crd.value);
        }
        let removed = self.commit(inner, r, Verb::Delete, key.clone(), None, user_agent);
        let value = last.as_ref().unwrap_or(&removed.value);
        let uid = meta_str(value, "uid").to_string();
        let owner = controller_uid(value).map(str::to_string);
        self.collect_dependents(inner, &uid);
        if r == Resource::Namespaces {
            self.empty_namespace(inner, &key.1);
        }
        if let Some(owner) = owner {
            self.finish_foreground(inner, &owner);
        }
        removed
    }

    /// Deletes (in Background) every dependent of the owner with `uid`.
    fn collect_dependents(&self, inner: &mut Inner, uid: &str) {
        for (dr, dk) in inner.dependents.of(uid) {
            let Some(dep) = inner.objects[dr.index()].get(&dk).cloned() else {
                continue;
            };
            if !dep.value["metadata"]["deletionTimestamp"].is_null() {
                continue;
            }
            let grace = grace_seconds(dr, &dep.value, None);
            let mut marked = dep.value.clone();
            {
                let meta = meta_mut(&mut marked);
                meta.insert(
                    "deletionTimestamp".into(),
                    Value::from(deletion_timestamp(grace)),
                );
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
            }
            if ready_to_remove(&marked) {
                self.remove(inner, dr, dk, Some(marked), Some(GC_USER_AGENT));
                continue;
            }
            self.commit_if_changed(
                inner,
                dr,
                Verb::Delete,
                dk.clone(),
                marked,
                &dep,
                Some(GC_USER_AGENT),
            );
            if dr == Resource::Pods
                && grace > 0
                && let Some(tx) = self.terminations.get()
            {
                let _ = tx.send(PodTerminating {
                    key: dk,
                    uid: meta_str(&dep.value, "uid").to_string(),
                    grace: Duration::from_secs(u64::try_from(grace).unwrap_or(0)),
                });
            }
        }
    }

    /// Removes the `foregroundDeletion` finalizer of the owner with `uid` once it has no
    /// dependents left (which removes the owner if nothing else holds it).
    fn finish_foreground(&self, inner: &mut Inner, uid: &str) {
        if inner.dependents.has_any(uid) {
            return;
        }
        let Some((r, key)) = inner.foreground.remove(uid) else {
            return;
        };
        let Some(owner) = inner.objects[r.index()].get(&key).cloned() else {
            return;
        };
        if meta_str(&owner.value, "uid") != uid {
            return;
        }
        let mut new = owner.value.clone();
        if let Some(f) = new["metadata"]["finalizers"].as_array_mut() {
            f.retain(|x| x.as_str() != Some(FOREGROUND_FINALIZER));
        }
        if new["metadata"]["finalizers"]
            .as_array()
            .is_some_and(Vec::is_empty)
            && let Some(m) = new["metadata"].as_object_mut()
        {
            m.remove("finalizers");
        }
        self.commit_if_changed(
            inner,
            r,
            Verb::Update,
            key,
            new,
            &owner,
            Some(GC_USER_AGENT),
        );
    }

    /// Removes every namespaced object of namespace `ns` (the namespace controller's work).
    fn empty_namespace(&self, inner: &mut Inner, ns: &str) {
        for r in self
            .served_resources()
            .into_iter()
            .filter(|r| r.namespaced())
        {
            let keys: Vec<Key> = inner.objects[r.index()]
                .range((ns.to_string(), String::new())..)
                .take_while(|(k, _)| k.0 == ns)
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                if inner.objects[r.index()].contains_key(&k) {
                    self.remove(inner, r, k, None, Some("namespace-controller"));
                }
            }
        }
    }
}
