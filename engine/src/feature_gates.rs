//! `--feature-gates`: `StaleControllerConsistency` and one gate per controller under it, read as
//! kube-controller-manager reads the flag (Go booleans, `AllAlpha` and `AllBeta`).
//!
//! Stage assumption: every `StaleControllerConsistency*` gate is taken to be beta (on by default)
//! in Kubernetes v1.36, as KEP-5647 is described to this project; the KEP text was not at hand to
//! check. So `AllBeta=false` turns them all off unless an entry names them, and `AllAlpha`
//! changes nothing here (there is no alpha gate) but is accepted as upstream accepts it.

use crate::go_bool::parse_go_bool;
use std::collections::BTreeMap;

/// The global gate's name.
pub const STALE_CONTROLLER_CONSISTENCY: &str = "StaleControllerConsistency";

/// Upstream's pseudo-gate that sets every alpha gate not named explicitly.
pub const ALL_ALPHA: &str = "AllAlpha";

/// Upstream's pseudo-gate that sets every beta gate not named explicitly.
pub const ALL_BETA: &str = "AllBeta";

/// A malformed `--feature-gates` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// An entry is not `Name=<Go boolean>`.
    #[error(
        "feature gate entry {0:?} is not Name=true|false (or another Go boolean: 1, t, T, TRUE, True, 0, f, F, FALSE, False)"
    )]
    Malformed(String),
    /// A gate Tidemark does not implement. Upstream refuses unknown gates too; gates of other
    /// Kubernetes components are refused because this build carries no list of them.
    #[error("unknown feature gate {name:?}; Tidemark knows: {known}")]
    Unknown {
        /// The name as given.
        name: String,
        /// The gates this build knows, comma-separated.
        known: String,
    },
}

/// Parsed feature gates. Gates default to on: protection is what Tidemark is for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureGates {
    settings: BTreeMap<String, bool>,
    all_beta: Option<bool>,
    all_alpha: Option<bool>,
}

impl FeatureGates {
    /// Parses `A=true,B=false` (any Go boolean spelling). `known_controllers` are the
    /// per-controller suffixes (`ReplicaSet`, ...). Explicit gates win over `AllAlpha`/`AllBeta`
    /// whatever their order; a gate given twice keeps its last value, as upstream.
    pub fn parse(text: &str, known_controllers: &[&str]) -> Result<Self, FeatureGateError> {
        let mut gates = Self::default();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, value) = entry
                .split_once('=')
                .ok_or_else(|| FeatureGateError::Malformed(entry.to_string()))?;
            let value = parse_go_bool(value.trim())
                .map_err(|_| FeatureGateError::Malformed(entry.to_string()))?;
            match name.trim() {
                ALL_ALPHA => gates.all_alpha = Some(value),
                ALL_BETA => gates.all_beta = Some(value),
                name if is_known(name, known_controllers) => {
                    gates.settings.insert(name.to_string(), value);
                }
                name => {
                    return Err(FeatureGateError::Unknown {
                        name: name.to_string(),
                        known: known_names(known_controllers).join(", "),
                    });
                }
            }
        }
        Ok(gates)
    }

    /// Whether stale-cache protection is on for the controller with gate suffix `controller`:
    /// both the global gate and the controller's own must be on, each defaulting to `AllBeta`
    /// (itself on when not given).
    pub fn consistency_for(&self, controller: &str) -> bool {
        let beta_default = self.all_beta.unwrap_or(true);
        let global = self
            .settings
            .get(STALE_CONTROLLER_CONSISTENCY)
            .copied()
            .unwrap_or(beta_default);
        let own = self
            .settings
            .get(&format!("{STALE_CONTROLLER_CONSISTENCY}{controller}"))
            .copied()
            .unwrap_or(beta_default);
        global && own
    }

    /// The `AllAlpha` value given, if any (recorded; no Tidemark gate is alpha).
    pub fn all_alpha(&self) -> Option<bool> {
        self.all_alpha
    }
}

fn is_known(name: &str, known_controllers: &[&str]) -> bool {
    name == STALE_CONTROLLER_CONSISTENCY
        || name
            .strip_prefix(STALE_CONTROLLER_CONSISTENCY)
            .is_some_and(|suffix| known_controllers.contains(&suffix))
}

