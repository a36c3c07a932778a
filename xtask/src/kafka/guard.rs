//! [`ClustersGuard`]: the test clusters for the length of one command, stopped
//! when it ends only if the guard started them.

use std::time::Instant;

use anyhow::Result;

use super::commands::{down, up};
use super::layout::Layout;

/// How a [`ClustersGuard`] talks about stopping (or keeping) the clusters.
#[derive(Debug, Clone, Copy)]
pub struct GuardNotes {
    /// What its messages start with (`xtask`, `bench`).
    pub prefix: &'static str,
    /// Printed after `<prefix>: ` when the clusters were up before and stay
    /// up; `None` says nothing.
    pub leaving: Option<&'static str>,
    /// Whether to report how long `kafka down` took (as a phase of `xtask test`).
    pub timed: bool,
}

/// The test clusters of `layout` for the length of one command: [`up`] when
/// made, [`down`] when dropped, but only if this guard started them (clusters
/// that were running before stay running). Dropping also stops them on every
/// error path after `up`.
#[derive(Debug)]
pub struct ClustersGuard {
    layout: Layout,
    started_here: bool,
    notes: GuardNotes,
}

impl ClustersGuard {
    /// Brings the clusters up if they are not.
    pub fn up(layout: &Layout, notes: GuardNotes) -> Result<ClustersGuard> {
        let started_here = up(layout)?;
        Ok(ClustersGuard {
            layout: layout.clone(),
            started_here,
            notes,
        })
    }
}

impl Drop for ClustersGuard {
    fn drop(&mut self) {
        let GuardNotes {
            prefix,
            leaving,
            timed,
        } = self.notes;
        if self.started_here {
            let phase = Instant::now();
            if let Err(e) = down(&self.layout) {
                eprintln!("{prefix}: warning: stopping the clusters failed: {e:#}");
            }
            if timed {
                eprintln!(
                    "{prefix}: phase `kafka down` took {:.1}s",
                    phase.elapsed().as_secs_f64()
                );
            }
        } else if let Some(note) = leaving {
            eprintln!("{prefix}: {note}");
        }
    }
}
