//! The peer: kube-rs 5 `watcher` + `reflector` into a `Store<Pod>` and a `Store<ReplicaSet>`
//! (what a ReplicaSet controller holds, as Tidemark's side does) with the page size it defaults
//! to (500), and kube-rs `Controller` with the same no-op reconciler and concurrency.

use crate::machine::memory;
use crate::seed::Seed;
use crate::sync::SyncOut;
use anyhow::Context;
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The reflector's stream after the initial list.
pub type PodStream =
    Pin<Box<dyn Stream<Item = Result<watcher::Event<Pod>, watcher::Error>> + Send>>;

/// A kube client from `kubeconfig` on the current runtime, as a kube-rs user makes one.
pub async fn client(kubeconfig: &str) -> anyhow::Result<kube::Client> {
    tidemark_tls::install_crypto_provider();
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).context("kubeconfig")?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .context("kubeconfig")?;
    kube::Client::try_from(config).context("kube client")
}

/// Polls `stream` until its initial list is in the store.
async fn until_listed<K>(
    stream: &mut (impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin),
) -> anyhow::Result<()> {
    while let Some(event) = stream.try_next().await.context("peer watcher")? {
        if matches!(event, watcher::Event::InitDone) {
            break;
        }
    }
    Ok(())
}

/// Syncs a reflector of every Pod and one of every ReplicaSet, side by side; returns the Pods'
/// with its stream (to go on watching) and the figures. The ReplicaSets' stream goes on in a
/// task of its own, so their store stays held.
pub async fn sync(
    kubeconfig: &str,
    seed: &Seed,
) -> anyhow::Result<(Store<Pod>, PodStream, SyncOut)> {
    let client = client(kubeconfig).await?;
    let (reader, writer) = reflector::store::<Pod>();
    let (owners, owners_writer) = reflector::store::<ReplicaSet>();
    let before = memory();
    let started = Instant::now();
    let mut stream: PodStream = Box::pin(reflector::reflector(
        writer,
        watcher(Api::<Pod>::all(client.clone()), watcher::Config::default()),
    ));
    let mut owner_stream = Box::pin(reflector::reflector(
        owners_writer,
        watcher(Api::<ReplicaSet>::all(client), watcher::Config::default()),
    ));
    futures::try_join!(until_listed(&mut stream), until_listed(&mut owner_stream))?;
    let seconds = started.elapsed().as_secs_f64();
    let after = memory();
    tokio::spawn(owner_stream.for_each(|_| futures::future::ready(())));
    let cached = reader.state().len() as u64;
    let pods = seed.pods.len() as u64;
    anyhow::ensure!(cached == pods, "the peer cached {cached} Pods of {pods}");
    let cached_owners = owners.state().len();
    anyhow::ensure!(
        cached_owners == seed.replicasets.len(),
        "the peer cached {cached_owners} ReplicaSets of {}",
        seed.replicasets.len()
    );
    let objects = pods + seed.replicasets.len() as u64;
    Ok((
        reader,
        stream,
        SyncOut::new(seconds, pods, objects, before, after),
    ))
}

/// Keeps `stream` going, moving `watermark` to each applied Pod's resourceVersion.
pub fn follow(mut stream: PodStream, watermark: Arc<AtomicU64>) {
    tokio::spawn(async move {
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(pod) | watcher::Event::Delete(pod)) = event
                && let Some(rv) = pod
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|v| v.parse::<u64>().ok())
            {
                watermark.fetch_max(rv, Ordering::Release);
            }
        }
    });
}

/// The no-op reconcile never fails; the error type is what `Controller` requires.
#[derive(Debug, thiserror::Error)]
#[error("never")]
pub struct Never;

async fn reconcile(_rs: Arc<ReplicaSet>, count: Arc<AtomicU64>) -> Result<Action, Never> {
    count.fetch_add(1, Ordering::Relaxed);
    Ok(Action::await_change())
}

fn error_policy(_rs: Arc<ReplicaSet>, _e: &Never, _count: Arc<AtomicU64>) -> Action {
    Action::await_change()
}

async fn wait_until(count: &AtomicU64, at_least: u64, limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while count.load(Ordering::Relaxed) < at_least {
        anyhow::ensure!(Instant::now() < deadline, "the peer controller stalled");
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    Ok(())
}

/// Reconciles per second of kube-rs `Controller` over every ReplicaSet (owning the Pods), with
/// `concurrency` reconciles at once: after the first wave settles, `reconcile_all_on` triggers
/// whole rounds, each timed until every key has reconciled.
pub async fn controller(kubeconfig: &str, keys: u64, concurrency: u16) -> anyhow::Result<f64> {
    let client = client(kubeconfig).await?;
    let count = Arc::new(AtomicU64::new(0));
    let (trigger, triggers) = tokio::sync::mpsc::channel::<()>(1);
    let runner = Controller::new(
        Api::<ReplicaSet>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(Api::<Pod>::all(client), watcher::Config::default())
    .reconcile_all_on(tokio_stream_of(triggers))
    .with_config(controller::Config::default().concurrency(concurrency))
    .run(reconcile, error_policy, count.clone())
    .for_each(|_| futures::future::ready(()));
    let task = tokio::spawn(runner);
    wait_until(&count, keys, Duration::from_secs(600)).await?;
    // Let the Pod watcher's owner triggers drain.
    let mut last = count.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = count.load(Ordering::Relaxed);
        if now == last {
            break;
        }
        last = now;
    }
    let mut rounds = 0u64;
    let mut busy = Duration::ZERO;
    while rounds < 20 && (rounds < 3 || busy < Duration::from_secs(2)) {
        let from = count.load(Ordering::Relaxed);
        let started = Instant::now();
        trigger.send(()).await.context("trigger")?;
        wait_until(&count, from + keys, Duration::from_secs(120)).await?;
        busy += started.elapsed();
        rounds += 1;
    }
    task.abort();
    Ok((rounds * keys) as f64 / busy.as_secs_f64())
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<()>,
) -> impl Stream<Item = ()> + Send + Sync + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
