//! The `mm2-checkpoint` command-line entry point.

fn main() {
    eprintln!("mm2-checkpoint: the daemon is not built yet; see README.md");
    std::process::exit(2);
}
