//! What a write over HTTP must pass before it is stored, as kube-apiserver checks it: field
//! types as Go's decoder reads them ([`typecheck`], [`typecheck_schema`]), then validation
//! ([`validation`]) with the ranges and enumerations of the fields controllers decide on
//! ([`field_rules`]).

pub mod field_rules;
pub mod typecheck;
pub mod typecheck_schema;
pub mod validation;
