//! The null client: the reads Tidemark's informers make (consistent paged lists of Pods and
//! ReplicaSets, 500 a page, then watches with bookmarks from the lists' versions), over a client
//! built as Tidemark builds its own, on the same I/O runtime, with every body read to its end and
//! thrown away. Nothing is decoded but a page's metadata and each watch line's resourceVersion.
//! What it measures is the floor under any client on this machine: TLS, HTTP and the server.

mod frame_tally;
mod line_tally;
mod list_head;
mod wire;

use crate::machine::memory;
use crate::seed::Seed;
use crate::sync::SyncOut;
use anyhow::Context;
use http_body_util::BodyExt;
use kube::api::{ListParams, WatchParams};
use kube::core::Request;
use list_head::{HeadReader, ListHead};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tidemark_actors::client::response::{read_at_most, status_error};
use tidemark_actors::informer::{PAGE_SIZE, WATCH_TIMEOUT_SECS};
use tidemark_actors::paths::collection;
use tidemark_engine::Resource;
use tokio::runtime::Handle;
use wire::WireFormat;

/// The largest error body read (a Status).
const ERROR_BODY_LIMIT: usize = 1 << 20;
/// How long to wait before reopening a watch the server ended without a line.
const EMPTY_WATCH_PAUSE: Duration = Duration::from_secs(1);

/// One resource's list, read to the end.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The resource.
    pub resource: Resource,
    /// Pages read.
    pub pages: u64,
    /// Body bytes read, every page.
    pub bytes: u64,
    /// The list's resourceVersion, where its watch starts.
    pub resource_version: String,
}

/// Sends `request`; the body of a success, or the server's Status as an error.
async fn send(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
) -> anyhow::Result<kube::client::Body> {
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .context("sending")?;
    let status = response.status();
    if status.is_success() {
        return Ok(response.into_body());
    }
    let body = read_at_most(response.into_body(), ERROR_BODY_LIMIT)
        .await
        .unwrap_or_default();
    Err(status_error(status.as_u16(), &body).into())
}

/// One page, its body read to the end: its metadata and its size.
async fn page(
    client: &kube::Client,
    resource: Resource,
    continue_token: Option<String>,
) -> anyhow::Result<(ListHead, u64)> {
    let params = ListParams {
        limit: Some(PAGE_SIZE),
        continue_token,
        ..ListParams::default()
    };
    let request = Request::new(collection(resource, None)).list(&params)?;
    let mut body = send(client, WireFormat::of_run().ask(request)).await?;
    let mut head = HeadReader::default();
    let mut bytes = 0u64;
    // A protobuf page is kept whole: its metadata is read once its message has ended.
    let mut protobuf: Option<Vec<u8>> = None;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.context("reading a list page")?.into_data() {
            if bytes == 0 && data.starts_with(tidemark_engine::proto::envelope::MAGIC) {
                protobuf = Some(Vec::new());
            }
            bytes += data.len() as u64;
            match &mut protobuf {
                Some(page) => page.extend_from_slice(&data),
                None => head.feed(&data)?,
            }
        }
    }
    if let Some(page) = protobuf {
        let list = tidemark_engine::proto::Unknown::read(&page)
            .and_then(|unknown| tidemark_engine::proto::List::read(unknown.raw))
            .context("a protobuf list page")?;
        return Ok((
            ListHead {
                resource_version: list.resource_version.unwrap_or_default().to_string(),
                continue_token: list.continue_token.map(str::to_string),
            },
            bytes,
        ));
    }
    Ok((head.finish()?, bytes))
}

/// Every page of `resource`'s list.
async fn list(client: kube::Client, resource: Resource) -> anyhow::Result<Listed> {
    let mut token = None;
    let mut listed = Listed {
        resource,
        pages: 0,
        bytes: 0,
        resource_version: String::new(),
    };
    loop {
        let (head, bytes) = page(&client, resource, token.take())
            .await
            .with_context(|| {
                format!(
                    "page {} of the {} list",
                    listed.pages + 1,
                    resource.plural()
                )
            })?;
        listed.pages += 1;
        listed.bytes += bytes;
        match head.continue_token {
            Some(next) => token = Some(next),
            None => {
                listed.resource_version = head.resource_version;
                return Ok(listed);
            }
        }
    }
}

/// Pages of a list of `objects`.
fn pages_of(objects: usize) -> u64 {
    (objects as u64).div_ceil(u64::from(PAGE_SIZE)).max(1)
}

