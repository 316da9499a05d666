//! kube-controller-manager's controller names, so `--controllers` copied from an upstream
//! command line is understood: the canonical names and the older short aliases of every
//! upstream controller, and which of them Tidemark runs.
//!
//! Source: upstream `cmd/kube-controller-manager/names/controller_names.go` (checked against a
//! v1.29-era copy), plus names added since (`podcertificaterequest-cleaner-controller`,
//! `kube-apiserver-serving-clustertrustbundle-publisher-controller`,
//! `selinux-warning-controller`, `device-taint-eviction-controller`) and the cloud controllers;
//! the aliases are those of upstream's `ControllerDescriptor` aliases, written from memory of
//! `cmd/kube-controller-manager/app` and not checked against v1.36.

/// What a `--controllers` name refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControllerName {
    /// A controller Tidemark runs, by its Tidemark (`ONBOARDED`) name.
    Runs(&'static str),
    /// An upstream controller Tidemark does not run.
    NotRun,
}

/// Tidemark's controllers: its short name (the upstream alias too) and the upstream name.
pub const TIDEMARK_CONTROLLERS: &[(&str, &str)] = &[
    ("replicaset", "replicaset-controller"),
    ("statefulset", "statefulset-controller"),
    ("daemonset", "daemonset-controller"),
    ("job", "job-controller"),
    ("nodelifecycle", "node-lifecycle-controller"),
];

/// Upstream controllers Tidemark does not run: the canonical name, then its aliases.
pub const NOT_RUN: &[(&str, &[&str])] = &[
    ("serviceaccount-token-controller", &["serviceaccount-token"]),
    ("endpoints-controller", &["endpoint"]),
    ("endpointslice-controller", &["endpointslice"]),
    (
        "endpointslice-mirroring-controller",
        &["endpointslicemirroring"],
    ),
    (
        "replicationcontroller-controller",
        &["replicationcontroller"],
    ),
    ("pod-garbage-collector-controller", &["podgc"]),
    ("resourcequota-controller", &["resourcequota"]),
    ("namespace-controller", &["namespace"]),
    ("serviceaccount-controller", &["serviceaccount"]),
    ("garbage-collector-controller", &["garbagecollector"]),
    ("deployment-controller", &["deployment"]),
    (
        "horizontal-pod-autoscaler-controller",
        &["horizontalpodautoscaling"],
    ),
    ("disruption-controller", &["disruption"]),
    ("cronjob-controller", &["cronjob"]),
    (
        "certificatesigningrequest-signing-controller",
        &["csrsigning"],
    ),
    (
        "certificatesigningrequest-approving-controller",
        &["csrapproving"],
    ),
    (
        "certificatesigningrequest-cleaner-controller",
        &["csrcleaner"],
    ),
    ("podcertificaterequest-cleaner-controller", &[]),
    ("ttl-controller", &["ttl"]),
    ("bootstrap-signer-controller", &["bootstrapsigner"]),
    ("token-cleaner-controller", &["tokencleaner"]),
    ("node-ipam-controller", &["nodeipam"]),
    ("taint-eviction-controller", &[]),
    (
        "persistentvolume-binder-controller",
        &["persistentvolume-binder"],
    ),
    (
        "persistentvolume-attach-detach-controller",
        &["attachdetach"],
    ),
    (
        "persistentvolume-expander-controller",
        &["persistentvolume-expander"],
    ),
    (
        "clusterrole-aggregation-controller",
        &["clusterrole-aggregation"],
    ),
    (
        "persistentvolumeclaim-protection-controller",
        &["pvc-protection"],
    ),
    ("persistentvolume-protection-controller", &["pv-protection"]),
    ("ttl-after-finished-controller", &["ttl-after-finished"]),
    (
        "root-ca-certificate-publisher-controller",
        &["root-ca-cert-publisher"],
    ),
    (
        "kube-apiserver-serving-clustertrustbundle-publisher-controller",
        &[],
    ),
    ("ephemeral-volume-controller", &["ephemeral-volume"]),
    (
        "storageversion-garbage-collector-controller",
        &["storage-version-gc"],
    ),
    ("resourceclaim-controller", &["resource-claim-controller"]),
    (
        "legacy-serviceaccount-token-cleaner-controller",
        &["legacy-service-account-token-cleaner"],
    ),
    ("validatingadmissionpolicy-status-controller", &[]),
    ("service-cidr-controller", &[]),
    ("storage-version-migrator-controller", &[]),
    ("selinux-warning-controller", &[]),
    ("device-taint-eviction-controller", &[]),
    ("cloud-node-lifecycle-controller", &["cloud-node-lifecycle"]),
    ("node-route-controller", &["route"]),
    ("service-lb-controller", &["service"]),
];

/// Looks a `--controllers` name up (without its `-`); `None` when neither Tidemark nor
/// kube-controller-manager has it.
pub fn lookup(name: &str) -> Option<ControllerName> {
    if let Some((short, _)) = TIDEMARK_CONTROLLERS
        .iter()
        .find(|(short, upstream)| *short == name || *upstream == name)
    {
        return Some(ControllerName::Runs(short));
    }
    NOT_RUN
        .iter()
        .any(|(canonical, aliases)| *canonical == name || aliases.contains(&name))
        .then_some(ControllerName::NotRun)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::ONBOARDED;

    #[test]
    fn tidemark_controllers_are_exactly_the_onboarded_ones_in_order() {
        let shorts: Vec<&str> = TIDEMARK_CONTROLLERS.iter().map(|(s, _)| *s).collect();
        assert_eq!(shorts, ONBOARDED);
    }

    #[test]
    fn upstream_and_short_names_find_the_same_controller() {
        assert_eq!(
            lookup("node-lifecycle-controller"),
            Some(ControllerName::Runs("nodelifecycle"))
        );
        assert_eq!(
            lookup("nodelifecycle"),
            Some(ControllerName::Runs("nodelifecycle"))
        );
        assert_eq!(lookup("bootstrapsigner"), Some(ControllerName::NotRun));
        assert_eq!(
            lookup("deployment-controller"),
            Some(ControllerName::NotRun)
        );
        assert_eq!(lookup("frobnicator"), None);
    }

    #[test]
    fn no_name_is_both_run_and_not_run() {
        for (short, upstream) in TIDEMARK_CONTROLLERS {
            for (canonical, aliases) in NOT_RUN {
                assert!(canonical != short && canonical != upstream);
                assert!(!aliases.contains(short) && !aliases.contains(upstream));
            }
        }
    }
}
