//! `cargo xtask check-deploy`: checks the shipped deployment files.
//!
//! * `Dockerfile`: its `USER`, `EXPOSE`, `ENTRYPOINT` and `CMD` are the ones
//!   `cargo xtask image` writes ([`RUN_AS`], [`METRICS_PORT`], [`BINARY`],
//!   [`RUN_ARGS`]).
//! * `deploy/kubernetes/`: every manifest passes `kubernetes-validate
//!   --strict` (PyPI; it bundles the Kubernetes JSON schemas and needs no
//!   network) for each of [`KUBERNETES_VERSIONS`]; `kustomization.yaml` lists
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
use std::process::{Command, Output};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::dist::artefact::{BINARY, CONFIG_PATH, METRICS_PORT, RUN_ARGS, RUN_AS};

mod helm;

/// The Kubernetes versions the manifests are validated against: the oldest
/// we document (`unhealthyPodEvictionPolicy` is on by default from 1.27) and
/// the newest that kubernetes-validate 1.37 bundles.
pub const KUBERNETES_VERSIONS: [&str; 2] = ["1.29", "1.37"];

/// The Secret example, which `kustomization.yaml` leaves out on purpose.
const SECRET_EXAMPLE: &str = "secret.example.yaml";
const KUSTOMIZATION: &str = "kustomization.yaml";
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
// Kubernetes
// ---------------------------------------------------------------------------

/// Runs a tool, naming where to get it if it is missing.
fn tool(program: &str, args: &[&str], install: &str) -> Result<Output> {
    Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running `{program}` ({install})"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .trim()
    .to_owned()
}

const KUBERNETES_VALIDATE: &str = "kubernetes-validate";
const PIP_HINT: &str = "PyPI: pip install kubernetes-validate";

/// The YAML documents of `path` as JSON values, read with PyYAML (which
/// kubernetes-validate depends on).
fn yaml_documents(path: &Path) -> Result<Vec<Value>> {
    let file = path.to_str().context("a non-UTF-8 path")?;
    let out = tool(
        "python3",
        &[
            "-c",
            "import json, sys, yaml\n\
             print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]))",
            file,
        ],
        PIP_HINT,
    )?;
    ensure!(
        out.status.success(),
        "reading {} as YAML (PyYAML comes with kubernetes-validate; {PIP_HINT}): {}",
        path.display(),
        text(&out)
    );
    serde_json::from_slice(&out.stdout).with_context(|| format!("parsing {}", path.display()))
}

/// `kubernetes-validate --strict` on one file for every version: `Ok` with
/// the failures' messages (empty if it passed everywhere).
fn schema_failures(file: &Path) -> Result<Vec<String>> {
    let name = file.to_str().context("a non-UTF-8 path")?;
    let mut failures = Vec::new();
    for version in KUBERNETES_VERSIONS {
        let out = tool(
            KUBERNETES_VALIDATE,
            &["--strict", "--quiet", "-k", version, name],
            PIP_HINT,
        )?;
        if !out.status.success() {
            failures.push(format!("Kubernetes {version}: {}", text(&out)));
        }
    }
    Ok(failures)
}

