//! `cargo xtask check-deploy`: checks the shipped deployment files.
//!
//! * `Dockerfile`: its `USER`, `EXPOSE`, `ENTRYPOINT` and `CMD` are the ones
//!   `cargo xtask image` writes ([`RUN_AS`], [`METRICS_PORT`], [`BINARY`],
//!   [`RUN_ARGS`]).
//! * `deploy/kubernetes/`: every manifest passes `kubernetes-validate
//!   --strict` (PyPI; it bundles the Kubernetes JSON schemas and needs no
//!   network) for each of [`kubernetes::KUBERNETES_VERSIONS`]; `kustomization.yaml` lists
//!   exactly the manifests other than the Secret example; the Deployment runs
//!   the image's default arguments and probes the port they serve; the
//!   Secret example's `mm2.properties` passes `mm2-checkpoint validate
//!   --strict`.
//! * `deploy/systemd/mm2-checkpoint.service`: `systemd-analyze verify`
//!   (Debian `systemd`) in a scratch root, with no diagnostics at all (it
//!   exits 0 on unknown keys and bad values, and only warns); its
//!   `ExecStart=` runs [`RUN_ARGS`].
//! * `deploy/helm/mm2-checkpoint/`: rendered and validated, see [`helm`].
//!
//! Each tool is first shown a broken copy (an unknown field, an unknown key)
//! and must reject it, so a tool that accepts everything fails the check.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::dist::artefact::{BINARY, METRICS_PORT, RUN_ARGS, RUN_AS};

mod helm;
mod kubernetes;

use kubernetes::{check_kubernetes, text, tool};

/// The systemd unit's file name.
const UNIT: &str = "mm2-checkpoint.service";
/// Where the unit expects the binary.
const UNIT_BINARY: &str = "/usr/local/bin/mm2-checkpoint";

/// `cargo xtask check-deploy`.
pub fn check_deploy(root: &Path, args: &[&str]) -> Result<()> {
    if let Some(arg) = args.first() {
        bail!("unknown argument `{arg}` to `cargo xtask check-deploy`");
    }
    let dockerfile = root.join("Dockerfile");
    check_dockerfile(
        &fs::read_to_string(&dockerfile)
            .with_context(|| format!("reading {}", dockerfile.display()))?,
    )
    .with_context(|| format!("{}", dockerfile.display()))?;
    eprintln!("xtask: Dockerfile: USER, EXPOSE, ENTRYPOINT and CMD match `cargo xtask image`");

    let scratch = root.join("target/check-deploy");
    if scratch.exists() {
        fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()))?;
    }
    fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    check_kubernetes(&root.join("deploy/kubernetes"), &scratch)?;
    check_systemd(&root.join("deploy/systemd").join(UNIT), &scratch)?;
    helm::check_chart(
        &root.join("deploy/helm/mm2-checkpoint"),
        &root.join("deploy/monitoring/alerts.yml"),
        &scratch,
    )?;
    fs::remove_dir_all(&scratch)?;
    eprintln!("xtask: check-deploy passed");
    Ok(())
}

// ---------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------

/// The Dockerfile's instructions agree with the image `cargo xtask image`
/// writes.
fn check_dockerfile(text: &str) -> Result<()> {
    let instruction = |name: &str| -> Result<&str> {
        let found: Vec<&str> = text
            .lines()
            .filter_map(|line| {
                let (word, rest) = line.trim().split_once(char::is_whitespace)?;
                (word == name).then_some(rest.trim())
            })
            .collect();
        match found.as_slice() {
            [one] => Ok(one),
            _ => bail!("expected one {name} instruction, found {}", found.len()),
        }
    };
    let exec_form = |name: &str| -> Result<Value> {
        let rest = instruction(name)?;
        serde_json::from_str(rest).with_context(|| format!("{name} {rest} is not a JSON array"))
    };
    ensure!(
        instruction("USER")? == RUN_AS,
        "USER is not {RUN_AS}, the image's user"
    );
    ensure!(
        instruction("EXPOSE")? == METRICS_PORT.to_string(),
        "EXPOSE is not {METRICS_PORT}, the metrics port"
    );
    ensure!(
        exec_form("ENTRYPOINT")? == json!([format!("/{BINARY}")]),
        "ENTRYPOINT is not [\"/{BINARY}\"]"
    );
    ensure!(
        exec_form("CMD")? == json!(RUN_ARGS),
        "CMD is not {}, the image's default arguments",
        json!(RUN_ARGS)
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// systemd
// ---------------------------------------------------------------------------

const SYSTEMD_HINT: &str = "Debian: apt-get install systemd";

/// The unit directory of this machine's systemd, copied into the scratch
/// root so that `verify` finds the targets the unit names.
fn system_units() -> Result<PathBuf> {
    ["/usr/lib/systemd/system", "/lib/systemd/system"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("multi-user.target").is_file())
        .with_context(|| {
            format!("no systemd unit directory with multi-user.target ({SYSTEMD_HINT})")
        })
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &dest)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path())?, &dest)?;
        } else {
            fs::copy(entry.path(), &dest)?;
        }
    }
    Ok(())
}

