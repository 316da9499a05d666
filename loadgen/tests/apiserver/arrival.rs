//! The oracle judges a Pod create or delete against the state when the request reached the
//! server, however long injected latency then holds it: a race no controller could avoid is not
//! counted, an avoidable one is.

use crate::common::{TestResult, owned_pod, pods, quiet_config, start};
use crate::common::{replicaset_uid, slow};
use kube::api::PostParams;
use std::time::Duration;
use tidemark_loadgen::ViolationKind;

#[tokio::test]
async fn a_create_in_flight_while_the_user_scales_down_is_not_counted() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let uid = replicaset_uid(&client, "web", 2).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &owned_pod("web-1", "web", &uid))
        .await?;
    server
        .faults()
        .requests()
        .add_latency(slow("create", Some("pods"), 400));
    let in_flight = {
        let api = api.clone();
        let pod = owned_pod("web-2", "web", &uid);
        tokio::spawn(async move { api.create(&PostParams::default(), &pod).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    server.scale_replicaset("default", "web", 1)?;
    in_flight.await??;
    assert_eq!(server.replicaset_truth()[0].live_pods, 2, "it did commit");
    assert!(server.violations().is_empty(), "{:?}", server.violations());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_second_create_for_one_missing_pod_is_counted_whichever_commits_first() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let uid = replicaset_uid(&client, "web", 2).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &owned_pod("web-1", "web", &uid))
        .await?;
    server
        .faults()
        .requests()
        .add_latency(slow("create", Some("pods"), 300));
    let (a, b) = (
        owned_pod("web-2", "web", &uid),
        owned_pod("web-3", "web", &uid),
    );
    let post = PostParams::default();
    let (first, second) = tokio::join!(api.create(&post, &a), api.create(&post, &b));
    first?;
    second?;
    let v = server.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].kind, ViolationKind::OverCreate);
    assert_eq!((v[0].live, v[0].in_flight, v[0].desired), (1, 1, 2));
    assert!(v[0].at_arrival);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_delete_that_arrives_when_the_pod_is_wanted_is_counted_though_it_is_not_at_commit()
-> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let uid = replicaset_uid(&client, "web", 1).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &owned_pod("web-1", "web", &uid))
        .await?;
    server
        .faults()
        .requests()
        .add_latency(slow("delete", Some("pods"), 400));
    let in_flight = {
        let api = api.clone();
        tokio::spawn(async move { api.delete("web-1", &Default::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    server.scale_replicaset("default", "web", 0)?;
    in_flight.await??;
    let v = server.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].kind, ViolationKind::WantedPodDeleted);
    assert_eq!((v[0].live, v[0].desired), (1, 1));
    server.shutdown().await;
    Ok(())
}
