//! The revision history of a StatefulSet or DaemonSet, kept as upstream's `pkg/controller/history`
//! keeps it: ControllerRevisions owned by the set, each recording a Pod template. The revision of
//! the set's template is the newest one that records it, whoever made it (so Pods that
//! kube-controller-manager labelled are recognised as current after a takeover); only when none
//! does, a new one is written, named `<set>-<hash>` and numbered after the newest.

use crate::action::Action;
use crate::key::{ObjectKey, Uid};
use crate::pod_template::{ControllerRef, NewMeta, NewObject, to_body};
use crate::reconciler::ReconcileError;
use crate::resource::Resource;
use crate::template_hash::template_hash;
use crate::views::custom::CustomObject;
use crate::views::revision::{PATCH_DIRECTIVE, Revision};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The label naming a revision's hash, on the revision and on the Pods made from it.
pub const HASH_LABEL: &str = "controller-revision-hash";

/// The set whose history is read.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// `statefulset` or `daemonset`, for errors.
    pub controller: &'static str,
    /// StatefulSets or DaemonSets.
    pub resource: Resource,
    /// namespace/name.
    pub key: &'a ObjectKey,
    /// Its UID: revisions are found by their controller reference.
    pub uid: &'a Uid,
    /// `spec.template` as the server returned it.
    pub template: &'a Value,
    /// The template's labels, which a new revision carries (as upstream's).
    pub template_labels: &'a BTreeMap<String, String>,
}

/// The revision of the set's template.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateRevision {
    /// The revision's name (`<set>-<hash>`): a StatefulSet's Pods carry it in [`HASH_LABEL`].
    pub name: String,
    /// Its hash: a DaemonSet's Pods carry it in [`HASH_LABEL`].
    pub hash: String,
    /// The ControllerRevision to write first, when no cached revision records the template.
    pub create: Option<Action>,
}

/// A revision owned by the set, with what it records.
pub struct OwnedRevision<'a> {
    /// The cached object.
    pub object: &'a CustomObject,
    /// Its number and template.
    pub revision: &'a Revision,
}

/// Sorts `revisions` oldest first: by revision number, then name.
pub fn oldest_first(revisions: &mut [OwnedRevision<'_>]) {
    revisions.sort_by(|a, b| {
        (a.revision.revision, a.object.key.name()).cmp(&(b.revision.revision, b.object.key.name()))
    });
}

/// The hash a revision names: its [`HASH_LABEL`], or what its name adds to the set's.
pub fn hash_of(set: &ObjectKey, revision: &CustomObject) -> String {
    match revision.labels.get(HASH_LABEL) {
        Some(hash) => hash.to_string(),
        None => {
            let name = revision.key.name();
            let prefix = format!("{}-", set.name());
            name.strip_prefix(&prefix).unwrap_or(name).to_string()
        }
    }
}

/// The name a new revision of `set`'s `template` gets: `<set>-<hash>`, and the hash.
pub fn new_revision_name(set: &ObjectKey, template: &Value) -> (String, String) {
    let hash = template_hash(Some(template));
    (format!("{}-{hash}", set.name()), hash)
}

/// The revision of `owner`'s template among its `revisions` (from [`owned`]): the newest that
/// records it, else a new one.
pub fn update_revision(
    revisions: &[OwnedRevision<'_>],
    owner: Owner<'_>,
) -> Result<UpdateRevision, ReconcileError> {
    if let Some(equal) = revisions
        .iter()
        .rev()
        .find(|r| r.revision.records(owner.template))
    {
        return Ok(UpdateRevision {
            name: equal.object.key.name().to_string(),
            hash: hash_of(owner.key, equal.object),
            create: None,
        });
    }
    let (name, hash) = new_revision_name(owner.key, owner.template);
    let next = revisions.last().map_or(1, |r| r.revision.revision + 1);
    let create = revision_object(owner, &name, &hash, next)?;
    Ok(UpdateRevision {
        name,
        hash,
        create: Some(create),
    })
}

/// The body of a ControllerRevision: what it records and its number.
#[derive(Serialize)]
struct RevisionBody {
    data: RevisionData,
    revision: i64,
}

#[derive(Serialize)]
struct RevisionData {
    spec: RevisionSpec,
}

#[derive(Serialize)]
struct RevisionSpec {
    template: Value,
}

fn revision_object(
    owner: Owner<'_>,
    name: &str,
    hash: &str,
    number: i64,
) -> Result<Action, ReconcileError> {
    // Recorded as upstream's `getPatch` records it: the template with `$patch: replace`, so a
    // rollback tool that applies the revision as a patch replaces the template whole.
    let mut template = match owner.template {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    template.insert(PATCH_DIRECTIVE.into(), Value::from("replace"));
    let mut labels = owner.template_labels.clone();
    labels.insert(HASH_LABEL.into(), hash.to_string());
    let body = NewObject {
        api_version: "apps/v1",
        kind: "ControllerRevision",
        metadata: NewMeta {
            name: Some(name.to_string()),
            generate_name: None,
            namespace: owner.key.namespace(),
            labels,
            annotations: None,
            finalizers: Vec::new(),
            owner_references: vec![ControllerRef::to(
                owner.resource,
                owner.key.name(),
                owner.uid,
            )],
        },
        body: RevisionBody {
            data: RevisionData {
                spec: RevisionSpec {
                    template: Value::Object(template),
                },
            },
            revision: number,
        },
    };
    Ok(Action::Create {
        resource: Resource::ControllerRevisions,
        namespace: owner.key.namespace_arc().clone(),
        body: to_body(owner.controller, owner.key, &body)?,
    })
}

fn delete(revision: &OwnedRevision<'_>) -> Action {
    Action::Delete {
        resource: Resource::ControllerRevisions,
        key: revision.object.key.clone(),
        uid: revision.object.uid.clone(),
    }
}

/// The revisions a StatefulSet no longer keeps (upstream's `truncateHistory`): of those no
/// live revision names (`live`: the current and update revisions and every Pod's), the oldest
/// beyond `limit`.
pub fn truncate_statefulset_history(
    revisions: &[OwnedRevision<'_>],
    live: impl Fn(&str) -> bool,
    limit: usize,
) -> Vec<Action> {
    let history: Vec<&OwnedRevision<'_>> = revisions
        .iter()
        .filter(|r| !live(r.object.key.name()))
        .collect();
    let surplus = history.len().saturating_sub(limit);
    history.into_iter().take(surplus).map(delete).collect()
}

/// The revisions a DaemonSet no longer keeps (upstream's `cleanupHistory`): of the revisions
/// other than the current one, as many as exceed `limit`, oldest first, skipping those whose
/// hash a live Pod carries.
pub fn clean_up_daemonset_history(
    set: &ObjectKey,
    revisions: &[OwnedRevision<'_>],
    current: &str,
    pod_hashes: impl Fn(&str) -> bool,
    limit: usize,
) -> Vec<Action> {
    let old: Vec<&OwnedRevision<'_>> = revisions
        .iter()
        .filter(|r| r.object.key.name() != current)
        .collect();
    let surplus = old.len().saturating_sub(limit);
    old.into_iter()
        .filter(|r| !pod_hashes(&hash_of(set, r.object)))
        .take(surplus)
        .map(delete)
        .collect()
}
