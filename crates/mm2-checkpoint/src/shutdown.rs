//! Graceful shutdown: one shared [`ShutdownSignal`], triggered by SIGTERM/SIGINT.
//! SIGHUP stops nothing: it is logged, and the process carries on
//! (docs/operations.md, "Stopping").
//!
//! The first signal asks every task to finish what it is doing (end the round,
//! leave nothing half-written) and return. A second signal means the operator
//! is not willing to wait: the process exits at once with [`FORCED_EXIT_CODE`].
//!
//! The signal is a `tokio::sync::watch` channel holding the [`ShutdownReason`]
//! rather than a bare cancellation token, so whoever stops last can log *why*
//! the daemon stopped.

use std::fmt;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

/// Exit code used when a second signal forces the process to stop before the
/// graceful shutdown finished (a runtime failure: work may be cut short).
pub const FORCED_EXIT_CODE: i32 = 1;

/// Why the daemon is stopping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownReason {
    /// SIGTERM (e.g. `systemctl stop`, Kubernetes pod termination).
    Terminate,
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// Asked for by the program itself (e.g. a fatal error in another task).
    Requested,
}

impl fmt::Display for ShutdownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownReason::Terminate => "SIGTERM",
            ShutdownReason::Interrupt => "SIGINT",
            ShutdownReason::Requested => "shutdown requested",
        })
    }
}

/// A cheap-to-clone handle shared by every task: trigger it once, and every
/// clone sees it.
#[derive(Clone, Debug)]
pub struct ShutdownSignal {
    sender: Arc<watch::Sender<Option<ShutdownReason>>>,
}

impl Default for ShutdownSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl ShutdownSignal {
    /// A signal that has not been triggered.
    pub fn new() -> Self {
        let (sender, _) = watch::channel(None);
        Self {
            sender: Arc::new(sender),
        }
    }

    /// Triggers shutdown. Returns `true` if this call triggered it, `false` if it
    /// had already been triggered (the first reason is kept).
    pub fn trigger(&self, reason: ShutdownReason) -> bool {
        self.sender.send_if_modified(|current| {
            if current.is_some() {
                false
            } else {
                *current = Some(reason);
                true
            }
        })
    }

    /// The reason, once triggered.
    pub fn reason(&self) -> Option<ShutdownReason> {
        *self.sender.borrow()
    }

    /// Whether shutdown has been triggered.
    pub fn is_triggered(&self) -> bool {
        self.reason().is_some()
    }

    /// Completes when shutdown is triggered (at once if it already was). Cancel
    /// safe: use it in `tokio::select!` next to the work it interrupts.
    pub async fn triggered(&self) -> ShutdownReason {
        let mut receiver = self.sender.subscribe();
        match receiver.wait_for(Option::is_some).await {
            Ok(reason) => reason.unwrap_or(ShutdownReason::Requested),
            // The sender lives in `self`, so the channel cannot close while we wait.
            Err(_) => ShutdownReason::Requested,
        }
    }
}

/// Listens for SIGTERM and SIGINT in a background task: the first triggers
/// `shutdown`, a second calls `force_exit` with the second signal's reason.
/// SIGHUP (sent by many supervisors and log rotators) is logged and ignored:
/// the configuration is read once, at start.
///
/// Pass [`exit_now`] as `force_exit` in the binary. Must be called inside a
/// tokio runtime. Fails if the OS refuses the signal handlers.
pub fn install_signal_handlers(
    shutdown: ShutdownSignal,
    force_exit: impl FnOnce(ShutdownReason) + Send + 'static,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let reason = tokio::select! {
                Some(()) = term.recv() => ShutdownReason::Terminate,
                Some(()) = int.recv() => ShutdownReason::Interrupt,
                Some(()) = hup.recv() => {
                    hung_up();
                    continue;
                }
                else => return,
            };
            if sender.send(reason).is_err() {
                return;
            }
        }
    });
    Ok(tokio::spawn(handle_signals(shutdown, receiver, force_exit)))
}

/// What SIGHUP does: one WARN line, nothing else.
fn hung_up() {
    tracing::warn!(
        signal = "SIGHUP",
        "ignored: the configuration is read only at start (restart to apply a changed file); \
         carrying on"
    );
}