fn check_kubernetes(dir: &Path, scratch: &Path) -> Result<()> {
    let mut files: Vec<String> = fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    ensure!(
        files.iter().any(|f| f == SECRET_EXAMPLE) && files.iter().any(|f| f == KUSTOMIZATION),
        "{} must hold {SECRET_EXAMPLE} and {KUSTOMIZATION}",
        dir.display()
    );
    let manifests: Vec<&String> = files.iter().filter(|f| *f != KUSTOMIZATION).collect();

    // Control: a Deployment with a misspelt field must be rejected.
    let deployment = yaml_documents(&dir.join("deployment.yaml"))?;
    let mut broken = deployment
        .first()
        .cloned()
        .context("deployment.yaml is empty")?;
    broken["spec"]["replicass"] = json!(1);
    let broken_file = scratch.join("broken-deployment.json");
    fs::write(&broken_file, serde_json::to_vec(&broken)?)?;
    ensure!(
        !schema_failures(&broken_file)?.is_empty(),
        "control: {KUBERNETES_VALIDATE} --strict accepted a Deployment with an unknown field \
         `spec.replicass`, so its verdict on the manifests proves nothing"
    );
    eprintln!("xtask: control: {KUBERNETES_VALIDATE} rejects a Deployment with an unknown field");

    let mut failures = Vec::new();
    let mut resources = Vec::new();
    for name in &manifests {
        let path = dir.join(name);
        for failure in schema_failures(&path)? {
            failures.push(format!("{name}: {failure}"));
        }
        for doc in yaml_documents(&path)? {
            resources.push((name.to_string(), doc));
        }
    }
    ensure!(
        failures.is_empty(),
        "schema check failed:\n{}",
        failures.join("\n")
    );
    eprintln!(
        "xtask: {KUBERNETES_VALIDATE} --strict for Kubernetes {}: {} pass",
        KUBERNETES_VERSIONS.join(" and "),
        manifests
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );

    let kustomization = yaml_documents(&dir.join(KUSTOMIZATION))?;
    let listed: Vec<&str> = kustomization
        .first()
        .and_then(|k| k["resources"].as_array())
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    let expected: Vec<&str> = manifests
        .iter()
        .map(|s| s.as_str())
        .filter(|f| *f != SECRET_EXAMPLE)
        .collect();
    ensure!(
        listed_sorted == expected,
        "{KUSTOMIZATION} lists {listed:?}, expected every manifest but {SECRET_EXAMPLE}: {expected:?}"
    );

    check_manifests(&resources)?;
    eprintln!(
        "xtask: the Deployment runs the image's default arguments, probes /readyz and /healthz \
         on port {METRICS_PORT} and mounts the Secret's mm2.properties at {CONFIG_PATH}"
    );
    validate_secret_example(one_of(&resources, "Secret")?, scratch, "", SECRET_EXAMPLE)?;
    check_ha_overlay(&dir.join(HA_OVERLAY), &resources, scratch)?;
    Ok(())
}

/// The overlay of two replicas with membership (docs/membership.md).
const HA_OVERLAY: &str = "ha";
/// The line the overlay's Secret needs beyond the example's.
const HA_CONFIG_LINE: &str = "mm2-checkpoint.membership.enabled = true";

