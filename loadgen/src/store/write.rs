//! Writes: create, update (main and status), read-modify-write, and the commit every write
//! and deletion ends in (one revision, the commit observers, the dependents index, the event log).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::admission::validation;
use crate::apiserver::status::ApiError;
use crate::clock::now_rfc3339;
use crate::meta::{meta_mut, meta_str, random_suffix, random_uid};
use crate::resource::Resource;
use crate::store::body::{
    carry_metadata, check_body, put_status, set_rv, set_type_meta, status_on_create, take_status,
};
use crate::store::commit::{Commit, Verb};
use crate::store::{
    Event, EventType, Inner, Key, PodStarted, Store, Stored, Subresource, WriteOptions, customs,
    defaults,
};

impl Store {
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
        let commit = Commit {
            revision: rev,
            verb,
            resource: r,
            prev: prev.as_ref().map(|p| &p.value),
            new: new_value,
            user_agent,
            request: crate::store::commit::current(),
        };
        for observer in &mut inner.observers {
            observer.committed(&commit);
        }
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
}