fn known_names(known_controllers: &[&str]) -> Vec<String> {
    [ALL_ALPHA, ALL_BETA, STALE_CONTROLLER_CONSISTENCY]
        .iter()
        .map(|s| s.to_string())
        .chain(
            known_controllers
                .iter()
                .map(|c| format!("{STALE_CONTROLLER_CONSISTENCY}{c}")),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RS: &[&str] = &["ReplicaSet", "Job"];

    fn gates(text: &str) -> FeatureGates {
        FeatureGates::parse(text, RS).expect("valid gates")
    }

    #[test]
    fn gates_default_on_and_the_global_gate_turns_all_off() {
        assert!(gates("").consistency_for("ReplicaSet"));
        assert!(!gates("StaleControllerConsistency=false").consistency_for("ReplicaSet"));
        let one = gates("StaleControllerConsistencyReplicaSet=false");
        assert!(!one.consistency_for("ReplicaSet"));
        assert!(one.consistency_for("Job"));
    }

    #[test]
    fn values_are_read_as_go_booleans() {
        assert!(!gates("StaleControllerConsistency=F").consistency_for("Job"));
        assert!(!gates("StaleControllerConsistency=0").consistency_for("Job"));
        assert!(!gates("StaleControllerConsistency=FALSE").consistency_for("Job"));
        assert!(gates("StaleControllerConsistency=T").consistency_for("Job"));
        assert!(gates("StaleControllerConsistency=1").consistency_for("Job"));
        assert!(gates(" StaleControllerConsistency = True ").consistency_for("Job"));
    }

    #[test]
    fn all_beta_false_turns_every_gate_off_unless_named() {
        let off = gates("AllBeta=false");
        assert!(!off.consistency_for("ReplicaSet"));
        assert!(!off.consistency_for("Job"));
        let named = gates(
            "AllBeta=false,StaleControllerConsistency=true,StaleControllerConsistencyJob=true",
        );
        assert!(named.consistency_for("Job"));
        assert!(!named.consistency_for("ReplicaSet"));
    }

    #[test]
    fn explicit_gates_win_over_all_beta_in_either_order() {
        for text in [
            "AllBeta=true,StaleControllerConsistency=false",
            "StaleControllerConsistency=false,AllBeta=true",
        ] {
            assert!(!gates(text).consistency_for("ReplicaSet"), "{text}");
        }
        for text in [
            "AllBeta=false,StaleControllerConsistency=t,StaleControllerConsistencyReplicaSet=t",
            "StaleControllerConsistency=t,StaleControllerConsistencyReplicaSet=t,AllBeta=false",
        ] {
            assert!(gates(text).consistency_for("ReplicaSet"), "{text}");
        }
    }

    #[test]
    fn all_alpha_is_accepted_and_changes_no_beta_gate() {
        let g = gates("AllAlpha=false");
        assert_eq!(g.all_alpha(), Some(false));
        assert!(g.consistency_for("ReplicaSet"));
        assert!(gates("AllAlpha=true").consistency_for("Job"));
    }

    #[test]
    fn malformed_entries_are_errors_that_show_the_expected_form() {
        for text in [
            "StaleControllerConsistency",
            "StaleControllerConsistency=yes",
            "AllBeta=maybe",
        ] {
            let err = FeatureGates::parse(text, RS).expect_err(text);
            assert!(matches!(err, FeatureGateError::Malformed(_)), "{text}");
            assert!(err.to_string().contains("Name=true|false"), "{err}");
        }
    }

    #[test]
    fn an_unknown_gate_is_an_error_naming_the_known_gates() {
        let err = FeatureGates::parse("SidecarContainers=true", RS).expect_err("unknown");
        assert!(matches!(err, FeatureGateError::Unknown { .. }));
        let message = err.to_string();
        for name in [
            "\"SidecarContainers\"",
            "AllAlpha",
            "AllBeta",
            "StaleControllerConsistencyReplicaSet",
            "StaleControllerConsistencyJob",
        ] {
            assert!(message.contains(name), "{name} in {message}");
        }
    }
}