/// `deploy/kubernetes/ha/`: a kustomization of the base (`../`) with JSON 6902
/// patches. Renders the patches onto the base manifests (no kustomize
/// needed: the patches use `replace`, `add` and `remove` only), validates the
/// result like the base, checks what makes it safe to run several replicas,
/// and validates the example config with membership on.
fn check_ha_overlay(dir: &Path, base: &[(String, Value)], scratch: &Path) -> Result<()> {
    let kustomization = yaml_documents(&dir.join(KUSTOMIZATION))?;
    let k = kustomization
        .first()
        .context("ha/kustomization.yaml is empty")?;
    ensure!(
        k["resources"] == json!(["../"]),
        "ha/{KUSTOMIZATION} must build on the base, `resources: [../]`"
    );
    let mut rendered: Vec<Value> = base
        .iter()
        .map(|(_, r)| r.clone())
        .filter(|r| r["kind"] != "Secret")
        .collect();
    for (i, patch) in k["patches"].as_array().into_iter().flatten().enumerate() {
        let (kind, name) = (&patch["target"]["kind"], &patch["target"]["name"]);
        let ops_file = scratch.join(format!("ha-patch-{i}.yaml"));
        fs::write(
            &ops_file,
            patch["patch"].as_str().context("a patch is not text")?,
        )?;
        let ops = yaml_documents(&ops_file)?
            .into_iter()
            .next()
            .unwrap_or_default();
        let doc = rendered
            .iter_mut()
            .find(|r| &r["kind"] == kind && &r["metadata"]["name"] == name)
            .with_context(|| format!("ha: no {kind} {name} in the base to patch"))?;
        for op in ops
            .as_array()
            .context("a patch is not a list of operations")?
        {
            apply_json_patch_op(doc, op).with_context(|| format!("ha: patching {kind} {name}"))?;
        }
    }
    let mut failures = Vec::new();
    for doc in &rendered {
        let file = scratch.join(format!(
            "ha-{}.json",
            doc["kind"].as_str().unwrap_or("resource").to_lowercase()
        ));
        fs::write(&file, serde_json::to_vec(doc)?)?;
        failures.extend(schema_failures(&file)?);
    }
    ensure!(
        failures.is_empty(),
        "ha: schema check failed:\n{}",
        failures.join("\n")
    );
    let find = |kind: &str| rendered.iter().find(|r| r["kind"] == kind);
    let deployment = find("Deployment").context("ha: no Deployment")?;
    let spec = &deployment["spec"];
    ensure!(
        spec["replicas"].as_u64().is_some_and(|n| n >= 2)
            && spec["strategy"]["type"] == "RollingUpdate"
            && spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0,
        "ha: the Deployment must run two or more replicas with a RollingUpdate that keeps \
         every replica until its successor is ready (maxUnavailable: 0)"
    );
    let pdb = find("PodDisruptionBudget").context("ha: no PodDisruptionBudget")?;
    ensure!(
        pdb["spec"]["minAvailable"] == 1 && pdb["spec"].get("maxUnavailable").is_none(),
        "ha: the PodDisruptionBudget must keep one instance (minAvailable: 1)"
    );
    let header = fs::read_to_string(dir.join(KUSTOMIZATION))?;
    ensure!(
        header.contains(HA_CONFIG_LINE),
        "ha/{KUSTOMIZATION} must tell which line the Secret's mm2.properties needs"
    );
    eprintln!(
        "xtask: ha: the overlay renders to {} valid manifests: {} replicas, RollingUpdate with maxUnavailable 0, PodDisruptionBudget minAvailable 1",
        rendered.len(),
        spec["replicas"]
    );
    let secret = one_of(base, "Secret")?;
    validate_secret_example(secret, &scratch.join("ha"), HA_CONFIG_LINE, SECRET_EXAMPLE)
}

/// Applies one JSON Patch (RFC 6902) operation of kind `replace`, `add` (to
/// an object member) or `remove` to `doc`.
fn apply_json_patch_op(doc: &mut Value, op: &Value) -> Result<()> {
    let path = op["path"].as_str().context("an operation without a path")?;
    let (parent, key) = path.rsplit_once('/').context("a path without a slash")?;
    let target = doc
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .with_context(|| format!("no object at {parent}"))?;
    match op["op"].as_str() {
        Some("replace") => {
            ensure!(target.contains_key(key), "replace of a missing {path}");
            target.insert(key.to_string(), op["value"].clone());
        }
        Some("add") => {
            target.insert(key.to_string(), op["value"].clone());
        }
        Some("remove") => {
            target
                .remove(key)
                .with_context(|| format!("remove of a missing {path}"))?;
        }
        other => bail!("unsupported operation {other:?} (replace, add and remove only)"),
    }
    Ok(())
}

/// `mm2-checkpoint validate --strict` on the Secret example's
/// `mm2.properties`, with the Secret's files written to a scratch directory
/// that stands in for the mount point (the config's paths are rewritten to
/// it) and a freshly made CA in place of the `ca.pem` placeholder.
fn validate_secret_example(
    secret: &Value,
    scratch: &Path,
    extra_line: &str,
    what: &str,
) -> Result<()> {
    let (mount, config_file) = CONFIG_PATH.rsplit_once('/').context("CONFIG_PATH")?;
    let dir = scratch.join("secret");
    fs::create_dir_all(&dir)?;
    let dir_str = dir.to_str().context("a non-UTF-8 path")?;
    let files = secret["stringData"]
        .as_object()
        .context("the Secret example has no stringData")?;
    for (name, value) in files {
        let text = value
            .as_str()
            .context("a stringData value is not a string")?;
        let mut text = text.replace(mount, dir_str);
        if name == config_file && !extra_line.is_empty() {
            text.push_str(&format!("\n{extra_line}\n"));
        }
        fs::write(dir.join(name), text)?;
    }
    if files.contains_key("ca.pem") {
        let pki = crate::certs::generate(&scratch.join("pki"))?;
        fs::copy(&pki.ca_pem, dir.join("ca.pem"))?;
    }
    let config = dir.join(config_file);
    let out = Command::new(crate::dist::artefact::cargo())
        .current_dir(scratch)
        .args([
            "run", "--quiet", "-p", BINARY, "--", "validate", "--strict", "--config",
        ])
        .arg(&config)
        .output()
        .context("running `cargo run -p mm2-checkpoint -- validate`")?;
    ensure!(
        out.status.success(),
        "{what}: `mm2-checkpoint validate --strict` refuses its {config_file} ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    eprintln!("xtask: {what}: its {config_file} passes `mm2-checkpoint validate --strict`");
    Ok(())
}

/// The one resource of `kind` among `resources`.
fn one_of<'a>(resources: &'a [(String, Value)], kind: &str) -> Result<&'a Value> {
    let found: Vec<&Value> = resources
        .iter()
        .filter(|(_, r)| r["kind"] == kind)
        .map(|(_, r)| r)
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        _ => bail!("expected one {kind}, found {}", found.len()),
    }
}

