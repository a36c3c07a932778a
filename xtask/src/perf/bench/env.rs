//! The test clusters a bench runs against: those of `$MM2_CLUSTERS_FILE`, or
//! this worktree's, started for the bench if they are not up.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::kafka::{self, ClustersFile, ClustersGuard, GuardNotes, Layout};

/// The test clusters for a bench: those of `$MM2_CLUSTERS_FILE` (never started
/// or stopped here), or this worktree's, started if needed and stopped on drop
/// only if this started them.
pub(super) struct ClusterEnv {
    pub(super) file: ClustersFile,
    pub(super) path: PathBuf,
    /// This worktree's clusters, stopped on drop if started here; `None`
    /// for `$MM2_CLUSTERS_FILE`'s.
    _clusters: Option<ClustersGuard>,
}

impl ClusterEnv {
    pub(super) fn acquire(root: &Path) -> Result<ClusterEnv> {
        if let Some(path) = std::env::var_os("MM2_CLUSTERS_FILE") {
            let path = PathBuf::from(path);
            let text = fs::read_to_string(&path)
                .with_context(|| format!("reading $MM2_CLUSTERS_FILE {}", path.display()))?;
            let file = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            eprintln!("bench: using the clusters of {}", path.display());
            return Ok(ClusterEnv {
                file,
                path,
                _clusters: None,
            });
        }
        let layout = Layout::new(root);
        let clusters = ClustersGuard::up(
            &layout,
            GuardNotes {
                prefix: "bench",
                leaving: None,
                timed: false,
            },
        )?;
        // An error here drops `clusters`, which stops what it started.
        let file = kafka::read_clusters_file(&layout)?;
        Ok(ClusterEnv {
            file,
            path: layout.clusters_file(),
            _clusters: Some(clusters),
        })
    }

    pub(super) fn bootstrap(&self, name: &str) -> Result<String> {
        Ok(self
            .file
            .clusters
            .get(name)
            .with_context(|| format!("cluster `{name}` missing from {}", self.path.display()))?
            .bootstrap
            .plaintext
            .clone())
    }
}

/// `r` with a kafka-lite error turned into anyhow's, naming `what` failed.
pub(super) fn lite<T>(what: &str, r: Result<T, kafka_lite::Error>) -> Result<T> {
    r.map_err(|e| anyhow::anyhow!("{what}: {e}"))
}
