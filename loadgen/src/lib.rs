//! tidemark-loadgen: a simulated Kubernetes API server (real HTTP on loopback, the semantics of
//! kube-apiserver for the kinds it serves) with fault injection, kubelet emulation and an
//! invariant oracle.
//!
//! Layout: [`apiserver`] (the HTTP face, authentication at its door, the admin endpoint),
//! [`admission`] (decoding and validation of writes), [`store`] (revisions, lists, watches,
//! deletion, patches), [`faults`], [`kubelet`] (emulation), [`oracle`] (invariants),
//! [`scenario`] and [`stress`] (`loadgen stress`), [`bench`] and [`campaign`] (`loadgen bench`,
//! `loadgen campaign`), [`rbac`].
//!
//! Shape: [`store`] holds every object as JSON plus its pre-encoded bytes under one short lock;
//! each write takes the next global revision and appends an event (with the previous object)
//! to a log that watches walk from their position ([`watch`](store::watch_stream)) and that lists undo to rebuild
//! the snapshot a `continue` token pins ([`list`](store::list)). [`handlers`](apiserver::handlers) maps HTTP onto it, [`oracle`]
//! checks invariants inside the same lock, so the state at each revision is exact; it sees each
//! Pod create and delete arrive ([`arrival`](apiserver::arrival), before any injected latency) and judges it against
//! the state at its arrival.
//!
//! Deliberate choices, as the real kube-apiserver does unless noted:
//! - An update that changes nothing takes no revision and emits no event (upstream skips
//!   no-op writes), so `update_with` of an identical object returns the stored one.
//! - Garbage collection ([`gc`](store::gc), [`deletion`](store::deletion)) follows the *controller* ownerReference only
//!   and runs inside the owner's commit, at the next revisions (upstream's collector is
//!   asynchronous and considers every ownerReference; the order is the same). Orphan
//!   removes the owner's references from the dependents before the owner goes (upstream
//!   holds the owner with the `orphan` finalizer meanwhile). Deleting a Namespace removes
//!   every object in it at once (upstream: phase Terminating, then the namespace controller).
//! - Only Pods are deleted gracefully, and only when bound to a node and not finished, as
//!   upstream; the kubelet emulation removes them after `min(grace, pod_termination_after)`.
//!   Without the kubelet a bound Pod stays terminating, as on a cluster whose node is gone.
//! - Writes over HTTP (create, update, patch, the status subresource) are decoded and
//!   validated as upstream: a field controllers decide on with the wrong JSON type is a
//!   `400` decode error worded as Go's decoder ([`typecheck`](admission::typecheck); a patched object's is a `422`
//!   on the field `patch`), a value out of range or not among the supported ones a `422`
//!   with causes ([`validation`](admission::validation), [`field_rules`](admission::field_rules): names, labels, required fields, selectors
//!   against templates, counts, enums, status counts). In-process writes
//!   ([`ApiServer::create`]) are not checked, and [`raw::store_raw`](apiserver::raw::store_raw) (admin `PUT
//!   /raw/{plural}/{namespace}/{name}`) stores an object exactly as given: the
//!   hostile-server simulation, for tests of what the manager does with objects
//!   kube-apiserver refuses. Creating in a namespace that does not exist is allowed.
//! - `fieldValidation` looks at top-level fields only (unknown nested fields are kept).
//! - Strategic merge patch ([`patch`](store::patch)) knows the merge keys of the served kinds' lists
//!   (containers, volumes, env by name; conditions by type; ownerReferences by uid; ...),
//!   `$patch: delete|replace` and `$deleteFromPrimitiveList`; `$retainKeys` and
//!   `$setElementOrder` are ignored. Server-side apply is create-or-strategic-merge with a
//!   required `fieldManager`: no managedFields, no conflict detection, fields left out of
//!   the applied configuration are not removed; apply bodies must be JSON (kubectl and
//!   kube-rs send JSON).
//! - Objects are encoded while the write lock is held (the resourceVersion is only known
//!   there); lists and watches never re-encode.
//! - The kubelet emulation ([`kubelet`], [`nodes`](kubelet::nodes)) registers the system namespaces, a
//!   Ready Node per fake node and its Lease in `kube-node-lease` at start (only when it is
//!   enabled), starts Pods, completes Job Pods, removes terminating Pods, and renews Leases
//!   (stoppable per node with [`ApiServer::stop_lease_renewal`]). Node conditions are never
//!   changed by it: a stopped Lease is the only sign of a silent node.
//! - Updates of the main resource check immutable fields (workload selectors, a Job's
//!   template, a Pod's spec except images, tolerations, activeDeadlineSeconds and
//!   terminationGracePeriodSeconds).
//! - A watch's `timeoutSeconds` is an int64 (beyond it `400`, as upstream's parameter
//!   decoding), capped at a year (upstream's Duration arithmetic would wrap).
//! - Injected request latency ([`request_faults`]) stands for the time before a request reaches
//!   storage: a request whose `timeout` query parameter passes first is answered `504 Timeout`
//!   and never applied, as kube-apiserver does.
//! - Request bodies are JSON only: protobuf (`kubectl create job|deployment ...`) is 415,
//!   and lists are never served as `Table`, so `kubectl get` prints NAME and AGE only.
//! - The OpenAPI documents ([`openapi`](apiserver::openapi)) list every served path and kind with loose schemas
//!   (no field types below the top level): enough for kubectl to validate on the server
//!   (`fieldValidation`), not for `kubectl explain`. `/openapi/v2` is JSON only (406 for a
//!   protobuf-only `Accept`).
//! - CustomResourceDefinitions ([`crd`]) are validated (the essentials, `422` with causes) and
//!   established at once; their resource ([`Resource::Custom`], interned process-wide in
//!   [`resource::custom`], served per store by [`customs`](store::customs)) is then a resource
//!   like the built-ins: discovery, OpenAPI, lists, watches, faults, RBAC, garbage collection,
//!   the status subresource. Only the storage version is served (no conversion); strategic
//!   merge patch is `415`; a CRD's names, scope, versions and subresources cannot change
//!   (`422`: delete and re-create it); deleting it deletes its objects first. In-process:
//!   [`ApiServer::define`] or [`ApiServer::apply`] with the CRD before its objects.

pub mod admission;
pub mod apiserver;
pub mod bench;
pub mod campaign;
pub mod clock;
pub mod crd;
pub mod faults;
pub mod kubelet;
pub mod logs;
pub mod meta;
pub mod oracle;
pub mod progress;
pub mod protobuf;
pub mod rbac;
pub mod resource;
pub mod scenario;
pub mod sibling;
pub mod store;
pub mod stress;
pub mod workload;

#[cfg(test)]
mod fuzz_tests;

pub use apiserver::server::{ApiServer, ServerConfig, ServerError, start};
pub use apiserver::status::ApiError;
pub use faults::Faults;
pub use oracle::{ReplicaSetTruth, Verb, Violation, ViolationKind, WriteRecord};
pub use resource::Resource;
pub use store::deletion::{DeleteOptions, Deleted, Propagation};

// Modules other crates (the manager's tests, the benches) reach by their paths of before the
// grouping.
pub use apiserver::kubeconfig;
pub use faults::{hostile, request_faults};
pub use oracle::node as node_oracle;
pub use stress::{mode, report, run_as};
