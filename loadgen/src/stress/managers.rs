//! The `tidemark` processes of a stress run: started with the scenario's flags, each start with
//! its own identity (see [`incarnation`]), each manager with its log and summary; killed,
//! restarted, paused and resumed as the faults say, or started late to join the others; stopped
//! gracefully at the end.

use crate::scenario::{ManagerSettings, Protection};
use crate::stress::mode::Mode;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Why a manager process could not be handled.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// It could not be started.
    #[error("starting {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// It exited on its own before the run ended.
    #[error("tidemark {identity} exited early ({status}); log: {log}")]
    Died {
        /// Which one.
        identity: String,
        /// Its exit status.
        status: String,
        /// Its log file.
        log: String,
    },
    /// Its log or summary file.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

struct Slot {
    /// `tidemark-<index>`; each start is a new incarnation named `tidemark-<index>.<start>`.
    name: String,
    /// The identity of its latest incarnation (`--leader-elect-identity`, in its User-Agent).
    identity: String,
    /// The loopback port of its secure serving (`--secure-port`).
    secure_port: u16,
    log: PathBuf,
    summary: PathBuf,
    child: Option<Child>,
    paused: bool,
    starts: u32,
}

/// The serving certificate and key files every manager's secure port uses.
#[derive(Debug, Clone)]
pub struct ServingFiles {
    /// `--tls-cert-file`.
    pub cert: PathBuf,
    /// `--tls-private-key-file`.
    pub key: PathBuf,
}

/// The processes.
pub struct Managers {
    binary: PathBuf,
    kubeconfig: PathBuf,
    serving: ServingFiles,
    settings: ManagerSettings,
    mode: Mode,
    slots: Vec<Slot>,
}

fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
    }
}

/// A loopback port free now (bound and released; the manager binds it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(0, |a| a.port())
}

/// The identity of the `start`-th process of the manager `name` (from 1): each incarnation has
/// its own, as kube-controller-manager's `hostname_<uuid>`, so a write of a killed process that
/// commits late is told apart from its successor's, and the successor takes the Lease over only
/// once the killed one's lease has expired.
pub fn incarnation(name: &str, start: u32) -> String {
    format!("{name}.{start}")
}

fn seconds(s: f64) -> String {
    format!("{}ms", (s.max(0.0) * 1000.0).round() as u64)
}

impl Managers {
    /// Prepares `settings.replicas` managers writing their files into `work_dir`, each
    /// serving its secure port on a free loopback port with the certificate of `serving`.
    pub fn new(
        binary: &Path,
        kubeconfig: &Path,
        serving: &ServingFiles,
        settings: &ManagerSettings,
        mode: Mode,
        work_dir: &Path,
    ) -> Self {
        let slots = (0..settings.replicas.max(1))
            .map(|i| Slot {
                name: format!("tidemark-{i}"),
                identity: incarnation(&format!("tidemark-{i}"), 1),
                secure_port: free_port(),
                log: work_dir.join(format!("tidemark-{i}.log")),
                summary: work_dir.join(format!("tidemark-{i}-summary.json")),
                child: None,
                paused: false,
                starts: 0,
            })
            .collect();
        Self {
            binary: binary.to_path_buf(),
            kubeconfig: kubeconfig.to_path_buf(),
            serving: serving.clone(),
            settings: settings.clone(),
            mode,
            slots,
        }
    }

