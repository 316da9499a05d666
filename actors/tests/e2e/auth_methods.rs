//! Every way a kubeconfig (or a Pod) authenticates, each against the simulated API server over
//! HTTPS with RBAC enforced, each shown by the manager reconciling a ReplicaSet: CA data, a CA
//! file, skip-verify, `tls-server-name`, client certificates (inline and files), a token file
//! rotated mid-run, an exec plugin whose credential expires, and in-cluster configuration.

use crate::common::{until, with_runtime};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tidemark_actors::client::{ConfigSource, InClusterEnv, build_client, load_config};
use tidemark_actors::embedded::{DEMO_NAMESPACE, converged, replicaset_manifest, start_server};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_loadgen::kubeconfig::{KubeconfigTrust, KubeconfigUser};
use tidemark_loadgen::rbac::UserInfo;
use tidemark_loadgen::{ApiServer, Resource, ServerConfig};

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tidemark-auth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

async fn server(io: &tokio::runtime::Handle) -> ApiServer {
    let server = start_server(
        io,
        ServerConfig {
            kubelet_ready_after: Duration::from_millis(50),
            bookmark_interval: Duration::from_millis(200),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server starts");
    server
        .create(
            Resource::ReplicaSets,
            DEMO_NAMESPACE,
            replicaset_manifest("web", 3),
        )
        .expect("seed");
    server
}

/// An admin: `system:masters`, as a kubeconfig of a cluster's admin.
fn admin() -> UserInfo {
    UserInfo::user("admin", &["system:masters"])
}

fn manager_config() -> ManagerConfig {
    ManagerConfig {
        shards: 1,
        controllers: vec!["replicaset".into()],
        qps: 200.0,
        burst: 200,
        ..ManagerConfig::default()
    }
}

/// Loads `source`, starts the ReplicaSet controller with it, and waits for `web` to have 3
/// Pods; then scales to 5 after `between` ran, and waits again. Returns whether both held.
async fn reconciles_with<F, Fut>(
    io: &tokio::runtime::Handle,
    server: &ApiServer,
    source: ConfigSource,
    between: F,
) -> bool
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let config = load_config(&source).await.expect("configuration loads");
    let client = build_client(config, None, io).expect("client");
    reconciles_as(io, server, client, between, Duration::from_secs(20)).await
}

/// [`reconciles_with`] for a client made elsewhere; the second wait lasts `second_wait`.
async fn reconciles_as<F, Fut>(
    io: &tokio::runtime::Handle,
    server: &ApiServer,
    client: kube::Client,
    between: F,
    second_wait: Duration,
) -> bool
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let manager = Manager::start(&manager_config(), client, io).expect("manager starts");
    let first = until(Duration::from_secs(20), || {
        converged(&server.replicaset_truth())
    })
    .await;
    between().await;
    server
        .scale_replicaset(DEMO_NAMESPACE, "web", 5)
        .expect("scale");
    let second = until(second_wait, || {
        let truth = server.replicaset_truth();
        converged(&truth) && truth.iter().all(|t| t.live_pods == 5)
    })
    .await;
    manager.stop();
    first && second
}

fn yaml(server: &ApiServer, trust: KubeconfigTrust, user: KubeconfigUser) -> ConfigSource {
    ConfigSource::Yaml(server.kubeconfig_with(&trust, &user))
}

async fn nothing() {}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
}

#[test]
fn certificate_authority_data_with_a_bearer_token() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let token = server.issue_token(admin(), None);
        let ca = server.ca_pem().expect("https").to_string();
        let source = yaml(
            &server,
            KubeconfigTrust::CaData(ca),
            KubeconfigUser::Token(token),
        );
        assert!(reconciles_with(&io, &server, source, nothing).await);
        server.shutdown().await;
    });
}

