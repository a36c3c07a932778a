//! `cargo xtask kafka up | down | status`: two real single-node KRaft clusters,
//! plus two more: one on an older Kafka and one that enforces ACLs.
//!
//! The end-to-end tests need a *source* and a *target* cluster, like MM2
//! itself. Each is one JVM running Apache Kafka in combined mode (broker and
//! controller in one process) on free loopback ports, with one listener per
//! way our client must be able to connect: PLAINTEXT, SASL_PLAINTEXT (PLAIN and
//! SCRAM-SHA-256/512), SSL, SSL with a required client certificate (mTLS), and
//! SASL_SSL (the SASL_PLAINTEXT mechanisms and users over TLS).
//!
//! The third cluster, `legacy`, runs Apache Kafka 3.9 with a PLAINTEXT
//! listener only: it exists to prove the client negotiates API versions down
//! to a 3.x broker. It is recorded under its own `legacy` key of
//! `clusters.json`, so readers that only know `source` and `target` are
//! unaffected. `cargo xtask soak` (which uses [`Layout::at`]) does not start it.
//!
//! A fourth cluster, `secure`, has the same listeners but enforces ACLs
//! (`StandardAuthorizer`, nothing allowed without an ACL). Its super user
//! `admin` is also the controller and inter-broker principal (SASL/PLAIN);
//! `mm2-source` and `mm2-target` are SCRAM-SHA-512 users with no grants, for
//! least-privilege tests.
//!
//! Everything lives under `<workspace>/target/kafka/`:
//!
//! ```text
//! clusters.json            what the tests read (schema: docs/testing.md)
//! tls/                     the throwaway CA, server and client certificates
//! oauth/                   the OAUTH listeners' JWKS and the key tests sign tokens with
//! <name>/server.properties broker configuration
//! <name>/pid               the broker JVM we started
//! <name>/data/             KRaft metadata and topic data (removed by `down`)
//! <name>/logs/broker.log   broker stdout/stderr (kept by `down`)
//! <name>/client-*.properties  ready-made configs for Kafka's Java CLI tools
//! ```
//!
//! Only processes recorded in our own pid files, whose command line names our
//! own `server.properties`, are ever signalled: other worktrees may run their
//! own clusters on the same machine.

mod commands;
mod config;
mod faults;
mod guard;
mod health;
mod layout;
mod oauth;
mod process;
mod start;
#[cfg(test)]
mod tests;

pub use commands::{down, status, up};
pub use faults::{kill_broker, pause_broker, restart_broker};
pub use guard::{ClustersGuard, GuardNotes};
pub use layout::{Layout, read_clusters_file};
pub(crate) use process::signal;
pub use start::raise_default_broker_heap;

// The clusters.json model is the `e2e` crate's: the tests read what this
// writes. The xtask names stay as aliases.
pub use e2e::{
    AclUsers, Cluster as ClusterInfo, Clusters as ClustersFile, Credentials,
    LegacyCluster as LegacyClusterInfo, Listener, Listeners, Password, PlaintextListener,
    SaslUsers, TlsFiles,
};
