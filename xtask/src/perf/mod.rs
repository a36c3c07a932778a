//! Performance tasks: `cargo xtask bench [mm2|latency]` ([`bench`](mod@bench)),
//! `cargo xtask soak` ([`soak`]) and `cargo xtask footprint`
//! ([`footprint`]).
//!
//! They sit together because they measure the binary rather than check it:
//! all three start the real `mm2-checkpoint`, drive it against real Kafka
//! clusters and read its process figures (through [`crate::procfs`]) and its
//! HTTP endpoints (through [`crate::probe`]).
//!
//! Why a module of xtask and not a `perf` crate of its own (as tansu's
//! `nisshi-perf` or quinn's `perf/`): those are stand-alone load generators
//! that run against any server, so they earn their own binary. Ours are not:
//! each one leans on xtask's test-cluster harness ([`crate::kafka`]'s layout
//! and [`crate::kafka::ClustersGuard`]), its seeding ([`crate::demo`],
//! [`crate::dist::run`]) and its dist artefacts
//! ([`crate::dist::artefact::Package`]), and
//! is started only through `cargo xtask`. A crate would have to take that
//! harness along (a second library crate shared with xtask) or copy it, and
//! would add a workspace member to build and lint, for no user outside
//! xtask. The criterion micro-benchmarks stay where cargo expects them, in
//! each crate's `benches/`. A crate becomes worth it if one of these grows
//! into a tool pointed at arbitrary clusters.

pub mod bench;
pub mod footprint;
pub mod soak;