#[test]
fn a_certificate_authority_file_with_client_certificate_files() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let dir = work_dir("ca-file");
        write(&dir.join("ca.crt"), server.ca_pem().expect("https"));
        let cert = server
            .issue_client_certificate("alice", &["system:masters".into()])
            .expect("client certificate");
        write(&dir.join("alice.crt"), &cert.cert_pem);
        write(&dir.join("alice.key"), &cert.key_pem);
        let source = yaml(
            &server,
            KubeconfigTrust::CaFile(dir.join("ca.crt").display().to_string()),
            KubeconfigUser::ClientCertificateFiles {
                cert: dir.join("alice.crt").display().to_string(),
                key: dir.join("alice.key").display().to_string(),
            },
        );
        assert!(reconciles_with(&io, &server, source, nothing).await);
        let used_certificate = server
            .request_log()
            .iter()
            .any(|e| e.user == "alice" && e.allowed);
        assert!(
            used_certificate,
            "requests were authenticated as the certificate's CN"
        );
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn client_certificate_data_inline() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let cert = server
            .issue_client_certificate("bob", &["system:masters".into()])
            .expect("client certificate");
        let ca = server.ca_pem().expect("https").to_string();
        let source = yaml(
            &server,
            KubeconfigTrust::CaData(ca),
            KubeconfigUser::ClientCertificate {
                cert_pem: cert.cert_pem,
                key_pem: cert.key_pem,
            },
        );
        assert!(reconciles_with(&io, &server, source, nothing).await);
        server.shutdown().await;
    });
}

#[test]
fn insecure_skip_tls_verify_trusts_any_certificate() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let token = server.issue_token(admin(), None);
        let source = yaml(
            &server,
            KubeconfigTrust::SkipVerify,
            KubeconfigUser::Token(token),
        );
        assert!(reconciles_with(&io, &server, source, nothing).await);
        server.shutdown().await;
    });
}

#[test]
fn tls_server_name_is_the_name_the_certificate_must_carry() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let token = server.issue_token(admin(), None);
        let ca = server.ca_pem().expect("https").to_string();
        let with_name = |name: &str| {
            let text = server.kubeconfig_with(
                &KubeconfigTrust::CaData(ca.clone()),
                &KubeconfigUser::Token(token.clone()),
            );
            text.replacen(
                "    certificate-authority-data:",
                &format!("    tls-server-name: {name}\n    certificate-authority-data:"),
                1,
            )
        };
        let wrong = load_config(&ConfigSource::Yaml(with_name("elsewhere.example")))
            .await
            .expect("configuration loads");
        let client = build_client(wrong, None, &io).expect("client");
        let refused = client.apiserver_version().await;
        assert!(refused.is_err(), "a name the certificate lacks is refused");
        let source = ConfigSource::Yaml(with_name("localhost"));
        assert!(reconciles_with(&io, &server, source, nothing).await);
        server.shutdown().await;
    });
}

/// A kubeconfig whose user reads its token from a file holding the first of two valid tokens:
/// (the source, the file, the first token, the second).
fn token_file_kubeconfig(
    server: &ApiServer,
    dir: &Path,
) -> (ConfigSource, PathBuf, String, String) {
    let first = server.issue_token(admin(), None);
    let second = server.issue_token(admin(), None);
    let file = dir.join("token");
    write(&file, &first);
    let ca = server.ca_pem().expect("https").to_string();
    let source = yaml(
        server,
        KubeconfigTrust::CaData(ca),
        KubeconfigUser::TokenFile(file.display().to_string()),
    );
    (source, file, first, second)
}

