//! A kubeconfig for the simulated server: plain HTTP on loopback, a user without credentials.

/// The kubeconfig YAML for a server at `url`.
pub fn kubeconfig_yaml(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: loadgen
  cluster:
    server: {url}
contexts:
- name: loadgen
  context:
    cluster: loadgen
    user: loadgen
    namespace: default
current-context: loadgen
preferences: {{}}
users:
- name: loadgen
  user: {{}}
"
    )
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
}
