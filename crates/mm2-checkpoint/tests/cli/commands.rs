//! The command line itself: `--version`, `--help` and `help`, unknown or
//! missing subcommands, shell completions and the man page.

use super::*;

#[test]
fn version_names_target_and_tls_provider() {
    let (code, stdout, _) = run(&mut mm2(&["--version"]));
    assert_eq!(code, Some(0));
    assert!(
        stdout.starts_with(&format!("mm2-checkpoint {}\n", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("target: "), "{stdout}");
    assert!(
        ["graviola", "portable", "ring"]
            .iter()
            .any(|p| stdout.contains(&format!("tls provider: rustls with {p} ("))),
        "{stdout}"
    );
    // Forced, with the reason.
    let (code, stdout, _) = run(mm2(&["--version"]).env("MM2_TLS_PROVIDER", "portable"));
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("tls provider: rustls with portable (MM2_TLS_PROVIDER=portable; "),
        "{stdout}"
    );
}

#[test]
fn help_lists_subcommands_and_exit_codes() {
    let (code, stdout, _) = run(&mut mm2(&["--help"]));
    assert_eq!(code, Some(0));
    for word in [
        "validate",
        "run",
        "translate",
        "cutover",
        "status",
        "Exit codes:",
    ] {
        assert!(stdout.contains(word), "{word} missing:\n{stdout}");
    }
}

#[test]
fn unknown_subcommand_exits_2() {
    let (code, stdout, stderr) = run(&mut mm2(&["frobnicate"]));
    assert_eq!(code, Some(2));
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("unrecognized subcommand 'frobnicate'"),
        "{stderr}"
    );
}

#[test]
fn no_subcommand_exits_2() {
    let (code, _, stderr) = run(&mut mm2(&[]));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("Usage:"), "{stderr}");
}

#[test]
fn help_subcommand_prints_a_subcommands_help() {
    let (code, stdout, _) = run(&mut mm2(&["help", "translate"]));
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("Usage: mm2-checkpoint translate") && stdout.contains("--all-groups"),
        "{stdout}"
    );
}

/// Completion scripts come from the command definition: every subcommand
/// and option is in them; bash's parses.
#[test]
fn completions_cover_every_subcommand_and_option() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, stdout, stderr) = run(&mut mm2(&["completions", shell]));
        assert_eq!(code, Some(0), "{shell}: {stderr}");
        for word in [
            "translate",
            "validate",
            "completions",
            "all-groups",
            "log-level",
        ] {
            assert!(stdout.contains(word), "{shell}: {word} missing");
        }
    }
    let (_, script, _) = run(&mut mm2(&["completions", "bash"]));
    let dir = TempDir::new("cli", "completions");
    let file = dir.write("mm2-checkpoint.bash", &script);
    let status = Command::new("bash")
        .args(["-n", path(&file)])
        .status()
        .expect("bash -n");
    assert!(status.success(), "bash rejects the script");
    let (code, _, stderr) = run(&mut mm2(&["completions", "tcsh"]));
    assert_eq!(code, Some(2), "{stderr}");
}

/// The man page: a roff page with every subcommand's options and the exit codes.
#[test]
fn man_page_documents_every_subcommand_and_the_exit_codes() {
    let (code, page, _) = run(&mut mm2(&["man"]));
    assert_eq!(code, Some(0));
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq") || page.contains(".TH mm2-checkpoint 1"),
        "{page}"
    );
    for section in [
        "MM2-CHECKPOINT VALIDATE",
        "MM2-CHECKPOINT RUN",
        "MM2-CHECKPOINT TRANSLATE",
        "EXIT STATUS",
    ] {
        assert!(
            page.contains(&format!(".SH \"{section}\"")),
            "{section} missing"
        );
    }
    assert!(page.contains("group\\-regex"), "--group-regex missing");
    assert!(
        page.contains("translate \\-\\-apply"),
        "exit code 3 missing"
    );
}
