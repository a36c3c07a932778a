//! Scratch files of the tests: a directory per test, and the outside tools
//! that fill it (`openssl`, and `keytool` from the JDK xtask installs) run
//! so that a failure fails the test with the tool's own output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory for one test, `mm2-checkpoint-<kind>-<name>-<pid>` under
/// the system's temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// Creates the directory, removing what an earlier run left there.
    pub fn new(kind: &str, name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mm2-checkpoint-{kind}-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }

    /// `rel` under the directory, its parent directories created.
    pub fn path(&self, rel: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("create dirs");
        p
    }

    /// Writes `text` to `rel` under the directory; returns its path.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::write(&path, text).expect("write temp file");
        path
    }

    /// The text of `rel` under the directory.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.0.join(rel)).expect("read generated file")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `p` as UTF-8, for a command-line argument.
pub fn path_str(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs a store tool (`keytool` from the JDK xtask installs, `openssl`),
/// failing the test with its output if it fails.
pub fn tool(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program} (xtask installs a JDK; openssl from apt): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `openssl` with `args` in `dir`, failing the test with its stderr if
/// it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        output.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes `content` to the file `name` in `dir`.
pub fn write(dir: &Path, name: &str, content: &str) {
    std::fs::File::create(dir.join(name))
        .and_then(|mut f| f.write_all(content.as_bytes()))
        .expect("write file");
}
