//! `--feature-gates`: `StaleControllerConsistency` and one gate per controller under it.

use std::collections::BTreeMap;

/// The global gate's name.
pub const STALE_CONTROLLER_CONSISTENCY: &str = "StaleControllerConsistency";

/// A malformed `--feature-gates` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// An entry is not `Name=true|false`.
    #[error("feature gate entry {0:?} is not Name=true|false")]
    Malformed(String),
    /// A gate nobody knows.
    #[error("unknown feature gate {0:?}")]
    Unknown(String),
}

/// Parsed feature gates. Gates default to on: protection is what Tidemark is for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureGates {
    settings: BTreeMap<String, bool>,
}

impl FeatureGates {
    /// Parses `A=true,B=false`. `known_controllers` are the per-controller suffixes
    /// (`ReplicaSet`, ...).
    pub fn parse(text: &str, known_controllers: &[&str]) -> Result<Self, FeatureGateError> {
        let mut settings = BTreeMap::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, value) = entry
                .split_once('=')
                .ok_or_else(|| FeatureGateError::Malformed(entry.to_string()))?;
            let value = match value.trim() {
                "true" => true,
                "false" => false,
                _ => return Err(FeatureGateError::Malformed(entry.to_string())),
            };
            let name = name.trim();
            let known = name == STALE_CONTROLLER_CONSISTENCY
                || name
                    .strip_prefix(STALE_CONTROLLER_CONSISTENCY)
                    .is_some_and(|suffix| known_controllers.contains(&suffix));
            if !known {
                return Err(FeatureGateError::Unknown(name.to_string()));
            }
            settings.insert(name.to_string(), value);
        }
        Ok(Self { settings })
    }

    /// Whether stale-cache protection is on for the controller with gate suffix `controller`.
    pub fn consistency_for(&self, controller: &str) -> bool {
        let global = self
            .settings
            .get(STALE_CONTROLLER_CONSISTENCY)
            .copied()
            .unwrap_or(true);
        let own = self
            .settings
            .get(&format!("{STALE_CONTROLLER_CONSISTENCY}{controller}"))
            .copied()
            .unwrap_or(true);
        global && own
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_default_on_and_the_global_gate_turns_all_off() {
        let none = FeatureGates::parse("", &["ReplicaSet"]).expect("empty is valid");
        assert!(none.consistency_for("ReplicaSet"));
        let off = FeatureGates::parse("StaleControllerConsistency=false", &["ReplicaSet"])
            .expect("valid");
        assert!(!off.consistency_for("ReplicaSet"));
        let one = FeatureGates::parse(
            "StaleControllerConsistencyReplicaSet=false",
            &["ReplicaSet"],
        )
        .expect("valid");
        assert!(!one.consistency_for("ReplicaSet"));
        assert!(one.consistency_for("Job"));
    }

    #[test]
    fn malformed_and_unknown_gates_are_errors() {
        assert!(matches!(
            FeatureGates::parse("StaleControllerConsistency", &[]),
            Err(FeatureGateError::Malformed(_))
        ));
        assert!(matches!(
            FeatureGates::parse("StaleControllerConsistency=yes", &[]),
            Err(FeatureGateError::Malformed(_))
        ));
        assert!(matches!(
            FeatureGates::parse("Nope=true", &[]),
            Err(FeatureGateError::Unknown(_))
        ));
    }
}
