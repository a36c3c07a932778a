//! Shared helpers for the end-to-end tests: the cluster file written by
//! `cargo xtask kafka up`.