/// Lists Pods and ReplicaSets side by side in tasks on `io`, as Tidemark's two informers do,
/// timed from the first request until both lists are read. Checks that every page arrived.
pub async fn sync(
    io: &Handle,
    client: &kube::Client,
    seed: &Seed,
) -> anyhow::Result<(Listed, Listed, SyncOut)> {
    let before = memory();
    let started = Instant::now();
    let pods = io.spawn(list(client.clone(), Resource::Pods));
    let owners = io.spawn(list(client.clone(), Resource::ReplicaSets));
    let pods = pods.await.context("the Pod list task")??;
    let owners = owners.await.context("the ReplicaSet list task")??;
    let seconds = started.elapsed().as_secs_f64();
    let after = memory();
    for (listed, objects) in [(&pods, seed.pods.len()), (&owners, seed.replicasets.len())] {
        anyhow::ensure!(
            listed.pages == pages_of(objects),
            "the null client read {} pages of {}, {} expected",
            listed.pages,
            listed.resource.plural(),
            pages_of(objects)
        );
    }
    let objects = (seed.pods.len() + seed.replicasets.len()) as u64;
    let figures = SyncOut::new(seconds, seed.pods.len() as u64, objects, before, after);
    Ok((pods, owners, figures))
}

/// A watch's counters, shared with the churn sampler.
#[derive(Debug, Default)]
pub struct Followed {
    /// The highest resourceVersion of a complete line.
    pub watermark: AtomicU64,
    /// Lines read (events and bookmarks), every watch of the resource.
    pub lines: AtomicU64,
}

/// Watches `listed`'s resource from its version in a task on `io` until the process ends,
/// reading every line. A watch the server ends is reopened from the last version seen, as the
/// informer's is; a watch that ends in an error line (`410 Gone`) ends the task: the null client
/// does not relist, and the churn sampler then sees it fall behind.
pub fn follow(io: &Handle, client: kube::Client, listed: &Listed) -> Arc<Followed> {
    let followed = Arc::new(Followed::default());
    let from = listed.resource_version.parse::<u64>().unwrap_or(0);
    followed.watermark.store(from, Ordering::Release);
    let (resource, counters) = (listed.resource, followed.clone());
    io.spawn(async move {
        let mut from = from;
        loop {
            match watch(&client, resource, from, &counters).await {
                Ok(Ended::At(version)) => from = version,
                Ok(Ended::Silent) => tokio::time::sleep(EMPTY_WATCH_PAUSE).await,
                Ok(Ended::Unversioned) => {
                    tracing::error!(
                        resource = resource.plural(),
                        from,
                        "the null client's watch ended in an error line"
                    );
                    return;
                }
                Err(error) => {
                    tracing::error!(
                        resource = resource.plural(),
                        from,
                        "the null client's watch failed: {error:#}"
                    );
                    return;
                }
            }
        }
    });
    followed
}

/// How a watch ended.
enum Ended {
    /// At this version.
    At(u64),
    /// Without a line.
    Silent,
    /// With lines but no version: an error event.
    Unversioned,
}

async fn watch(
    client: &kube::Client,
    resource: Resource,
    from: u64,
    counters: &Followed,
) -> anyhow::Result<Ended> {
    let params = WatchParams {
        bookmarks: true,
        timeout: Some(WATCH_TIMEOUT_SECS),
        ..WatchParams::default()
    };
    let request = Request::new(collection(resource, None)).watch(&params, &from.to_string())?;
    let wire = WireFormat::of_run().of_watch(resource);
    let mut body = send(client, wire.ask(request)).await?;
    let mut tally = wire.watch_tally();
    let mut counted = 0;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.context("reading a watch")?.into_data() {
            tally.feed(&data);
            if let Some(version) = tally.version() {
                counters.watermark.fetch_max(version, Ordering::Release);
            }
            counters
                .lines
                .fetch_add(tally.events() - counted, Ordering::Relaxed);
            counted = tally.events();
        }
    }
    Ok(match (tally.version(), tally.events()) {
        (Some(version), _) => Ended::At(version),
        (None, 0) => Ended::Silent,
        (None, _) => Ended::Unversioned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_nothing_is_one_page_and_a_full_page_is_not_two() {
        assert_eq!(pages_of(0), 1);
        assert_eq!(pages_of(500), 1);
        assert_eq!(pages_of(501), 2);
    }
}
