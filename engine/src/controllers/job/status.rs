//! The Job's status write: counters, indexes, and its conditions, set as upstream's
//! `ensureJobConditionStatus` sets them (a condition of a type is replaced only when its
//! status, reason or message changes, and one that would be added as `False` is not added).

use super::tracking::Tally;
use crate::index_set::IndexSet;
use crate::pod_template::owner_object;
use crate::reconciler::ReconcileError;
use crate::views::job::JobView;
use serde_json::{Map, Value, json};

/// One condition as upstream writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Condition {
    pub kind: &'static str,
    pub on: bool,
    pub reason: String,
    pub message: String,
}

impl Condition {
    pub(super) fn new(kind: &'static str, on: bool, reason: &str, message: &str) -> Self {
        Condition {
            kind,
            on,
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }

    fn status(&self) -> &'static str {
        if self.on { "True" } else { "False" }
    }

    fn body(&self, now: i64) -> Value {
        let at = crate::time::format_rfc3339(now);
        json!({"type": self.kind, "status": self.status(), "reason": self.reason,
            "message": self.message, "lastProbeTime": at, "lastTransitionTime": at})
    }

    /// Setting it changes the conditions `list` (upstream's `ensureJobConditionStatus`).
    pub(super) fn changes(&self, list: Option<&Value>) -> bool {
        let same =
            |c: &Value, field: &str, want: &str| c.get(field).and_then(Value::as_str) == Some(want);
        let existing = list
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| same(c, "type", self.kind)));
        match existing {
            Some(c) => {
                !(same(c, "status", self.status())
                    && same(c, "reason", &self.reason)
                    && same(c, "message", &self.message))
            }
            None => self.on,
        }
    }
}

/// The cached status.conditions.
pub(super) fn conditions(job: &JobView) -> Option<&Value> {
    job.conditions.as_deref()
}

/// What a status write changes.
pub(super) struct StatusUpdate<'t, 'p> {
    pub active: i32,
    /// Active Pods with the `Ready` condition (upstream's `countReadyPods`).
    pub ready: i32,
    pub terminating: i32,
    pub tally: &'t Tally<'p>,
    pub start_time: Option<i64>,
    /// status.failedIndexes, for Jobs with `backoffLimitPerIndex`.
    pub failed_indexes: Option<&'t IndexSet>,
    /// Only conditions that change the cached list (see [`Condition::changes`]).
    pub conditions: Vec<Condition>,
    pub now: i64,
}

/// The Job as observed with its status updated (other status fields kept).
pub(super) fn with_status(
    job: &JobView,
    update: StatusUpdate<'_, '_>,
) -> Result<Value, ReconcileError> {
    let unbuildable = |message: &str| ReconcileError::Unbuildable {
        controller: "job",
        key: job.key.clone(),
        message: message.to_string(),
    };
    let mut body = owner_object("job", &job.key, &job.raw)?;
    let Value::Object(object) = &mut body else {
        return Err(unbuildable("the cached Job is not a JSON object"));
    };
    let mut status = match object.remove("status") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let tally = update.tally;
    status.insert("active".into(), json!(update.active));
    status.insert("ready".into(), json!(update.ready));
    status.insert("terminating".into(), json!(update.terminating));
    status.insert("succeeded".into(), json!(tally.succeeded));
    status.insert("failed".into(), json!(tally.failed));
    status.insert(
        "uncountedTerminatedPods".into(),
        json!({"succeeded": tally.uncounted_succeeded, "failed": tally.uncounted_failed}),
    );
    match update.start_time {
        Some(start) => status.insert(
            "startTime".into(),
            json!(crate::time::format_rfc3339(start)),
        ),
        None => status.remove("startTime"),
    };
    if job.indexed {
        status.insert(
            "completedIndexes".into(),
            json!(tally.completed_indexes.to_string()),
        );
    }
    if let Some(failed) = update.failed_indexes {
        status.insert("failedIndexes".into(), json!(failed.to_string()));
    }
    if !update.conditions.is_empty() {
        let list = status
            .entry("conditions")
            .or_insert_with(|| Value::Array(Vec::new()));
        if list.is_null() {
            *list = Value::Array(Vec::new());
        }
        let Value::Array(list) = list else {
            return Err(unbuildable("status.conditions is not an array"));
        };
        for c in &update.conditions {
            let body = c.body(update.now);
            match list
                .iter_mut()
                .find(|old| old.get("type").and_then(Value::as_str) == Some(c.kind))
            {
                Some(old) => *old = body,
                None => list.push(body),
            }
        }
        if update
            .conditions
            .iter()
            .any(|c| c.kind == "Complete" && c.on)
        {
            status.insert(
                "completionTime".into(),
                json!(crate::time::format_rfc3339(update.now)),
            );
        }
    }
    object.insert("status".into(), Value::Object(status));
    Ok(body)
}