/// `systemd-analyze verify` of `unit` (text) in a scratch root under
/// `scratch` holding this machine's system units, a stand-in executable at
/// the unit's binary path, and the unit: everything it said (it exits 0 on
/// unknown keys and bad values, and only warns), with its exit status.
fn verify_unit(unit: &str, scratch: &Path, units: &Path) -> Result<(bool, String)> {
    let root = scratch.join("systemd-root");
    if root.exists() {
        fs::remove_dir_all(&root)?;
    }
    copy_dir(units, &root.join("usr/lib/systemd/system"))?;
    let binary = root.join(UNIT_BINARY.trim_start_matches('/'));
    fs::create_dir_all(binary.parent().context("the binary path has a parent")?)?;
    // `verify` checks only that the program exists and is executable.
    fs::write(&binary, "#!/bin/sh\nexit 0\n")?;
    fs::set_permissions(&binary, fs::Permissions::from_mode(0o755))?;
    let dir = root.join("etc/systemd/system");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join(UNIT), unit)?;
    let root_arg = format!("--root={}", root.display());
    let out = tool(
        "systemd-analyze",
        &["verify", &root_arg, "--man=no", UNIT],
        SYSTEMD_HINT,
    )?;
    Ok((out.status.success(), text(&out)))
}

fn check_systemd(path: &Path, scratch: &Path) -> Result<()> {
    let unit = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let exec: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ExecStart="))
        .collect();
    let expected = format!("{UNIT_BINARY} {}", RUN_ARGS.join(" "));
    ensure!(
        exec == [expected.as_str()],
        "{}: ExecStart= must be `{expected}` (the image's default arguments), found {exec:?}",
        path.display()
    );

    let units = system_units()?;
    // Control: an unknown key must draw a diagnostic.
    let broken = unit.replacen("[Service]\n", "[Service]\nProtectSystemm=strict\n", 1);
    ensure!(broken != unit, "{}: no [Service] section", path.display());
    let (_, said) = verify_unit(&broken, scratch, &units)?;
    ensure!(
        said.contains("ProtectSystemm"),
        "control: systemd-analyze verify said nothing about an unknown key, so its silence \
         on the unit proves nothing: {said:?}"
    );
    eprintln!("xtask: control: systemd-analyze verify reports an unknown key");

    let (ok, said) = verify_unit(&unit, scratch, &units)?;
    ensure!(
        ok && said.is_empty(),
        "systemd-analyze verify {}: {}",
        path.display(),
        if said.is_empty() { "failed" } else { &said }
    );
    eprintln!(
        "xtask: systemd-analyze verify {}: no diagnostics",
        path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dockerfile_runs_what_the_image_runs() {
        check_dockerfile(include_str!("../../Dockerfile")).unwrap();
    }

    #[test]
    fn the_dockerfile_in_docs_deploy_md_runs_what_the_image_runs() {
        let doc = include_str!("../../docs/deploy.md");
        let (_, rest) = doc.split_once("```dockerfile\n").unwrap();
        let (block, _) = rest.split_once("```").unwrap();
        check_dockerfile(block).unwrap();
    }

    #[test]
    fn a_dockerfile_without_the_metrics_endpoint_is_refused() {
        let old =
            include_str!("../../Dockerfile").replace(r#", "--metrics-addr", "[::]:9464"]"#, "]");
        assert!(old.contains(r#"CMD ["run", "--config", "/etc/mm2-checkpoint/mm2.properties"]"#));
        let err = check_dockerfile(&old).unwrap_err().to_string();
        assert!(err.contains("CMD"), "{err}");
    }
}
