//! The simulated API server's HTTP face: start and stop ([`server`]), the handler that maps
//! requests onto the store ([`handlers`], [`routes`], [`options`]), discovery and OpenAPI, the
//! `Status` errors, authentication and authorization at the [`door`], the loopback admin
//! endpoint ([`admin`], [`raw`]), the kubeconfigs it hands out, and the moment a Pod write
//! [arrives](arrival) for the oracle.

pub mod admin;
pub mod arrival;
pub mod config;
pub mod discovery;
pub mod door;
pub mod handlers;
pub mod kubeconfig;
pub mod openapi;
pub(crate) mod options;
pub mod protobuf_responses;
pub mod raw;
pub mod request_timeout;
pub mod response;
pub mod routes;
pub mod server;
pub mod status;
pub mod write_ops;
