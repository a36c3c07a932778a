//! Where the clusters live (`<workspace>/target/kafka`, or the soak's own
//! root), their names, and reading `clusters.json`.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::ClustersFile;

/// Name (and directory) of the older-Kafka cluster.
pub(super) const LEGACY_NAME: &str = "legacy";

/// The clusters we run, in start order.
pub(super) const CLUSTER_NAMES: [&str; 3] = ["source", "target", SECURE_CLUSTER];
/// The cluster that enforces ACLs.
pub(super) const SECURE_CLUSTER: &str = "secure";

/// Paths under `<workspace>/target/kafka`.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `<workspace>/target/kafka`.
    pub root: PathBuf,
    /// Whether `up` also starts the `legacy` cluster.
    pub legacy: bool,
    /// Broker properties appended to every cluster's `server.properties`
    /// (the soak shortens the offset retention; the shared clusters have none).
    pub broker_overrides: Vec<(&'static str, &'static str)>,
}

impl Layout {
    /// The layout for this workspace.
    pub fn new(workspace: &Path) -> Self {
        Self {
            root: workspace.join("target").join("kafka"),
            legacy: true,
            broker_overrides: Vec::new(),
        }
    }

    /// A layout rooted at `root` instead (`cargo xtask soak` uses
    /// `target/kafka-soak`, so it never touches the shared test clusters).
    /// Such a layout runs no `legacy` cluster.
    pub fn at(root: PathBuf) -> Self {
        Self {
            root,
            legacy: false,
            broker_overrides: Vec::new(),
        }
    }

    /// `clusters.json`.
    pub fn clusters_file(&self) -> PathBuf {
        self.root.join("clusters.json")
    }

    pub(super) fn cluster_dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub(super) fn pid_file(&self, name: &str) -> PathBuf {
        self.cluster_dir(name).join("pid")
    }

    pub(super) fn config_file(&self, name: &str) -> PathBuf {
        self.cluster_dir(name).join("server.properties")
    }
}

/// Reads and parses `clusters.json`.
pub fn read_clusters_file(layout: &Layout) -> Result<ClustersFile> {
    let path = layout.clusters_file();
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}
