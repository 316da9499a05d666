//! A Job's `podFailurePolicy`, read and matched as upstream's `matchPodFailurePolicy` does: the
//! rules in order, the first that matches a failed Pod decides whether its failure counts towards
//! `backoffLimit`, is ignored, fails its index (with `backoffLimitPerIndex`), or fails the Job.

use crate::views::checked::{Checker, Field};
use crate::views::pod::PodFailure;

/// What a matching rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyAction {
    /// The Job fails (reason `PodFailurePolicy`).
    FailJob,
    /// The Pod's index fails at once, whatever its `backoffLimitPerIndex` (the failure counts).
    FailIndex,
    /// The failure is not counted towards `backoffLimit`; a replacement is created.
    Ignore,
    /// Counted, as without a policy.
    Count,
}

/// What a rule matches on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `onExitCodes`: a container (of `container`, or any) that terminated with a non-zero code
    /// that is (`In`) or is not (`NotIn`) among `values`.
    ExitCodes {
        /// `containerName`.
        container: Option<String>,
        /// `operator: In` (else `NotIn`).
        within: bool,
        /// `values`.
        values: Vec<i32>,
    },
    /// `onPodConditions`: the Pod has a condition of one of these `(type, status)`.
    Conditions(Vec<(String, String)>),
}

/// One rule. A rule with an action this controller does not know (a future one) is skipped, as
/// upstream skips unknown actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Its action; `None` when unknown.
    pub action: Option<PolicyAction>,
    /// What it matches.
    pub requirement: Requirement,
}

/// `spec.podFailurePolicy`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodFailurePolicy {
    /// `rules`, in order.
    pub rules: Vec<Rule>,
}

/// What the policy decided for one failed Pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Count it (no rule matched, or a `Count` rule did).
    Count,
    /// Do not count it.
    Ignore,
    /// Fail the Job with this message (the Pod's failure counts).
    FailJob(String),
    /// Fail the Pod's index (the failure counts).
    FailIndex,
}

impl PodFailurePolicy {
    /// Reads `spec.podFailurePolicy` at `f` (absent: `None`).
    pub fn read(f: &Field<'_>, c: &mut Checker) -> Option<Self> {
        if !f.is_present() {
            return None;
        }
        let mut rules = Vec::new();
        for rule in f.get(c, "rules").items(c) {
            c.object(&rule);
            let action = match rule.get(c, "action").string(c) {
                Some("FailJob") => Some(PolicyAction::FailJob),
                Some("FailIndex") => Some(PolicyAction::FailIndex),
                Some("Ignore") => Some(PolicyAction::Ignore),
                Some("Count") => Some(PolicyAction::Count),
                _ => None,
            };
            let codes = rule.get(c, "onExitCodes");
            let requirement = if codes.is_present() {
                let within = codes.get(c, "operator").one_of(c, &["In", "NotIn"]) != Some("NotIn");
                let values = codes
                    .get(c, "values")
                    .items(c)
                    .iter()
                    .filter_map(|v| v.int32(c, i32::MIN))
                    .collect();
                Requirement::ExitCodes {
                    container: codes.get(c, "containerName").string(c).map(str::to_string),
                    within,
                    values,
                }
            } else {
                let patterns = rule
                    .get(c, "onPodConditions")
                    .items(c)
                    .iter()
                    .filter_map(|p| {
                        let kind = p.get(c, "type").string(c)?.to_string();
                        let status = p.get(c, "status").string(c).unwrap_or("True").to_string();
                        Some((kind, status))
                    })
                    .collect();
                Requirement::Conditions(patterns)
            };
            rules.push(Rule {
                action,
                requirement,
            });
        }
        Some(Self { rules })
    }

