//! Flags kube-controller-manager takes for controllers and endpoints Tidemark does not run: parsed
//! and kept so an upstream command line works, and used for nothing.

use clap::Args;
use std::path::PathBuf;
use tidemark_engine::parse_go_bool;

/// The flags an upstream command line (kubeadm's among them) sets for node IPAM, certificate
/// signing, the service-account token controller, the root CA publisher and profiling.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
#[command(next_help_heading = "Accepted for compatibility (controllers Tidemark does not run)")]
pub struct NotRunFlags {
    /// Node IPAM (not run here): allocate Pod CIDRs to Nodes. Accepted and ignored.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub allocate_node_cidrs: bool,
    /// Node IPAM (not run here): the Pods' CIDR range. Accepted and ignored.
    #[arg(long)]
    pub cluster_cidr: Option<String>,
    /// Node IPAM and cloud controllers (not run here): the cluster's name prefix. Accepted and ignored.
    #[arg(long, default_value = "kubernetes")]
    pub cluster_name: String,
    /// Certificate signing (not run here): the CA certificate. Accepted and ignored.
    #[arg(long)]
    pub cluster_signing_cert_file: Option<PathBuf>,
    /// Certificate signing (not run here): the CA key. Accepted and ignored.
    #[arg(long)]
    pub cluster_signing_key_file: Option<PathBuf>,
    /// Service-account token and root CA publisher controllers (not run here). Accepted and ignored.
    #[arg(long)]
    pub root_ca_file: Option<PathBuf>,
    /// Service-account token controller (not run here): the signing key. Accepted and ignored.
    #[arg(long)]
    pub service_account_private_key_file: Option<PathBuf>,
    /// Node IPAM (not run here): the Services' CIDR range. Accepted and ignored.
    #[arg(long)]
    pub service_cluster_ip_range: Option<String>,
    /// Node IPAM (not run here): the per-node mask size. Accepted and ignored.
    #[arg(long)]
    pub node_cidr_mask_size: Option<u8>,
    /// Node IPAM (not run here): the per-node IPv4 mask size. Accepted and ignored.
    #[arg(long)]
    pub node_cidr_mask_size_ipv4: Option<u8>,
    /// Node IPAM (not run here): the per-node IPv6 mask size. Accepted and ignored.
    #[arg(long)]
    pub node_cidr_mask_size_ipv6: Option<u8>,
    /// pprof handlers: Tidemark serves none. Accepted and ignored.
    #[arg(long, num_args = 0..=1, default_value = "true", default_missing_value = "true", value_parser = parse_go_bool)]
    pub profiling: bool,
    /// Block profiling with --profiling: Tidemark serves none. Accepted and ignored.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub contention_profiling: bool,
}
