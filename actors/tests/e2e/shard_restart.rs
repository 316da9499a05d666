//! A shard that panics is restarted by its supervisor (here its controller's routing of an
//! event to keys panics; a panicking reconcile fails only its key): a fresh shard with no proofs,
//! filled by a relist once its backoff has passed; `/readyz` names it while it is down, a metric
//! counts the restart, and the keys of the other shard keep being reconciled meanwhile.

use crate::common::{http_get, until, with_runtime};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tidemark_actors::embedded::{DEMO_NAMESPACE, client_for, replicaset_manifest, start_server};
use tidemark_actors::informer::backoff::ReflectorBackoff;
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_actors::metrics::{MetricsState, serve};
use tidemark_actors::registration::Registration;
use tidemark_engine::{
    Object, ObjectKey, Plan, ReconcileError, Reconciler, Resource, ShardCache, ShardRouter,
};
use tidemark_loadgen::ServerConfig;

/// Reconciles ReplicaSets by doing nothing, but panics routing `boom` to its key the first time.
struct Flaky {
    panics_left: Arc<AtomicU32>,
    reconciled: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl Reconciler for Flaky {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn gate_name(&self) -> &'static str {
        "Flaky"
    }
    fn primary(&self) -> Resource {
        Resource::ReplicaSets
    }
    fn reads(&self) -> &[Resource] {
        &[Resource::ReplicaSets]
    }
    fn keys_for(&self, object: &Object, keys: &mut SmallVec<[ObjectKey; 2]>) {
        let key = object.key();
        if key.name() == "boom"
            && self
                .panics_left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
        {
            panic!("flaky reconciler cannot handle {key}");
        }
        if let Object::ReplicaSet(_) = object {
            keys.push(key.clone());
        }
    }
    fn reconcile(
        &self,
        key: &ObjectKey,
        _cache: &ShardCache,
        _ctx: &tidemark_engine::Context,
    ) -> Result<Plan, ReconcileError> {
        self.reconciled
            .lock()
            .push((key.name().to_string(), Instant::now()));
        Ok(Plan::default())
    }
}

fn reconciled_after(log: &Mutex<Vec<(String, Instant)>>, name: &str, after: Instant) -> bool {
    log.lock().iter().any(|(n, at)| n == name && *at > after)
}

#[test]
fn a_shard_that_panics_is_restarted_reported_and_the_other_keys_keep_flowing() {
    with_runtime(|io| async move {
        let server = start_server(&io, ServerConfig::default())
            .await
            .expect("server");
        server
            .create(
                tidemark_loadgen::Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest("boom", 0),
            )
            .expect("seed");
        let router = ShardRouter::new(2);
        let boom_shard = router.shard_of(&ObjectKey::new(DEMO_NAMESPACE, "boom"));
        // A ReplicaSet created while the shard is down, on the other shard.
        let calm = (0..50)
            .map(|i| format!("calm-{i}"))
            .find(|n| router.shard_of(&ObjectKey::new(DEMO_NAMESPACE, n.as_str())) != boom_shard)
            .expect("a name on the other shard");
        let panics_left = Arc::new(AtomicU32::new(1));
        let reconciled = Arc::new(Mutex::new(Vec::new()));
        let (left, log) = (panics_left.clone(), reconciled.clone());
        let config = ManagerConfig {
            shards: 2,
            controllers: vec!["flaky".into()],
            registrations: vec![Registration::new(move || Flaky {
                panics_left: left.clone(),
                reconciled: log.clone(),
            })],
            shard_restart_backoff: ReflectorBackoff::new(
                Duration::from_secs(2),
                Duration::from_secs(60),
                Duration::from_secs(300),
            ),
            ..ManagerConfig::default()
        };
        let client = client_for(&server, &io).await.expect("client");
        let manager = Manager::start(&config, client, &io).expect("manager");
        let state = MetricsState::new(manager.source());
        let addr = io
            .spawn(serve("127.0.0.1:0".parse().expect("addr"), state.clone()))
            .await
            .expect("join")
            .expect("bound");
        let panicked = until(Duration::from_secs(10), || {
            panics_left.load(Ordering::Relaxed) == 0
        })
        .await;
        assert!(panicked, "routing boom panicked");
        let after_panic = Instant::now();
        let (ready_code, ready_body) = http_get(addr, "/readyz").await;
        server
            .create(
                tidemark_loadgen::Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest(&calm, 0),
            )
            .expect("create");
        let flowed = until(Duration::from_secs(2), || {
            reconciled_after(&reconciled, &calm, after_panic)
        })
        .await;
        let recovered = until(Duration::from_secs(10), || {
            reconciled_after(&reconciled, "boom", after_panic)
        })
        .await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let (ready_after, ready_after_body) = http_get(addr, "/readyz").await;
        let (_, metrics) = http_get(addr, "/metrics").await;
        let stats = manager.stats().await;
        manager.stop();
        server.shutdown().await;
        assert_eq!(
            ready_code, 503,
            "not ready while the shard is down: {ready_body}"
        );
        assert!(
            ready_body.contains(&format!("[-] shard {} down", boom_shard.0))
                && ready_body.contains("flaky reconciler cannot handle demo/boom"),
            "{ready_body}"
        );
        assert!(
            flowed,
            "the other shard's new key was reconciled while the shard was down"
        );
        assert!(
            recovered,
            "boom was reconciled by the restarted shard after its relist"
        );
        assert_eq!(ready_after, 200, "{ready_after_body}");
        let restarts: u64 = stats.shards.iter().map(|s| s.restarts).sum();
        assert_eq!(restarts, 1);
        assert!(stats.shards.iter().all(|s| s.down.is_none()));
        assert!(
            metrics.contains(&format!(
                "tidemark_shard_restarts_total{{shard=\"{}\"}} 1",
                boom_shard.0
            )),
            "{metrics}"
        );
    });
}
