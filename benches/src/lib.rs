//! Benchmark support crate (empty).
