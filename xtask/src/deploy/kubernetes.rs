//! `cargo xtask check-deploy`'s Kubernetes part (see the parent module):
//! the manifests of `deploy/kubernetes/` and its HA overlay, and the checks
//! the Helm chart's renders share with them.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::dist::artefact::{BINARY, CONFIG_PATH, METRICS_PORT, RUN_AS};

/// The Kubernetes versions the manifests are validated against: the oldest
/// we document (`unhealthyPodEvictionPolicy` is on by default from 1.27) and
/// the newest that kubernetes-validate 1.37 bundles.
pub const KUBERNETES_VERSIONS: [&str; 2] = ["1.29", "1.37"];

/// The Secret example, which `kustomization.yaml` leaves out on purpose.
pub(super) const SECRET_EXAMPLE: &str = "secret.example.yaml";
pub(super) const KUSTOMIZATION: &str = "kustomization.yaml";

// ---------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------

/// Runs a tool, naming where to get it if it is missing.
pub(super) fn tool(program: &str, args: &[&str], install: &str) -> Result<Output> {
    Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running `{program}` ({install})"))
}

pub(super) fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .trim()
    .to_owned()
}

pub(super) const KUBERNETES_VALIDATE: &str = "kubernetes-validate";
pub(super) const PIP_HINT: &str = "PyPI: pip install kubernetes-validate";

/// The YAML documents of `path` as JSON values, read with PyYAML (which
/// kubernetes-validate depends on).
pub(super) fn yaml_documents(path: &Path) -> Result<Vec<Value>> {
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
pub(super) fn schema_failures(file: &Path) -> Result<Vec<String>> {
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

pub(super) fn check_kubernetes(dir: &Path, scratch: &Path) -> Result<()> {
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
pub(super) const HA_OVERLAY: &str = "ha";
/// The line the overlay's Secret needs beyond the example's.
pub(super) const HA_CONFIG_LINE: &str = "mm2-checkpoint.membership.enabled = true";

/// `deploy/kubernetes/ha/`: a kustomization of the base (`../`) with JSON 6902
/// patches. Renders the patches onto the base manifests (no kustomize
/// needed: the patches use `replace`, `add` and `remove` only), validates the
/// result like the base, checks what makes it safe to run several replicas,
/// and validates the example config with membership on.
pub(super) fn check_ha_overlay(dir: &Path, base: &[(String, Value)], scratch: &Path) -> Result<()> {
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
    let pdb = find("PodDisruptionBudget").context("ha: no PodDisruptionBudget")?;
    check_ha_spread(deployment, pdb)?;
    let spec = &deployment["spec"];
    let header = fs::read_to_string(dir.join(KUSTOMIZATION))?;
    ensure!(
        header.contains(HA_CONFIG_LINE),
        "ha/{KUSTOMIZATION} must tell which line the Secret's mm2.properties needs"
    );
    eprintln!(
        "xtask: ha: the overlay renders to {} valid manifests: {} replicas on different nodes (required podAntiAffinity), RollingUpdate with maxUnavailable 0, PodDisruptionBudget minAvailable 1",
        rendered.len(),
        spec["replicas"]
    );
    let secret = one_of(base, "Secret")?;
    validate_secret_example(secret, &scratch.join("ha"), HA_CONFIG_LINE, SECRET_EXAMPLE)
}

/// What an HA deployment needs, whichever way it is made (the kustomize
/// overlay or the Helm chart): two or more replicas rolled one at a time
/// without going below their number, never two on one node (a required
/// podAntiAffinity on `kubernetes.io/hostname` selecting the pods' own
/// labels), and a PodDisruptionBudget that keeps one.
pub(super) fn check_ha_spread(deployment: &Value, pdb: &Value) -> Result<()> {
    let spec = &deployment["spec"];
    ensure!(
        spec["replicas"].as_u64().is_some_and(|n| n >= 2)
            && spec["strategy"]["type"] == "RollingUpdate"
            && spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0,
        "ha: the Deployment must run two or more replicas with a RollingUpdate that keeps \
         every replica until its successor is ready (maxUnavailable: 0)"
    );
    let pod = &spec["template"];
    let terms = pod["spec"]["affinity"]["podAntiAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let labels = pod["metadata"]["labels"]
        .as_object()
        .context("no pod labels")?;
    ensure!(
        terms.iter().any(|t| {
            t["topologyKey"] == "kubernetes.io/hostname"
                && t["labelSelector"]["matchLabels"]
                    .as_object()
                    .is_some_and(|m| {
                        !m.is_empty() && m.iter().all(|(k, v)| labels.get(k) == Some(v))
                    })
        }),
        "ha: the pods need a required podAntiAffinity on kubernetes.io/hostname that selects \
         their own labels, so two replicas never share a node"
    );
    ensure!(
        pdb["spec"]["minAvailable"] == 1 && pdb["spec"].get("maxUnavailable").is_none(),
        "ha: the PodDisruptionBudget must keep one instance (minAvailable: 1)"
    );
    Ok(())
}

/// Applies one JSON Patch (RFC 6902) operation of kind `replace`, `add` (to
/// an object member) or `remove` to `doc`.
pub(super) fn apply_json_patch_op(doc: &mut Value, op: &Value) -> Result<()> {
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
pub(super) fn validate_secret_example(
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
pub(super) fn one_of<'a>(resources: &'a [(String, Value)], kind: &str) -> Result<&'a Value> {
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
pub(super) fn check_manifests(resources: &[(String, Value)]) -> Result<()> {
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
