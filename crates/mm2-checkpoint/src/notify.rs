//! systemd's service notification protocol, for `Type=notify` units
//! (docs/deploy.md, "systemd"): a datagram of `KEY=value` lines sent to the
//! Unix socket named by `NOTIFY_SOCKET`. Written here with the standard
//! library's Unix sockets; no libsystemd.
//!
//! The daemon says `READY=1` once it has started (configuration read, the
//! HTTP endpoint bound, the flows starting), keeps `STATUS=` in step with
//! `/readyz`, pings `WATCHDOG=1` at half the unit's `WatchdogSec=` while its
//! runtime is alive, and says `STOPPING=1` when a signal asks it to stop.
//! Without `NOTIFY_SOCKET` (not under systemd) nothing is sent.

use std::io;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

use crate::metrics::Readiness;
use crate::shutdown::ShutdownSignal;

/// How often `STATUS=` is brought in step with the readiness.
const STATUS_EVERY: Duration = Duration::from_secs(1);

/// A connection to the service manager's notification socket.
#[derive(Debug)]
pub struct Notifier {
    socket: UnixDatagram,
    addr: SocketAddr,
}

impl Notifier {
    /// The notifier `NOTIFY_SOCKET` names, `None` when the variable is unset
    /// or empty (not run by systemd as `Type=notify`).
    pub fn from_env() -> io::Result<Option<Notifier>> {
        match std::env::var_os("NOTIFY_SOCKET") {
            Some(path) if !path.is_empty() => {
                let path = path.to_str().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "NOTIFY_SOCKET is not UTF-8")
                })?;
                Notifier::to(path).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A notifier sending to `path`: a file system path, or an abstract
    /// socket name written with a leading `@`.
    pub fn to(path: &str) -> io::Result<Notifier> {
        let addr = match path.strip_prefix('@') {
            Some(name) => abstract_addr(name)?,
            None => SocketAddr::from_pathname(path)?,
        };
        Ok(Notifier {
            socket: UnixDatagram::unbound()?,
            addr,
        })
    }

    /// Sends one message (`KEY=value` lines).
    pub fn send(&self, message: &str) -> io::Result<()> {
        self.socket
            .send_to_addr(message.as_bytes(), &self.addr)
            .map(drop)
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn abstract_addr(name: &str) -> io::Result<SocketAddr> {
    #[cfg(target_os = "android")]
    use std::os::android::net::SocketAddrExt;
    #[cfg(target_os = "linux")]
    use std::os::linux::net::SocketAddrExt;
    SocketAddr::from_abstract_name(name.as_bytes())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn abstract_addr(_name: &str) -> io::Result<SocketAddr> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "abstract socket names exist only on Linux",
    ))
}

/// The watchdog interval systemd asks for (`WATCHDOG_USEC`), if it is meant
/// for this process (`WATCHDOG_PID` unset or ours).
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID")
        && pid.parse::<u32>().ok() != Some(std::process::id())
    {
        return None;
    }
    (usec > 0).then(|| Duration::from_micros(usec))
}

/// The `STATUS=` text of a readiness.
fn status_line(readiness: &Readiness) -> String {
    match readiness.status() {
        Ok(()) => "STATUS=ready".to_owned(),
        // One line: systemctl shows the status on one.
        Err(unmet) => format!("STATUS=not ready: {}", unmet.replace('\n', "; ")),
    }
}

/// Tells the service manager the daemon started, keeps its status and
/// watchdog up to date, and tells it when the daemon stops. Returns when
/// `shutdown` fires. A failed send is logged once and not retried.
pub async fn serve(
    notifier: Notifier,
    readiness: Readiness,
    watchdog: Option<Duration>,
    shutdown: ShutdownSignal,
) {
    let mut warned = false;
    let mut send = |message: &str| {
        if let Err(e) = notifier.send(message)
            && !std::mem::replace(&mut warned, true)
        {
            tracing::warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)");
        }
    };
    let mut status = status_line(&readiness);
    send(&format!("READY=1\n{status}"));
    let mut status_tick = tokio::time::interval(STATUS_EVERY);
    // Half the interval, as systemd recommends; a long one still pings.
    let mut watchdog_tick =
        tokio::time::interval(watchdog.map_or(Duration::from_secs(3600), |w| w / 2));
    loop {
        tokio::select! {
            _ = shutdown.triggered() => break,
            _ = status_tick.tick() => {
                let now = status_line(&readiness);
                if now != status {
                    send(&now);
                    status = now;
                }
            }
            _ = watchdog_tick.tick(), if watchdog.is_some() => send("WATCHDOG=1"),
        }
    }
    send("STOPPING=1\nSTATUS=stopping");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receiver(dir: &std::path::Path) -> (UnixDatagram, String) {
        let path = dir.join("notify.sock");
        let socket = UnixDatagram::bind(&path).expect("bind");
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        (socket, path.to_str().expect("utf-8").to_owned())
    }

    fn recv(socket: &UnixDatagram) -> String {
        let mut buf = [0u8; 4096];
        let n = socket.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mm2-notify-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[tokio::test]
    async fn ready_status_watchdog_and_stopping_reach_the_socket() {
        let dir = temp_dir("serve");
        let (socket, path) = receiver(&dir);
        let readiness = Readiness::default();
        let shutdown = ShutdownSignal::new();
        let task = tokio::spawn(serve(
            Notifier::to(&path).expect("notifier"),
            readiness.clone(),
            Some(Duration::from_millis(200)),
            shutdown.clone(),
        ));
        let first = tokio::task::spawn_blocking({
            let socket = socket.try_clone().expect("clone");
            move || recv(&socket)
        })
        .await
        .expect("recv");
        assert!(
            first.starts_with("READY=1\nSTATUS=not ready: startup: "),
            "{first}"
        );
        readiness.set_ready("startup");
        let mut seen = Vec::new();
        while !(seen.iter().any(|m| m == "STATUS=ready") && seen.iter().any(|m| m == "WATCHDOG=1"))
        {
            let socket = socket.try_clone().expect("clone");
            seen.push(
                tokio::task::spawn_blocking(move || recv(&socket))
                    .await
                    .expect("recv"),
            );
            assert!(seen.len() < 50, "{seen:?}");
        }
        shutdown.trigger(crate::shutdown::ShutdownReason::Terminate);
        task.await.expect("serve");
        let mut last = recv(&socket);
        while last == "WATCHDOG=1" || last.starts_with("STATUS=") {
            last = recv(&socket);
        }
        assert_eq!(last, "STOPPING=1\nSTATUS=stopping");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn abstract_names_and_bad_paths() {
        let name = format!("mm2-notify-test-{}", std::process::id());
        let socket = UnixDatagram::bind_addr(&abstract_addr(&name).expect("addr")).expect("bind");
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        Notifier::to(&format!("@{name}"))
            .expect("notifier")
            .send("READY=1")
            .expect("send");
        assert_eq!(recv(&socket), "READY=1");
        // Nobody listens there: the send fails, it does not panic.
        let gone = Notifier::to("/nonexistent/notify.sock").expect("notifier");
        assert!(gone.send("READY=1").is_err());
    }
}
