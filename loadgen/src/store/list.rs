//! List requests: `limit`/`continue` pinned to a revision, `resourceVersion` and
//! `resourceVersionMatch` semantics, selectors, and the pre-encoded list body.

use std::time::Duration;

use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use crate::apiserver::status::ApiError;
use crate::resource::Resource;
use crate::store::selector::Selectors;
use crate::store::{Key, Store};

/// How long a list waits for a resourceVersion newer than the current one.
pub const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);

/// The decoded `continue` token: the pinned revision and the last key served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// The list's revision.
    pub rv: u64,
    /// Namespace of the last item served.
    pub ns: String,
    /// Name of the last item served.
    pub name: String,
}

impl ContinueToken {
    /// Encodes as base64 of JSON.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// Decodes a token; anything malformed is a 400.
    pub fn decode(s: &str) -> Result<Self, ApiError> {
        let bad =
            || ApiError::bad_request("continue key is not valid: illegal base64 data or JSON");
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .or_else(|_| base64::engine::general_purpose::STANDARD.decode(s))
            .map_err(|_| bad())?;
        serde_json::from_slice(&raw).map_err(|_| bad())
    }
}

/// Which revision a list reads at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAt {
    /// A consistent read of the current state.
    Current,
    /// The current state, once the store has reached this revision.
    NotOlderThan(u64),
    /// Exactly this revision (a snapshot).
    Exact(u64),
}

/// A parsed list request.
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// The resource.
    pub resource: Resource,
    /// Restrict to a namespace.
    pub namespace: Option<String>,
    /// Selectors.
    pub selectors: Selectors,
    /// Page size (0 = everything).
    pub limit: usize,
    /// A continue token from a previous page.
    pub continue_token: Option<ContinueToken>,
    /// Which revision to read.
    pub read_at: ReadAt,
    /// The lagging-replica fault: reads that may come from a cache are served this far in the
    /// past (see [`crate::faults::Faults::set_lagging_replica`]).
    pub lag: std::time::Duration,
}

fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "resourceVersion: Invalid value: \"{s}\": must be an integer"
        ))
    })
}

/// Works out which revision to read from `resourceVersion` and `resourceVersionMatch`.
pub fn read_at(rv: Option<&str>, rv_match: Option<&str>) -> Result<ReadAt, ApiError> {
    let rv = rv.unwrap_or("");
    match (rv, rv_match.unwrap_or("")) {
        ("", "") => Ok(ReadAt::Current),
        ("", m) => Err(ApiError::bad_request(format!(
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"{m}\" is forbidden when resourceVersion is not provided"
        ))),
        ("0", "" | "NotOlderThan") => Ok(ReadAt::Current),
        (rv, "" | "NotOlderThan") => Ok(ReadAt::NotOlderThan(parse_rv(rv)?)),
        ("0", "Exact") => Err(ApiError::bad_request(
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )),
        (rv, "Exact") => Ok(ReadAt::Exact(parse_rv(rv)?)),
        (_, m) => Err(ApiError::bad_request(format!(
            "resourceVersionMatch: Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\""
        ))),
    }
}

