//! `tidemark run`'s flags as operators and the project's own tests pass them.

use super::{LogFormat, RunArgs};
use clap::Parser;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

fn parse(flags: &[&str]) -> RunArgs {
    match RunArgs::try_parse_from(["run"].iter().chain(flags).copied()) {
        Ok(args) => args,
        Err(e) => panic!("{flags:?} do not parse: {e}"),
    }
}

fn refusal(flags: &[&str]) -> String {
    match RunArgs::try_parse_from(["run"].iter().chain(flags).copied()) {
        Ok(args) => panic!("{flags:?} parse to {args:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn with_no_flag_the_defaults_are_tidemarks_and_upstreams() {
    let args = parse(&[]);
    assert_eq!(args.controllers, ["*"]);
    assert_eq!(args.leader_elect, None);
    assert!(args.leader_elect_on());
    assert_eq!(args.leader_elect_resource_name, "tidemark");
    assert_eq!(args.leader_elect_resource_namespace, "kube-system");
    assert_eq!(args.leader_elect_resource_lock, "leases");
    assert_eq!(args.leader_elect_lease_duration, Duration::from_secs(15));
    assert_eq!(args.leader_elect_renew_deadline, Duration::from_secs(10));
    assert_eq!(args.leader_elect_retry_period, Duration::from_secs(2));
    assert!(args.leader_elect_fencing);
    assert_eq!(args.node_monitor_grace_period, Duration::from_secs(40));
    assert_eq!(args.shutdown_grace_period, Duration::from_secs(10));
    assert_eq!(args.duration, None);
    assert_eq!(args.metrics_addr, None);
    assert_eq!(args.logging_format, LogFormat::Text);
    assert_eq!(args.v, 0);
    assert_eq!(args.bind_address, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    assert_eq!(args.secure_port, 10257);
    assert_eq!(
        args.authorization_always_allow_paths,
        ["/healthz", "/readyz", "/livez"]
    );
    assert_eq!(
        args.kube_api_content_type,
        "application/vnd.kubernetes.protobuf"
    );
    assert_eq!(args.kube_api_qps, 20.0);
    assert_eq!(args.kube_api_burst, 30);
    assert_eq!(
        (
            args.concurrent_replicaset_syncs,
            args.concurrent_statefulset_syncs,
            args.concurrent_daemonset_syncs,
            args.concurrent_job_syncs
        ),
        (5, 5, 2, 5)
    );
    assert!(args.not_run.profiling);
    assert!(!args.not_run.contention_profiling);
    assert!(args.warnings().is_empty());
}

#[test]
fn the_flags_ci_and_the_tests_pass_keep_working() {
    let args = parse(&[
        "--embedded",
        "--duration",
        "30",
        "--metrics-addr",
        "127.0.0.1:0",
        "--summary-json",
        "/tmp/s.json",
        "--shards",
        "2",
        "--leader-elect",
        "false",
        "--leader-elect-fencing",
        "false",
        "--log-format",
        "json",
        "--shutdown-grace-period",
        "0s",
        "--node-monitor-grace-period",
        "1500ms",
        "--controllers",
        "replicaset,job",
        "--demo-replicasets",
        "6",
        "--demo-pod-watch-delay-ms",
        "1500",
    ]);
    assert!(args.embedded);
    assert_eq!(args.duration, Some(Duration::from_secs(30)));
    assert_eq!(args.shards, Some(2));
    assert_eq!(args.leader_elect, Some(false));
    assert!(!args.leader_elect_fencing);
    assert_eq!(args.logging_format, LogFormat::Json);
    assert_eq!(args.shutdown_grace_period, Duration::ZERO);
    assert_eq!(args.node_monitor_grace_period, Duration::from_millis(1500));
    assert_eq!(args.controllers, ["replicaset", "job"]);
}

#[test]
fn with_embedded_leader_election_is_off_unless_asked() {
    assert!(!parse(&["--embedded"]).leader_elect_on());
    assert!(parse(&["--embedded", "--leader-elect"]).leader_elect_on());
}

#[test]
fn every_duration_flag_takes_go_durations() {
    let args = parse(&[
        "--leader-elect-lease-duration=1m0s",
        "--leader-elect-renew-deadline=2h45m30.5s",
        "--leader-elect-retry-period=250ms",
        "--node-monitor-grace-period=1.5s",
        "--shutdown-grace-period=0",
        "--duration=1h30m",
    ]);
    assert_eq!(args.leader_elect_lease_duration, Duration::from_secs(60));
    assert_eq!(
        args.leader_elect_renew_deadline,
        Duration::from_millis(9_930_500)
    );
    assert_eq!(args.leader_elect_retry_period, Duration::from_millis(250));
    assert_eq!(args.node_monitor_grace_period, Duration::from_millis(1500));
    assert_eq!(args.shutdown_grace_period, Duration::ZERO);
    assert_eq!(args.duration, Some(Duration::from_secs(5400)));
}

#[test]
fn a_negative_duration_is_refused_saying_so() {
    let message = refusal(&["--leader-elect-retry-period=-2s"]);
    assert!(message.contains("is negative"), "{message}");
}

#[test]
fn a_grace_period_without_a_unit_is_refused_as_go_refuses_it() {
    let message = refusal(&["--node-monitor-grace-period", "40"]);
    assert!(message.contains("has no unit"), "{message}");
}

#[test]
fn the_node_selector_selects_every_node_unless_given_and_refuses_bad_syntax() {
    assert!(parse(&[]).node_selector.is_empty());
    let canary = parse(&["--node-selector", "pool=canary,zone notin (eu-1)"]).node_selector;
    assert_eq!(canary.match_expressions.len(), 2);
    let message = refusal(&["--node-selector", "pool in canary"]);
    assert!(message.contains("unable to parse requirement"), "{message}");
}

#[test]
fn boolean_flags_take_go_booleans_after_an_equals_sign() {
    for (text, expected) in [("true", true), ("True", true), ("1", true), ("F", false)] {
        let args = parse(&[
            &format!("--leader-elect={text}"),
            &format!("--use-service-account-credentials={text}"),
            &format!("--authentication-skip-lookup={text}"),
        ]);
        assert_eq!(args.leader_elect, Some(expected), "{text}");
        assert_eq!(args.use_service_account_credentials, expected, "{text}");
        assert_eq!(args.authentication_skip_lookup, expected, "{text}");
    }
    let message = refusal(&["--leader-elect=yes"]);
    assert!(message.contains("is not a boolean"), "{message}");
}

#[test]
fn verbosity_is_taken_as_upstream_spells_it() {
    for flags in [
        &["-v", "4"][..],
        &["-v=4"],
        &["-v4"],
        &["--v=4"],
        &["--v", "4"],
    ] {
        assert_eq!(parse(flags).v, 4, "{flags:?}");
    }
}

#[test]
fn the_upstream_logging_format_flag_and_its_old_alias_both_work() {
    assert_eq!(
        parse(&["--logging-format=json"]).logging_format,
        LogFormat::Json
    );
    assert_eq!(
        parse(&["--log-format=json"]).logging_format,
        LogFormat::Json
    );
    assert!(refusal(&["--logging-format=xml"]).contains("xml"));
}

#[test]
fn protobuf_and_json_are_both_taken_without_a_warning() {
    for content_type in ["application/vnd.kubernetes.protobuf", "application/json"] {
        let args = parse(&[&format!("--kube-api-content-type={content_type}")]);
        assert_eq!(args.kube_api_content_type, content_type);
        assert!(args.warnings().is_empty(), "{:?}", args.warnings());
    }
}

#[test]
fn another_content_type_is_refused_saying_which_are_spoken() {
    let message = refusal(&["--kube-api-content-type=application/yaml"]);
    assert!(message.contains("or application/json"), "{message}");
}

#[test]
fn a_resource_lock_other_than_leases_is_refused_saying_why() {
    let message = refusal(&["--leader-elect-resource-lock=endpointsleases"]);
    assert!(
        message.contains("through a coordination.k8s.io Lease"),
        "{message}"
    );
}

#[test]
fn secure_port_zero_disables_secure_serving() {
    assert_eq!(parse(&["--secure-port=0"]).secure_serving_addr(), None);
}

#[test]
fn the_authentication_and_authorization_kubeconfigs_default_to_kubeconfig() {
    let args = parse(&["--kubeconfig=/k", "--authorization-kubeconfig=/z"]);
    assert_eq!(
        args.effective_authentication_kubeconfig(),
        Some(std::path::Path::new("/k"))
    );
    assert_eq!(
        args.effective_authorization_kubeconfig(),
        Some(std::path::Path::new("/z"))
    );
}

#[test]
fn the_concurrency_and_other_upstream_flags_are_recorded() {
    let args = parse(&[
        "--concurrent-replicaset-syncs=10",
        "--concurrent-statefulset-syncs=3",
        "--concurrent-daemonset-syncs=4",
        "--concurrent-job-syncs=7",
        "--master=https://10.0.0.1:6443",
        "--node-cidr-mask-size=24",
        "--service-cluster-ip-range=10.96.0.0/12",
        "--profiling=false",
        "--contention-profiling",
        "--tls-cert-file=/c",
        "--tls-private-key-file=/k",
        "--authorization-always-allow-paths=/healthz,/metrics",
    ]);
    assert_eq!(args.concurrent_replicaset_syncs, 10);
    assert_eq!(args.concurrent_job_syncs, 7);
    assert_eq!(args.master.as_deref(), Some("https://10.0.0.1:6443"));
    assert_eq!(args.not_run.node_cidr_mask_size, Some(24));
    assert!(!args.not_run.profiling);
    assert!(args.not_run.contention_profiling);
    assert_eq!(
        args.authorization_always_allow_paths,
        ["/healthz", "/metrics"]
    );
}

#[test]
fn help_documents_the_meaning_flags_have_here() {
    let help = <RunArgs as clap::CommandFactory>::command()
        .render_long_help()
        .to_string();
    for phrase in [
        "concurrency is per shard",
        "every controller uses the --kubeconfig identity",
        "not used for authentication here",
        "Tidemark does not run",
        "6 and up trace from everything",
        "reads Pods in protobuf",
    ] {
        assert!(help.contains(phrase), "{phrase:?} missing from --help");
    }
}