/// The force-exit action of the binary: log and leave with [`FORCED_EXIT_CODE`].
pub fn exit_now(reason: ShutdownReason) {
    tracing::error!(signal = %reason, "second signal: exiting now without finishing shutdown");
    std::process::exit(FORCED_EXIT_CODE);
}

/// The signal-handling policy, apart from the OS: the first signal received
/// triggers `shutdown`, the second calls `force_exit`.
async fn handle_signals(
    shutdown: ShutdownSignal,
    mut signals: mpsc::UnboundedReceiver<ShutdownReason>,
    force_exit: impl FnOnce(ShutdownReason),
) {
    let Some(first) = signals.recv().await else {
        return;
    };
    if shutdown.trigger(first) {
        tracing::info!(signal = %first, "shutting down; send the signal again to exit at once");
    } else {
        tracing::info!(signal = %first, "already shutting down; send the signal again to exit at once");
    }
    if let Some(second) = signals.recv().await {
        force_exit(second);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn trigger_wakes_every_clone_with_the_first_reason() {
        let shutdown = ShutdownSignal::new();
        let waiter = {
            let s = shutdown.clone();
            tokio::spawn(async move { s.triggered().await })
        };
        assert!(!shutdown.is_triggered());
        assert!(shutdown.trigger(ShutdownReason::Terminate));
        assert!(!shutdown.trigger(ShutdownReason::Interrupt));
        let reason = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("waiter woke")
            .expect("waiter task");
        assert_eq!(reason, ShutdownReason::Terminate);
        assert_eq!(shutdown.reason(), Some(ShutdownReason::Terminate));
    }

    #[tokio::test]
    async fn triggered_returns_at_once_when_already_triggered() {
        let shutdown = ShutdownSignal::new();
        shutdown.trigger(ShutdownReason::Requested);
        let reason = tokio::time::timeout(Duration::from_secs(1), shutdown.triggered()).await;
        assert_eq!(reason, Ok(ShutdownReason::Requested));
    }

    #[tokio::test]
    async fn first_signal_triggers_shutdown_without_forcing_exit() {
        let shutdown = ShutdownSignal::new();
        let (tx, rx) = mpsc::unbounded_channel();
        let (forced_tx, mut forced_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(handle_signals(shutdown.clone(), rx, move |r| {
            let _ = forced_tx.send(r);
        }));
        tx.send(ShutdownReason::Interrupt).expect("send");
        let reason = tokio::time::timeout(Duration::from_secs(5), shutdown.triggered()).await;
        assert_eq!(reason, Ok(ShutdownReason::Interrupt));
        drop(tx);
        task.await.expect("handler task");
        assert_eq!(forced_rx.recv().await, None);
    }

    #[tokio::test]
    async fn second_signal_forces_exit() {
        let shutdown = ShutdownSignal::new();
        let (tx, rx) = mpsc::unbounded_channel();
        let (forced_tx, mut forced_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(handle_signals(shutdown.clone(), rx, move |r| {
            let _ = forced_tx.send(r);
        }));
        tx.send(ShutdownReason::Terminate).expect("send");
        tx.send(ShutdownReason::Interrupt).expect("send");
        task.await.expect("handler task");
        assert_eq!(forced_rx.recv().await, Some(ShutdownReason::Interrupt));
        assert_eq!(shutdown.reason(), Some(ShutdownReason::Terminate));
    }

    /// Sends real SIGTERMs to this test process (tokio's handler replaces the
    /// default action once installed, so the process survives).
    #[tokio::test]
    async fn real_sigterm_triggers_shutdown_and_a_second_forces_exit() {
        let shutdown = ShutdownSignal::new();
        let (forced_tx, mut forced_rx) = mpsc::unbounded_channel();
        install_signal_handlers(shutdown.clone(), move |r| {
            let _ = forced_tx.send(r);
        })
        .expect("install handlers");
        let pid = std::process::id().to_string();
        let kill = || {
            let status = std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .expect("run kill");
            assert!(status.success());
        };
        kill();
        let reason = tokio::time::timeout(Duration::from_secs(5), shutdown.triggered()).await;
        assert_eq!(reason, Ok(ShutdownReason::Terminate));
        kill();
        let forced = tokio::time::timeout(Duration::from_secs(5), forced_rx.recv()).await;
        assert_eq!(forced, Ok(Some(ShutdownReason::Terminate)));
    }
}