/// What the schemas cannot say: the manifests fit the image and each other.
fn check_manifests(resources: &[(String, Value)]) -> Result<()> {
    let deployment = one_of(resources, "Deployment")?;
    let secret = one_of(resources, "Secret")?;
    let service = one_of(resources, "Service")?;
    let account = one_of(resources, "ServiceAccount")?;
    one_of(resources, "PodDisruptionBudget")?;

    let spec = &deployment["spec"];
    ensure!(
        spec["replicas"] == 1 && spec["strategy"]["type"] == "Recreate",
        "the Deployment must run one replica with `strategy: Recreate` (one writer per checkpoint topic)"
    );
    let pod = &spec["template"]["spec"];
    ensure!(
        pod["serviceAccountName"] == account["metadata"]["name"],
        "the Deployment does not use the ServiceAccount"
    );
    let (uid, gid) = RUN_AS.split_once(':').context("RUN_AS is uid:gid")?;
    let (uid, gid): (u64, u64) = (uid.parse()?, gid.parse()?);
    ensure!(
        pod["securityContext"]["runAsUser"] == uid && pod["securityContext"]["runAsGroup"] == gid,
        "the pod must run as {RUN_AS}, the image's user"
    );
    let containers = pod["containers"].as_array().context("no containers")?;
    let [container] = containers.as_slice() else {
        bail!("the Deployment must have one container");
    };
    ensure!(
        container.get("command").is_none() && container.get("args").is_none(),
        "the container must not set `command` or `args`: the image's default arguments are \
         the ones `cargo xtask image --check` runs until /readyz answers"
    );
    let ports = container["ports"]
        .as_array()
        .context("no container ports")?;
    ensure!(
        ports
            .iter()
            .any(|p| p["name"] == "metrics" && p["containerPort"] == METRICS_PORT),
        "the container must declare port `metrics` = {METRICS_PORT}"
    );
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = &container[probe]["httpGet"];
        ensure!(
            get["path"] == path && get["port"] == "metrics",
            "{probe} must GET {path} on port `metrics`"
        );
    }
    let (config_dir, config_file) = CONFIG_PATH.rsplit_once('/').context("CONFIG_PATH")?;
    let mount = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["mountPath"] == config_dir)
        .with_context(|| format!("nothing is mounted at {config_dir}"))?;
    let volume = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .context("the config mount has no volume")?;
    ensure!(
        volume["secret"]["secretName"] == secret["metadata"]["name"],
        "the volume at {config_dir} must be the Secret of {SECRET_EXAMPLE}"
    );
    ensure!(
        secret["stringData"].get(config_file).is_some(),
        "{SECRET_EXAMPLE} must hold {config_file}"
    );
    let service_port = service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["targetPort"] == "metrics")
        .context("the Service has no port targeting `metrics`")?;
    ensure!(
        service_port["port"] == METRICS_PORT,
        "the Service must expose port {METRICS_PORT}"
    );
    ensure!(
        service["spec"]["selector"] == spec["selector"]["matchLabels"],
        "the Service selects other pods than the Deployment's"
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
