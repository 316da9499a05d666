//! Which template a Pod was made from, as the oracle tells templates apart without the
//! controllers' revision hashes: the rollout annotation the scenarios count up, and the
//! containers' images.

use crate::scenario::ROLLOUT_ANNOTATION;
use serde_json::Value;

/// Which template a Pod (or a set's template, given its `template`) was made from, as the oracle
/// tells them apart: the rollout annotation and the containers' images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateMark {
    /// The rollout annotation.
    rollout: Option<String>,
    /// The containers' images, in order.
    images: Vec<String>,
}

/// The mark of a Pod or of a Pod template (both have `metadata` and `spec`).
pub fn mark_of(object: &Value) -> TemplateMark {
    TemplateMark {
        rollout: object["metadata"]["annotations"][ROLLOUT_ANNOTATION]
            .as_str()
            .map(str::to_string),
        images: object["spec"]["containers"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| c["image"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default(),
    }
}
