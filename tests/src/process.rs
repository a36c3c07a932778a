//! Running a child process with a deadline, for the Java helpers here and for
//! xtask's empty-root runs.

use std::io::{self, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a child run by [`output_within`] left behind.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status; `None` if it was still running at the deadline and
    /// was killed.
    pub status: Option<ExitStatus>,
    /// Everything it wrote to stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr.
    pub stderr: Vec<u8>,
}

/// Runs `cmd` with stdin closed, capturing stdout and stderr (drained on
/// threads, so a chatty child cannot block on a full pipe), and kills it if
/// it is still running after `timeout`.
pub fn output_within(cmd: &mut Command, timeout: Duration) -> io::Result<Finished> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Finished {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Reads `pipe` to its end on a thread; the thread returns what it read.
pub(crate) fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_status_of_a_finished_child_are_captured() {
        let run = output_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
        )
        .expect("sh runs");
        assert_eq!(run.status.and_then(|s| s.code()), Some(3));
        assert_eq!(run.stdout, b"out\n");
        assert_eq!(run.stderr, b"err\n");
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_and_reported_as_such() {
        let run = output_within(
            Command::new("sh").args(["-c", "echo started; exec sleep 30"]),
            Duration::from_millis(300),
        )
        .expect("sh runs");
        assert!(run.status.is_none());
        assert_eq!(run.stdout, b"started\n");
    }
}
