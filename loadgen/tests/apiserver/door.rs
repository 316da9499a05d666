//! The door, as strict as kube-apiserver's: HTTPS only, 401 without valid credentials, RBAC's
//! 403 with upstream's Status body, TokenRequest, TokenReview and (Self)SubjectAccessReview;
//! plain HTTP only behind the explicit flag.

use crate::common::*;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use std::time::Duration;
use tidemark_loadgen::ServerConfig;
use tidemark_loadgen::apiserver::kubeconfig::KubeconfigUser;
use tidemark_loadgen::rbac::UserInfo;

async fn as_user(
    server: &tidemark_loadgen::ApiServer,
    user: KubeconfigUser,
) -> Result<kube::Client, Box<dyn std::error::Error + Send + Sync>> {
    client_with(&server.kubeconfig_for(&user)).await
}

fn service_account(ns: &str, name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}})
}

#[tokio::test]
async fn a_request_without_credentials_or_with_a_bad_token_is_401_unauthorized() -> TestResult {
    let (server, _) = start(quiet_config()).await?;
    assert!(server.url().starts_with("https://"));
    for user in [
        KubeconfigUser::Anonymous,
        KubeconfigUser::Token("not-a-token".into()),
    ] {
        let client = as_user(&server, user).await?;
        let e = Api::<Pod>::namespaced(client, "default")
            .list(&ListParams::default())
            .await
            .err()
            .ok_or("an unauthenticated list succeeded")?;
        assert_eq!(api_code(&e), Some(401), "{e}");
        assert_eq!(api_reason(&e).as_deref(), Some("Unauthorized"));
    }
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_service_account_without_a_binding_is_forbidden_with_the_upstream_message() -> TestResult
{
    let (server, _) = start(quiet_config()).await?;
    server.apply(&[service_account("kube-system", "robot")])?;
    let token = server.service_account_token("kube-system", "robot", Duration::from_secs(3600))?;
    let client = as_user(&server, KubeconfigUser::Token(token)).await?;
    let e = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .err()
        .ok_or("a list without a binding succeeded")?;
    let kube::Error::Api(status) = &e else {
        return Err(format!("not an API error: {e}").into());
    };
    assert_eq!(status.code, 403);
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        "pods is forbidden: User \"system:serviceaccount:kube-system:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    server.apply(&[
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "pod-reader", "namespace": "default"},
               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "robot-reads-pods", "namespace": "default"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "kube-system"}]}),
    ])?;
    Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await?;
    let elsewhere = Api::<Pod>::namespaced(client, "other")
        .list(&ListParams::default())
        .await
        .err()
        .ok_or("a Role granted outside its namespace")?;
    assert_eq!(api_code(&elsewhere), Some(403));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn token_request_issues_a_token_that_token_review_names() -> TestResult {
    let (server, admin) = start(quiet_config()).await?;
    server.apply(&[service_account("default", "builder")])?;
    let request: k8s_openapi::api::authentication::v1::TokenRequest = typed(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": [], "expirationSeconds": 600}
    }));
    let issued = Api::<ServiceAccount>::namespaced(admin.clone(), "default")
        .create_token_request("builder", &PostParams::default(), &request)
        .await?;
    let token = issued.status.ok_or("no status")?.token.ok_or("no token")?;
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: token.clone(),
            audiences: None,
        },
        ..TokenReview::default()
    };
    let answer = Api::<TokenReview>::all(admin.clone())
        .create(&PostParams::default(), &review)
        .await?;
    let status = answer.status.ok_or("no status")?;
    assert_eq!(status.authenticated, Some(true));
    let user = status.user.ok_or("no user")?;
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:builder")
    );
    assert!(
        user.groups
            .unwrap_or_default()
            .contains(&"system:serviceaccounts:default".to_string())
    );
    let bogus = TokenReview {
        spec: TokenReviewSpec {
            token: "bogus".into(),
            audiences: None,
        },
        ..TokenReview::default()
    };
    let refused = Api::<TokenReview>::all(admin)
        .create(&PostParams::default(), &bogus)
        .await?;
    assert_eq!(refused.status.and_then(|s| s.authenticated), Some(false));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn access_reviews_answer_as_rbac_decides() -> TestResult {
    let (server, admin) = start(quiet_config()).await?;
    let ask = |user: &str, path: Option<&str>| SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            groups: Some(vec!["system:authenticated".into()]),
            non_resource_attributes: path.map(|p| NonResourceAttributes {
                path: Some(p.into()),
                verb: Some("get".into()),
            }),
            resource_attributes: path.is_none().then(|| ResourceAttributes {
                verb: Some("delete".into()),
                resource: Some("pods".into()),
                namespace: Some("default".into()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let api = Api::<SubjectAccessReview>::all(admin.clone());
    let version = api
        .create(&PostParams::default(), &ask("jane", Some("/version")))
        .await?;
    assert!(
        version.status.ok_or("no status")?.allowed,
        "system:public-info-viewer"
    );
    let metrics = api
        .create(&PostParams::default(), &ask("jane", Some("/metrics")))
        .await?;
    assert!(!metrics.status.ok_or("no status")?.allowed);
    let delete = api
        .create(&PostParams::default(), &ask("jane", None))
        .await?;
    assert!(!delete.status.ok_or("no status")?.allowed);
    let token = server.issue_token(UserInfo::user("root", &["system:masters"]), None);
    let root = as_user(&server, KubeconfigUser::Token(token)).await?;
    let mine = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("delete".into()),
                resource: Some("nodes".into()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(root)
        .create(&PostParams::default(), &mine)
        .await?;
    assert!(answer.status.ok_or("no status")?.allowed);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn every_request_is_logged_with_its_user_and_decision() -> TestResult {
    let (server, _) = start(quiet_config()).await?;
    server.apply(&[service_account("kube-system", "robot")])?;
    let token = server.service_account_token("kube-system", "robot", Duration::from_secs(3600))?;
    let client = as_user(&server, KubeconfigUser::Token(token)).await?;
    let _ = Api::<Pod>::all(client).list(&ListParams::default()).await;
    let log = server.request_log();
    let entry = log
        .iter()
        .find(|e| e.user == "system:serviceaccount:kube-system:robot")
        .ok_or("no entry")?;
    assert!(!entry.allowed);
    assert_eq!(entry.request.verb(), "list");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn plain_http_is_served_only_behind_the_explicit_flag() -> TestResult {
    let (server, client) = start(ServerConfig {
        plain_http: true,
        ..quiet_config()
    })
    .await?;
    assert!(server.url().starts_with("http://"));
    assert!(server.ca_pem().is_none());
    pods(&client, "default")
        .list(&ListParams::default())
        .await?;
    server.shutdown().await;
    Ok(())
}
