//! Kubeconfigs for the simulated server: the cluster (HTTPS with the server's CA inline, or
//! plain HTTP behind the explicit flag) and one user, in each of the ways a kubeconfig can
//! authenticate.

use base64::Engine;

/// How the kubeconfig's user authenticates.
#[derive(Clone)]
pub enum KubeconfigUser {
    /// No credentials (only a plain-HTTP server accepts them).
    Anonymous,
    /// `client-certificate-data` / `client-key-data`.
    ClientCertificate {
        /// Certificate, PEM.
        cert_pem: String,
        /// Key, PEM.
        key_pem: String,
    },
    /// `client-certificate` / `client-key`: paths of PEM files.
    ClientCertificateFiles {
        /// Certificate file.
        cert: String,
        /// Key file.
        key: String,
    },
    /// `token`.
    Token(String),
    /// `tokenFile`.
    TokenFile(String),
    /// `exec`: an ExecCredential plugin (client.authentication.k8s.io/v1).
    Exec {
        /// The command.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

impl std::fmt::Debug for KubeconfigUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KubeconfigUser::Anonymous => "Anonymous",
            KubeconfigUser::ClientCertificate { .. } => "ClientCertificate",
            KubeconfigUser::ClientCertificateFiles { .. } => "ClientCertificateFiles",
            KubeconfigUser::Token(_) => "Token(<redacted>)",
            KubeconfigUser::TokenFile(_) => "TokenFile",
            KubeconfigUser::Exec { .. } => "Exec",
        })
    }
}

/// How the kubeconfig's cluster is trusted.
#[derive(Debug, Clone)]
pub enum KubeconfigTrust {
    /// Plain HTTP: nothing to verify.
    PlainHttp,
    /// `certificate-authority-data`: the CA inline.
    CaData(String),
    /// `certificate-authority`: a path of the CA file.
    CaFile(String),
    /// `insecure-skip-tls-verify: true`.
    SkipVerify,
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A YAML string literal (JSON strings are valid YAML).
fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// The kubeconfig YAML for a server at `url`.
pub fn kubeconfig(url: &str, trust: &KubeconfigTrust, user: &KubeconfigUser) -> String {
    let cluster_trust = match trust {
        KubeconfigTrust::PlainHttp => String::new(),
        KubeconfigTrust::CaData(pem) => format!("    certificate-authority-data: {}\n", b64(pem)),
        KubeconfigTrust::CaFile(path) => format!("    certificate-authority: {}\n", quoted(path)),
        KubeconfigTrust::SkipVerify => "    insecure-skip-tls-verify: true\n".to_string(),
    };
    let user = match user {
        KubeconfigUser::Anonymous => "  user: {}\n".to_string(),
        KubeconfigUser::ClientCertificate { cert_pem, key_pem } => format!(
            "  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(cert_pem),
            b64(key_pem)
        ),
        KubeconfigUser::ClientCertificateFiles { cert, key } => format!(
            "  user:\n    client-certificate: {}\n    client-key: {}\n",
            quoted(cert),
            quoted(key)
        ),
        KubeconfigUser::Token(t) => format!("  user:\n    token: {}\n", quoted(t)),
        KubeconfigUser::TokenFile(p) => format!("  user:\n    tokenFile: {}\n", quoted(p)),
        KubeconfigUser::Exec { command, args } => {
            let args: Vec<String> = args.iter().map(|a| quoted(a)).collect();
            format!(
                "  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      args: [{}]\n      interactiveMode: Never\n      provideClusterInfo: false\n",
                quoted(command),
                args.join(", ")
            )
        }
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: loadgen
  cluster:
    server: {url}
{cluster_trust}contexts:
- name: loadgen
  context:
    cluster: loadgen
    user: loadgen
    namespace: default
current-context: loadgen
preferences: {{}}
users:
- name: loadgen
{user}"
    )
}

/// A plain-HTTP kubeconfig without credentials.
pub fn kubeconfig_yaml(url: &str) -> String {
    kubeconfig(url, &KubeconfigTrust::PlainHttp, &KubeconfigUser::Anonymous)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_names_the_server_and_a_current_context() {
        let y = kubeconfig_yaml("http://127.0.0.1:1234");
        assert!(y.contains("server: http://127.0.0.1:1234"));
        assert!(y.contains("current-context: loadgen"));
    }

    #[test]
    fn an_https_kubeconfig_carries_the_ca_and_the_token() {
        let y = kubeconfig(
            "https://127.0.0.1:1",
            &KubeconfigTrust::CaData("PEM".into()),
            &KubeconfigUser::Token("abc".into()),
        );
        assert!(y.contains(&format!("certificate-authority-data: {}", b64("PEM"))));
        assert!(y.contains("token: \"abc\""));
    }
}