    /// Starts manager `index` (again, after a kill); its log is appended to.
    pub fn start(&mut self, index: usize) -> Result<(), ManagerError> {
        let fencing = self
            .mode
            .keeps(Protection::Fencing, &self.settings.protections);
        let s = &self.settings;
        let mut command = Command::new(&self.binary);
        command
            .arg("run")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--shards", &s.shards.to_string()])
            .args(["--kube-api-qps", &s.qps.to_string()])
            .args(["--kube-api-burst", &s.burst.to_string()])
            .args(self.mode.consistency_args(&s.protections))
            .args(["--bind-address", "127.0.0.1"])
            .arg("--tls-cert-file")
            .arg(&self.serving.cert)
            .arg("--tls-private-key-file")
            .arg(&self.serving.key)
            .args(["--leader-elect", &s.leader_elect.to_string()])
            .args([
                "--node-monitor-grace-period",
                &seconds(s.node_monitor_grace_seconds),
            ])
            .args(["--node-eviction-rate", &s.node_eviction_rate.to_string()]);
        if let Some(controllers) = &s.controllers {
            command.args(["--controllers", &controllers.join(",")]);
        }
        if s.scale_out {
            command.args(["--scale-out", "true"]);
        }
        let Some(slot) = self.slots.get_mut(index) else {
            return Ok(());
        };
        slot.identity = incarnation(&slot.name, slot.starts + 1);
        if s.leader_elect {
            command
                .args(["--leader-elect-identity", &slot.identity])
                .args([
                    "--leader-elect-lease-duration",
                    &seconds(s.lease_duration_seconds),
                ])
                .args([
                    "--leader-elect-renew-deadline",
                    &seconds(s.renew_deadline_seconds),
                ])
                .args([
                    "--leader-elect-retry-period",
                    &seconds(s.retry_period_seconds),
                ])
                .args(["--leader-elect-fencing", &fencing.to_string()]);
        }
        command.args(["--secure-port", &slot.secure_port.to_string()]);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&slot.log)?;
        let child = command
            .arg("--summary-json")
            .arg(&slot.summary)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|source| ManagerError::Spawn {
                path: self.binary.clone(),
                source,
            })?;
        slot.child = Some(child);
        slot.paused = false;
        slot.starts += 1;
        Ok(())
    }

    /// Starts every manager but those of `later` (slots an `add-manager` fault starts).
    pub fn start_all_but(&mut self, later: &[usize]) -> Result<(), ManagerError> {
        (0..self.slots.len())
            .filter(|i| !later.contains(i))
            .try_for_each(|i| self.start(i))
    }

    /// Whether manager `index` has a process now (running or paused).
    pub fn is_running(&self, index: usize) -> bool {
        self.slots.get(index).is_some_and(|s| s.child.is_some())
    }

    /// The identities manager `index` ran under, first start first (none if never started).
    pub fn incarnations(&self, index: usize) -> Vec<String> {
        self.slots.get(index).map_or_else(Vec::new, |s| {
            (1..=s.starts).map(|n| incarnation(&s.name, n)).collect()
        })
    }

    /// The index of the manager one of whose incarnations is named `identity`.
    pub fn index_of(&self, identity: &str) -> Option<usize> {
        self.slots.iter().position(|s| {
            identity
                .strip_prefix(s.name.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|start| start.parse::<u32>().is_ok())
        })
    }

    /// SIGKILL: no shutdown, no Lease release, writes cut wherever they are.
    pub fn kill(&mut self, index: usize) {
        if let Some(child) = self.slots.get_mut(index).and_then(|s| s.child.as_mut()) {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(slot) = self.slots.get_mut(index) {
            slot.child = None;
        }
    }

    /// SIGSTOP.
    pub fn pause(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index)
            && let Some(child) = &slot.child
        {
            signal(child, nix::sys::signal::Signal::SIGSTOP);
            slot.paused = true;
        }
    }

    /// SIGCONT.
    pub fn resume(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index)
            && let Some(child) = &slot.child
        {
            signal(child, nix::sys::signal::Signal::SIGCONT);
            slot.paused = false;
        }
    }

    /// Fails if a manager that should be running has exited.
    pub fn check_alive(&mut self) -> Result<(), ManagerError> {
        for slot in &mut self.slots {
            if let Some(child) = slot.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(ManagerError::Died {
                    identity: slot.identity.clone(),
                    status: status.to_string(),
                    log: slot.log.display().to_string(),
                });
            }
        }
        Ok(())
    }

    /// SIGTERM to every manager (resumed first if paused), then up to 10 s each for a graceful
    /// exit (on the async clock), then SIGKILL. Returns the exit codes of those that exited on
    /// their own.
    pub async fn stop_all(&mut self) -> Vec<Option<i32>> {
        for slot in &mut self.slots {
            if let Some(child) = &slot.child {
                if slot.paused {
                    signal(child, nix::sys::signal::Signal::SIGCONT);
                }
                signal(child, nix::sys::signal::Signal::SIGTERM);
            }
        }
        let mut codes = Vec::new();
        for slot in &mut self.slots {
            let Some(mut child) = slot.child.take() else {
                continue;
            };
            let mut code = None;
            for _ in 0..200 {
                if let Ok(Some(status)) = child.try_wait() {
                    code = status.code();
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if code.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
            codes.push(code);
        }
        codes
    }

    /// The secure-serving addresses of the managers running (not paused) now.
    pub fn secure_addrs(&self) -> Vec<(String, std::net::SocketAddr)> {
        self.slots
            .iter()
            .filter(|s| s.child.is_some() && !s.paused)
            .map(|s| {
                (
                    s.identity.clone(),
                    std::net::SocketAddr::from(([127, 0, 0, 1], s.secure_port)),
                )
            })
            .collect()
    }

    /// The logs of the managers ever started, comma-separated, for reports.
    pub fn logs(&self) -> String {
        self.slots
            .iter()
            .filter(|s| s.starts > 0)
            .map(|s| s.log.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The summaries the managers wrote at their graceful exits, summed field by field.
    pub fn summed_summary(&self, field: &str) -> u64 {
        self.slots
            .iter()
            .filter_map(|s| std::fs::read(&s.summary).ok())
            .filter_map(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .map(|v| v[field].as_u64().unwrap_or(0))
            .sum()
    }

    /// How many managers there are.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn managers(replicas: usize) -> Managers {
        let settings = ManagerSettings {
            replicas,
            ..ManagerSettings::default()
        };
        let serving = ServingFiles {
            cert: PathBuf::from("cert"),
            key: PathBuf::from("key"),
        };
        let dir = Path::new("/nonexistent");
        Managers::new(
            Path::new("tidemark"),
            dir,
            &serving,
            &settings,
            Mode::On,
            dir,
        )
    }

    #[test]
    fn every_incarnation_of_a_manager_is_found_by_its_identity() {
        let m = managers(2);
        assert_eq!(m.index_of("tidemark-1.1"), Some(1));
        assert_eq!(m.index_of("tidemark-0.3"), Some(0));
        assert_eq!(m.index_of("tidemark-1"), None);
        assert_eq!(m.index_of("tidemark-10.1"), None);
    }

    #[test]
    fn a_slot_never_started_is_neither_running_nor_alive_to_check_nor_scraped() {
        let mut m = managers(3);
        m.start_all_but(&[0, 1, 2]).expect("nothing to start");
        assert!(!m.is_running(2));
        assert!(m.incarnations(2).is_empty());
        assert!(m.check_alive().is_ok());
        assert!(m.secure_addrs().is_empty());
        assert_eq!(m.logs(), "");
        m.kill(2);
        m.pause(2);
        m.resume(2);
        assert_eq!(m.summed_summary("reconciles"), 0);
    }

    #[test]
    fn a_restart_is_a_new_incarnation() {
        assert_eq!(incarnation("tidemark-0", 1), "tidemark-0.1");
        assert_ne!(incarnation("tidemark-0", 1), incarnation("tidemark-0", 2));
    }
}
