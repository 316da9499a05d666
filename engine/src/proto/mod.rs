//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`), the wire format
//! kube-controller-manager speaks to the API server, read without generated types: [`wire`]
//! walks fields of borrowed bytes, [`envelope`] unwraps objects, lists, watch events and
//! Statuses, and the projections read their own messages (`PodView::from_protobuf`).

pub mod envelope;
pub mod wire;

pub use envelope::{
    Frames, List, MEDIA_TYPE, ProtoError, Status, Unknown, WATCH_MEDIA_TYPE, WatchEvent,
};