/// Serves one list page as a pre-encoded `XxxList` body.
pub async fn list(store: &Store, req: &ListRequest) -> Result<Bytes, ApiError> {
    let r = req.resource;
    let (rev, after) = match &req.continue_token {
        Some(t) => {
            if t.rv < store.compacted_revision() {
                return Err(ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue value from the response to continue the list from the new revision.",
                ));
            }
            (t.rv, Some((t.ns.clone(), t.name.clone())))
        }
        None => {
            let lagged = (!req.lag.is_zero()).then(|| store.revision_before(req.lag));
            let rev = match req.read_at {
                ReadAt::Current => lagged.unwrap_or_else(|| store.current_revision()),
                ReadAt::NotOlderThan(want) | ReadAt::Exact(want) => {
                    if store.current_revision() < want
                        && !store.wait_for_revision(want, FUTURE_RV_WAIT).await
                    {
                        return Err(ApiError::Timeout {
                            message: format!(
                                "Too large resource version: {want}, current: {}",
                                store.current_revision()
                            ),
                        });
                    }
                    match req.read_at {
                        ReadAt::Exact(_) => want,
                        // A lagging cache asked for "not older than" waits until it has caught
                        // up that far: it serves no older than `want`, but no newer than itself.
                        _ => lagged.map_or_else(|| store.current_revision(), |l| l.max(want)),
                    }
                }
            };
            (rev, None)
        }
    };
    let limit = if req.limit == 0 {
        usize::MAX
    } else {
        req.limit
    };
    let sel = &req.selectors;
    let filter = |v: &serde_json::Value| sel.matches(v);
    let (items, more) = store.list_page(
        r,
        req.namespace.as_deref(),
        rev,
        after.as_ref(),
        limit,
        &filter,
    )?;
    let cont = if more {
        items.last().map(|last| {
            let key: Key = (
                crate::meta::meta_str(&last.value, "namespace").to_string(),
                crate::meta::meta_str(&last.value, "name").to_string(),
            );
            ContinueToken {
                rv: rev,
                ns: key.0,
                name: key.1,
            }
            .encode()
        })
    } else {
        None
    };
    let mut meta = serde_json::json!({"resourceVersion": rev.to_string()});
    if let Some(c) = cont {
        meta["continue"] = serde_json::Value::from(c);
    }
    if let Some(shard) = &sel.shard {
        // KEP-5866: the echo tells the client the server filtered (an old server omits it).
        meta["shardInfo"] = serde_json::json!({"selector": shard.text()});
    }
    let head =
        serde_json::json!({"kind": r.list_kind(), "apiVersion": r.api_version(), "metadata": meta});
    let head = serde_json::to_vec(&head).unwrap_or_default();
    let size: usize = items.iter().map(|i| i.bytes.len() + 1).sum();
    let mut body = BytesMut::with_capacity(head.len() + size + 16);
    // `{"kind":...,"metadata":{...}}` becomes `{"kind":...,"metadata":{...},"items":[...]}`.
    body.put_slice(&head[..head.len().saturating_sub(1)]);
    body.put_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.put_u8(b',');
        }
        body.put_slice(&item.bytes);
    }
    body.put_slice(b"]}");
    Ok(body.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continue_token_round_trips_and_garbage_is_a_bad_request() {
        let t = ContinueToken {
            rv: 42,
            ns: "ns".into(),
            name: "a".into(),
        };
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap(), t);
        assert_eq!(ContinueToken::decode("!!!").unwrap_err().code(), 400);
    }

    #[test]
    fn resource_version_match_is_interpreted_as_upstream() {
        assert_eq!(read_at(None, None).unwrap(), ReadAt::Current);
        assert_eq!(read_at(Some("0"), None).unwrap(), ReadAt::Current);
        assert_eq!(read_at(Some("7"), None).unwrap(), ReadAt::NotOlderThan(7));
        assert_eq!(read_at(Some("7"), Some("Exact")).unwrap(), ReadAt::Exact(7));
        assert_eq!(read_at(Some(""), Some("Exact")).unwrap_err().code(), 400);
        assert_eq!(read_at(Some("x"), None).unwrap_err().code(), 400);
    }

    #[tokio::test]
    async fn a_list_body_is_a_typed_list_with_the_revision() {
        let store = Store::new(100, None);
        store
            .create(
                Resource::Pods,
                "ns",
                serde_json::json!({"metadata": {"name": "a"}}),
                None,
            )
            .unwrap();
        let req = ListRequest {
            resource: Resource::Pods,
            namespace: None,
            selectors: Selectors::default(),
            limit: 0,
            continue_token: None,
            read_at: ReadAt::Current,
            lag: std::time::Duration::ZERO,
        };
        let body = list(&store, &req).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["kind"], "PodList");
        assert_eq!(
            v["metadata"]["resourceVersion"],
            store.current_revision().to_string()
        );
        assert_eq!(v["items"][0]["kind"], "Pod");
    }
}
