//! Command output on stdout and stderr that survives a closed pipe.
//!
//! `print!` and `eprintln!` panic when the write fails, and the release
//! profile aborts on panic, so `validate | head -1` or a daemon whose stderr
//! reader went away would die with SIGABRT. These functions write the whole
//! text and drop a write error: the output is lost, the command goes on and
//! its exit code does not change (see docs/operations.md, "Exit codes").

use std::io::Write;

/// Writes `text` to stdout and flushes it, ignoring errors.
pub fn out(text: &str) {
    out_bytes(text.as_bytes());
}

/// Writes `bytes` to stdout and flushes them, ignoring errors.
pub fn out_bytes(bytes: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(bytes);
    let _ = stdout.flush();
}

/// Writes `text` and a newline to stderr, ignoring errors.
pub fn err_line(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.write_all(b"\n");
}