    /// The verdict on the failed Pod `namespace/name` that failed as `failure` says.
    pub fn judge(&self, namespace: &str, name: &str, failure: &PodFailure) -> Verdict {
        for (index, rule) in self.rules.iter().enumerate() {
            let Some(action) = rule.action else { continue };
            let matched = match &rule.requirement {
                Requirement::ExitCodes {
                    container,
                    within,
                    values,
                } => failure
                    .exit_codes
                    .iter()
                    .find(|(c, code)| {
                        container.as_deref().is_none_or(|want| want == c)
                            && values.contains(code) == *within
                    })
                    .map(|(c, code)| {
                        format!(
                            "Container {c} for pod {namespace}/{name} failed with exit code {code} matching FailJob rule at index {index}"
                        )
                    }),
                Requirement::Conditions(patterns) => failure
                    .conditions
                    .iter()
                    .find(|(kind, status)| {
                        patterns.iter().any(|(k, s)| k == kind && s == status)
                    })
                    .map(|(kind, _)| {
                        format!(
                            "Pod {namespace}/{name} has condition {kind} matching FailJob rule at index {index}"
                        )
                    }),
            };
            if let Some(message) = matched {
                return match action {
                    PolicyAction::FailJob => Verdict::FailJob(message),
                    PolicyAction::FailIndex => Verdict::FailIndex,
                    PolicyAction::Ignore => Verdict::Ignore,
                    PolicyAction::Count => Verdict::Count,
                };
            }
        }
        Verdict::Count
    }
}

impl Verdict {
    /// The failure counts towards the Job's limits (every verdict but `Ignore`, as upstream's
    /// `countFailed`).
    pub fn counts(&self) -> bool {
        *self != Verdict::Ignore
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(rules: serde_json::Value) -> PodFailurePolicy {
        let value = json!({ "rules": rules });
        let mut c = Checker::default();
        let p = PodFailurePolicy::read(&Field::root(&value), &mut c).expect("a policy");
        assert!(c.finish().is_none());
        p
    }

    fn failed(codes: &[(&str, i32)], conditions: &[(&str, &str)]) -> PodFailure {
        PodFailure {
            exit_codes: codes.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            conditions: conditions
                .iter()
                .map(|(k, s)| (k.to_string(), s.to_string()))
                .collect(),
            finished_at: None,
        }
    }

    #[test]
    fn the_first_matching_rule_decides_and_an_unmatched_failure_counts() {
        let p = policy(json!([
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42, 137]}},
        ]));
        assert_eq!(
            p.judge("ns", "p", &failed(&[("main", 137)], &[])),
            Verdict::Ignore
        );
        assert_eq!(
            p.judge("ns", "p", &failed(&[("main", 42)], &[])),
            Verdict::FailJob(
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
                    .into()
            )
        );
        assert_eq!(
            p.judge("ns", "p", &failed(&[("side", 42)], &[])),
            Verdict::Count
        );
        assert_eq!(
            p.judge("ns", "p", &failed(&[("main", 1)], &[])),
            Verdict::Count
        );
    }

    #[test]
    fn not_in_and_pod_conditions_match_and_unknown_actions_are_skipped() {
        let p = policy(json!([
            {"action": "Restart", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [3]}},
        ]));
        assert_eq!(
            p.judge(
                "ns",
                "p",
                &failed(&[("c", 3)], &[("DisruptionTarget", "True")])
            ),
            Verdict::Ignore,
            "the unknown rule is skipped"
        );
        assert_eq!(
            p.judge("ns", "p", &failed(&[("c", 3)], &[])),
            Verdict::Count
        );
        assert!(matches!(
            p.judge("ns", "p", &failed(&[("c", 9)], &[])),
            Verdict::FailJob(_)
        ));
    }

    #[test]
    fn a_fail_index_rule_fails_the_index_and_counts() {
        let p = policy(json!([
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}},
        ]));
        let verdict = p.judge("ns", "p", &failed(&[("c", 3)], &[]));
        assert_eq!(verdict, Verdict::FailIndex);
        assert!(verdict.counts());
    }
}