#[test]
fn a_token_file_rotated_mid_run_is_picked_up_before_the_old_token_is_revoked() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let dir = work_dir("token-file");
        let (source, file, first, second) = token_file_kubeconfig(&server, &dir);
        let rotate = || async {
            write(&file, &second);
            // The kubelet rotates the file well before the old token expires; 3 s stands for
            // that margin here (the file is looked at every second).
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(server.revoke_token(&first));
        };
        assert!(reconciles_with(&io, &server, source, rotate).await);
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn with_kube_rs_own_token_file_reload_a_token_revoked_after_rotation_stops_the_manager() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let dir = work_dir("token-file-off");
        let (source, file, first, second) = token_file_kubeconfig(&server, &dir);
        let config = load_config(&source).await.expect("configuration loads");
        // The protection off: kube-rs' own tokenFile handling, which re-reads once a minute.
        let client = {
            let _guard = io.enter();
            kube::Client::try_from(tidemark_actors::client::with_user_agent(config, None))
                .expect("client")
        };
        let rotate = || async {
            write(&file, &second);
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(server.revoke_token(&first));
        };
        let kept_working =
            reconciles_as(&io, &server, client, rotate, Duration::from_secs(8)).await;
        assert!(
            !kept_working,
            "the revoked token stayed in use: the scale-up never happened"
        );
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn an_exec_plugin_is_run_again_when_its_credential_expires() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        let dir = work_dir("exec");
        // Tokens 1..=20 are valid; each run of the plugin hands out the next one, expiring 62 s
        // from now: kube-rs refreshes a credential 60 s before it expires, so every 2 s.
        for n in 1..=20 {
            write(
                &dir.join(format!("token-{n}")),
                &server.issue_token(admin(), None),
            );
        }
        let script = dir.join("credential.sh");
        write(
            &script,
            &format!(
                "#!/bin/sh\nset -e\ncd {dir}\nn=$(cat count 2>/dev/null || echo 0)\nn=$((n + 1))\necho $n > count\n\
                 expiry=$(date -u -d '+62 seconds' +%Y-%m-%dT%H:%M:%SZ)\n\
                 printf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}}}}' \"$(cat token-$n)\" \"$expiry\"\n",
                dir = dir.display()
            ),
        );
        let mut perms = std::fs::metadata(&script).expect("script").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&script, perms).expect("chmod");
        let ca = server.ca_pem().expect("https").to_string();
        let source = yaml(
            &server,
            KubeconfigTrust::CaData(ca),
            KubeconfigUser::Exec {
                command: script.display().to_string(),
                args: vec![],
            },
        );
        let first_token = std::fs::read_to_string(dir.join("token-1")).expect("token");
        let revoke_first = || async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(server.revoke_token(&first_token));
        };
        assert!(reconciles_with(&io, &server, source, revoke_first).await);
        let runs: u32 = std::fs::read_to_string(dir.join("count"))
            .expect("count")
            .trim()
            .parse()
            .expect("a number");
        assert!(
            runs >= 2,
            "the plugin ran again for a fresh credential ({runs} runs)"
        );
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn in_cluster_configuration_reads_the_service_account_mount() {
    with_runtime(|io| async move {
        let server = server(&io).await;
        server
            .apply(
                &tidemark_loadgen::rbac::parse_manifests(
                    tidemark_loadgen::rbac::deploy::TIDEMARK_RBAC_YAML,
                )
                .expect("deploy/rbac.yaml parses"),
            )
            .expect("RBAC applied");
        let token = server
            .service_account_token("kube-system", "tidemark", Duration::from_secs(3600))
            .expect("token");
        let dir = work_dir("in-cluster");
        write(&dir.join("token"), &token);
        write(&dir.join("ca.crt"), server.ca_pem().expect("https"));
        write(&dir.join("namespace"), "kube-system\n");
        let env = InClusterEnv {
            host: "127.0.0.1".into(),
            port: server.addr().port().to_string(),
            dir: dir.clone(),
        };
        assert!(reconciles_with(&io, &server, ConfigSource::InCluster(env), nothing).await);
        let denied: Vec<_> = server
            .request_log()
            .into_iter()
            .filter(|e| e.user == "system:serviceaccount:kube-system:tidemark" && !e.allowed)
            .collect();
        assert!(denied.is_empty(), "deploy/rbac.yaml lacks {denied:?}");
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
