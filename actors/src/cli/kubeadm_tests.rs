//! A kubeadm static-pod kube-controller-manager command line, as kubeadm writes it
//! (`getControllerManagerCommand`), runs unchanged after `tidemark run`.

use super::{Cli, Command, RunArgs, resolve_controllers};
use clap::Parser;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

const KUBEADM_FLAGS: &[&str] = &[
    "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--bind-address=127.0.0.1",
    "--client-ca-file=/etc/kubernetes/pki/ca.crt",
    "--cluster-name=kubernetes",
    "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
    "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
    "--controllers=*,bootstrapsigner,tokencleaner",
    "--kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--leader-elect=true",
    "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
    "--root-ca-file=/etc/kubernetes/pki/ca.crt",
    "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
    "--use-service-account-credentials=true",
];

const POD_NETWORK_FLAGS: &[&str] = &["--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16"];

fn parse_kubeadm_command(extra: &[&str]) -> RunArgs {
    let argv = ["tidemark", "run"]
        .iter()
        .chain(KUBEADM_FLAGS)
        .chain(extra)
        .copied();
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Run(args),
        }) => args,
        Err(e) => panic!("kubeadm's flags do not parse: {e}"),
    }
}

#[test]
fn kubeadms_controller_manager_flags_all_parse() {
    let args = parse_kubeadm_command(POD_NETWORK_FLAGS);
    let conf = Path::new("/etc/kubernetes/controller-manager.conf");
    assert_eq!(args.kubeconfig.as_deref(), Some(conf));
    assert_eq!(args.effective_authentication_kubeconfig(), Some(conf));
    assert_eq!(args.effective_authorization_kubeconfig(), Some(conf));
    assert_eq!(
        args.client_ca_file,
        Some(PathBuf::from("/etc/kubernetes/pki/ca.crt"))
    );
    assert_eq!(
        args.requestheader_client_ca_file,
        Some(PathBuf::from("/etc/kubernetes/pki/front-proxy-ca.crt"))
    );
    assert!(args.use_service_account_credentials);
    assert!(args.not_run.allocate_node_cidrs);
    assert_eq!(args.not_run.cluster_cidr.as_deref(), Some("10.244.0.0/16"));
    assert_eq!(args.not_run.cluster_name, "kubernetes");
}

#[test]
fn kubeadms_controller_list_resolves_to_the_five_tidemark_runs() {
    let args = parse_kubeadm_command(&[]);
    assert_eq!(
        resolve_controllers(&args.controllers),
        Ok(vec![
            "replicaset".to_string(),
            "statefulset".to_string(),
            "daemonset".to_string(),
            "job".to_string(),
            "nodelifecycle".to_string(),
        ])
    );
}

#[test]
fn kubeadms_command_line_elects_a_leader_and_serves_on_localhost_10257() {
    let args = parse_kubeadm_command(POD_NETWORK_FLAGS);
    assert!(args.leader_elect_on());
    assert_eq!(
        args.secure_serving_addr(),
        Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 10257))
    );
}

#[test]
fn kubeadms_command_line_warns_that_the_kubeconfig_identity_is_used() {
    let warnings = parse_kubeadm_command(&[]).warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("every controller uses the --kubeconfig identity")),
        "{warnings:?}"
    );
}

#[test]
fn the_run_flags_parse_alone_as_well() {
    let argv = ["run"].iter().chain(KUBEADM_FLAGS).copied();
    let args = RunArgs::try_parse_from(argv).expect("parses");
    assert_eq!(args.leader_elect, Some(true));
}
