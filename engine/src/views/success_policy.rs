//! An Indexed Job's `successPolicy`, matched as upstream's `matchSuccessPolicy` does: the rules
//! in order, the first whose succeeded indexes (or count of them) are reached declares the Job
//! successful before all its indexes are.

use crate::index_set::IndexSet;
use crate::views::checked::{Checker, Field};

/// One rule: `succeededIndexes`, `succeededCount`, or both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuccessRule {
    /// `succeededIndexes`, cut to `spec.completions` as upstream reads it.
    pub indexes: Option<IndexSet>,
    /// `succeededCount`.
    pub count: Option<u64>,
}

/// `spec.successPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SuccessPolicy {
    /// `rules`, in order.
    pub rules: Vec<SuccessRule>,
}

impl SuccessPolicy {
    /// Reads `spec.successPolicy` at `f` (absent: `None`) for a Job of `completions`.
    pub fn read(f: &Field<'_>, c: &mut Checker, completions: Option<i32>) -> Option<Self> {
        if !f.is_present() {
            return None;
        }
        let limit = completions.and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
        let mut rules = Vec::new();
        for rule in f.get(c, "rules").items(c) {
            c.object(&rule);
            let indexes_field = rule.get(c, "succeededIndexes");
            let indexes = c
                .string(&indexes_field)
                .and_then(|text| match IndexSet::parse(text) {
                    Some(set) => Some(set.below(limit)),
                    None => {
                        c.record(
                            indexes_field.path(),
                            "not ascending indexes like 0,2-5".into(),
                        );
                        None
                    }
                });
            let count = rule
                .get(c, "succeededCount")
                .int32(c, 0)
                .and_then(|n| u64::try_from(n).ok());
            rules.push(SuccessRule { indexes, count });
        }
        Some(Self { rules })
    }

    /// The message of the first rule `succeeded` meets (upstream's "Matched rules at index N").
    pub fn matched(&self, succeeded: &IndexSet) -> Option<String> {
        if succeeded.count() == 0 {
            return None;
        }
        let index = self.rules.iter().position(|rule| match &rule.indexes {
            // A rule whose indexes all lie past `completions` can never be met: skipped.
            Some(wanted) if wanted.count() == 0 => false,
            Some(wanted) => {
                let shared = succeeded.overlap(wanted);
                shared == wanted.count() || rule.count.is_some_and(|n| shared >= n)
            }
            None => rule.count.is_some_and(|n| succeeded.count() >= n),
        })?;
        Some(format!("Matched rules at index {index}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(rules: serde_json::Value, completions: i32) -> SuccessPolicy {
        let value = json!({ "rules": rules });
        let mut c = Checker::default();
        let p =
            SuccessPolicy::read(&Field::root(&value), &mut c, Some(completions)).expect("a policy");
        assert!(c.finish().is_none());
        p
    }

    fn set(text: &str) -> IndexSet {
        IndexSet::parse(text).expect("indexes")
    }

    #[test]
    fn a_rule_of_indexes_is_met_by_all_of_them_or_by_its_count_of_them() {
        let p = policy(
            json!([{"succeededIndexes": "0-3"}, {"succeededIndexes": "4-9", "succeededCount": 2}]),
            10,
        );
        assert_eq!(p.matched(&set("0-2")), None);
        assert_eq!(
            p.matched(&set("0-3")),
            Some("Matched rules at index 0".into())
        );
        assert_eq!(
            p.matched(&set("1,5,7")),
            Some("Matched rules at index 1".into())
        );
    }

    #[test]
    fn a_count_alone_counts_any_indexes_and_indexes_past_completions_never_match() {
        let p = policy(
            json!([{"succeededIndexes": "8-9"}, {"succeededCount": 3}]),
            5,
        );
        assert_eq!(p.matched(&set("0,2")), None);
        assert_eq!(
            p.matched(&set("0,2,4")),
            Some("Matched rules at index 1".into())
        );
        assert_eq!(p.matched(&IndexSet::default()), None);
    }
}
