//! `cargo xtask check-deploy`, the Helm chart in `deploy/helm/mm2-checkpoint`
//! (docs/deploy.md, "Helm"):
//!
//! * `helm lint --strict` and `helm template` of the default values and of
//!   each values file in the chart's `ci/` ([`VALUES_FILES`]);
//! * every rendered core object passes `kubernetes-validate --strict`, as the
//!   manifests of `deploy/kubernetes/` do; every ServiceMonitor and
//!   PrometheusRule passes the prometheus-operator CRD's schema (from the Go
//!   module [`PROMETHEUS_OPERATOR`], checksum [`PROMETHEUS_OPERATOR_SUM`]),
//!   made strict: an unknown field is an error, as with kubernetes-validate;
//! * the default render is what `deploy/kubernetes/` is (the same checks,
//!   and its `mm2.properties` passes `mm2-checkpoint validate --strict`);
//! * the HA render: replicas on different nodes (required pod
//!   anti-affinity), a rolling update with `maxUnavailable: 0`, a
//!   PodDisruptionBudget with `minAvailable: 1`, membership on in the config;
//!   more than one replica without membership does not render;
//! * the pods' `checksum/config` annotation changes with the config and only
//!   with it;
//! * the PrometheusRule holds exactly the groups of
//!   `deploy/monitoring/alerts.yml`, of which `files/alerts.yml` is a copy.
//!
//! Nothing here prints a rendered Secret: errors name objects, not values.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use super::kubernetes::{
    HA_CONFIG_LINE, KUBERNETES_VALIDATE, KUBERNETES_VERSIONS, PIP_HINT, check_ha_spread,
    check_manifests, text, tool, validate_secret_example, yaml_documents,
};
use crate::dist::artefact::{RUN_ARGS, which};

/// The Helm release `.ci/run` installs when `helm` is missing.
pub const HELM_VERSION: &str = "v3.21.4";
/// The Go module whose zip holds the prometheus-operator CRDs
/// (`example/prometheus-operator-crd/`), and its checksum as the Go
/// checksum database gives it (`go mod download` checks it too).
pub const PROMETHEUS_OPERATOR: &str = "github.com/prometheus-operator/prometheus-operator@v0.85.0";
pub const PROMETHEUS_OPERATOR_SUM: &str = "h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s=";
const CRD_DIR: &str = "example/prometheus-operator-crd";
const CRD_FILES: [&str; 2] = [
    "monitoring.coreos.com_servicemonitors.yaml",
    "monitoring.coreos.com_prometheusrules.yaml",
];
/// The values files rendered besides the defaults, in the chart's `ci/`.
pub const VALUES_FILES: [&str; 3] = [
    "ci/ha-values.yaml",
    "ci/monitoring-values.yaml",
    "ci/strimzi-values.yaml",
];
/// The chart's copy of the alerting rules.
const CHART_ALERTS: &str = "files/alerts.yml";
const RELEASE: &str = "mm2-checkpoint";

fn helm_hint() -> String {
    format!(
        "helm is not installed: `go install helm.sh/helm/v3/cmd/helm@{HELM_VERSION}` \
         (into $(go env GOPATH)/bin; put that on PATH), or `.ci/run`, which does it"
    )
}

/// Checks the chart in `chart`, whose rules must be those of `alerts`.
pub fn check_chart(chart: &Path, alerts: &Path, scratch: &Path) -> Result<()> {
    let helm = which("helm").with_context(helm_hint)?;
    let scratch = scratch.join("helm");
    fs::create_dir_all(&scratch)?;

    // One owner of the rules: deploy/monitoring/alerts.yml.
    let original = fs::read(alerts).with_context(|| format!("reading {}", alerts.display()))?;
    let copy = chart.join(CHART_ALERTS);
    ensure!(
        fs::read(&copy).ok().as_deref() == Some(original.as_slice()),
        "{} differs from {}: `cp {} {}`",
        copy.display(),
        alerts.display(),
        alerts.display(),
        copy.display()
    );

    let meta = yaml_documents(&chart.join("Chart.yaml"))?
        .into_iter()
        .next()
        .context("Chart.yaml is empty")?;
    let version = env!("CARGO_PKG_VERSION");
    ensure!(
        meta["appVersion"] == version,
        "Chart.yaml: appVersion must be the workspace version {version} (the image's default tag)"
    );

    let helm_run = |args: &[&str]| -> Result<std::process::Output> {
        Command::new(&helm)
            .args(args)
            .current_dir(chart)
            .output()
            .with_context(helm_hint)
    };
    let oldest = KUBERNETES_VERSIONS[0];
    let render = |name: &str, extra: &[&str]| -> Result<Vec<Value>> {
        let mut args = vec!["template", RELEASE, ".", "--kube-version", oldest];
        args.extend_from_slice(extra);
        let out = helm_run(&args)?;
        ensure!(
            out.status.success(),
            "helm template ({name}): {}",
            text(&out)
        );
        let file = scratch.join(format!("{name}.yaml"));
        fs::write(&file, &out.stdout)?;
        yaml_documents(&file)
    };

    let mut sets: Vec<(&str, Vec<&str>)> = vec![("default", vec![])];
    for file in VALUES_FILES {
        sets.push((file, vec!["-f", file]));
    }
    let crds = crd_dir(&scratch)?;
    check_crd_control(&crds, &scratch)?;
    let mut renders = Vec::new();
    for (name, extra) in &sets {
        let mut args = vec!["lint", "--strict", ".", "--kube-version", oldest];
        args.extend_from_slice(extra);
        let out = helm_run(&args)?;
        ensure!(out.status.success(), "helm lint ({name}): {}", text(&out));
        let tag = name.trim_start_matches("ci/").trim_end_matches(".yaml");
        let docs = render(tag, extra)?;
        validate_render(&docs, tag, &crds, &scratch)?;
        renders.push(docs);
    }
    eprintln!(
        "xtask: helm: lint --strict and template pass for the default values, {}; every \
         object passes {KUBERNETES_VALIDATE} --strict (Kubernetes {}) or the \
         prometheus-operator CRD schema ({PROMETHEUS_OPERATOR})",
        VALUES_FILES.join(", "),
        KUBERNETES_VERSIONS.join(" and ")
    );

    // The default render is deploy/kubernetes/.
    let named = |docs: &[Value]| -> Vec<(String, Value)> {
        docs.iter()
            .map(|d| ("chart".to_string(), d.clone()))
            .collect()
    };
    let default = named(&renders[0]);
    check_manifests(&default)?;
    ensure!(
        kinds(&renders[0])
            == [
                "Deployment",
                "PodDisruptionBudget",
                "Secret",
                "Service",
                "ServiceAccount"
            ],
        "default render: expected a Deployment, PodDisruptionBudget, Secret, Service and \
         ServiceAccount, found {:?}",
        kinds(&renders[0])
    );
    let pdb = find(&renders[0], "PodDisruptionBudget")?;
    ensure!(
        pdb["spec"]["maxUnavailable"] == 1
            && pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow",
        "default render: the PodDisruptionBudget must be maxUnavailable 1 with \
         unhealthyPodEvictionPolicy AlwaysAllow, as deploy/kubernetes/"
    );
    ensure!(
        log_format(&renders[0])? == "text",
        "default render: MM2_LOG_FORMAT must be text"
    );
    validate_secret_example(
        find(&renders[0], "Secret")?,
        &scratch.join("default"),
        "",
        "the chart's default Secret",
    )?;
    eprintln!(
        "xtask: helm: the default render is deploy/kubernetes/: one replica, Recreate, the \
         image's default arguments, the probes, the Secret at /etc/mm2-checkpoint"
    );

    check_ha(&renders[1], &scratch)?;
    let refused = helm_run(&[
        "template",
        RELEASE,
        ".",
        "--kube-version",
        oldest,
        "--set",
        "replicaCount=2",
    ])?;
    ensure!(
        !refused.status.success() && text(&refused).contains("membership.enabled"),
        "helm template with replicaCount=2 and membership off must fail naming \
         membership.enabled"
    );
    eprintln!("xtask: helm: replicaCount 2 without membership does not render");

    // `clusters`: the image's default arguments, then --clusters.
    let docs = render("clusters", &["--set", "clusters={backup,dr}"])?;
    let mut expected: Vec<&str> = RUN_ARGS.to_vec();
    expected.extend(["--clusters", "backup,dr"]);
    ensure!(
        container(&docs)?["args"] == json!(expected),
        "clusters: the container's args must be {}",
        json!(expected)
    );
    eprintln!("xtask: helm: clusters runs the image's default arguments and --clusters");

    check_monitoring(&renders[2], alerts)?;
    check_strimzi(&renders[3], &scratch)?;

    // The checksum annotation follows the config, and only it.
    let checksum = |extra: &[&str]| -> Result<Value> {
        let docs = render("checksum", extra)?;
        Ok(find(&docs, "Deployment")?["spec"]["template"]["metadata"]["annotations"]
            ["checksum/config"]
            .clone())
    };
    let base = checksum(&[])?;
    ensure!(
        base.is_string(),
        "default render: no checksum/config annotation on the pods"
    );
    ensure!(
        checksum(&[])? == base && checksum(&["--set", "logFormat=json"])? == base,
        "checksum/config changes without a config change"
    );
    ensure!(
        checksum(&["--set-string", "config.files.secrets\\.properties=changed"])? != base,
        "checksum/config does not change when a file of the Secret changes"
    );
    ensure!(
        checksum(&["-f", VALUES_FILES[0]])? != base,
        "checksum/config does not change when membership changes mm2.properties"
    );
    eprintln!("xtask: helm: checksum/config changes with the Secret's files and only with them");
    Ok(())
}

fn kinds(docs: &[Value]) -> Vec<&str> {
    let mut kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    kinds.sort();
    kinds
}

fn find<'a>(docs: &'a [Value], kind: &str) -> Result<&'a Value> {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    match found.as_slice() {
        [one] => Ok(one),
        _ => bail!("expected one {kind} in the render, found {}", found.len()),
    }
}

fn container(docs: &[Value]) -> Result<&Value> {
    find(docs, "Deployment")?["spec"]["template"]["spec"]["containers"]
        .get(0)
        .context("no container")
}

fn log_format(docs: &[Value]) -> Result<String> {
    let env = container(docs)?["env"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    env.iter()
        .find(|e| e["name"] == "MM2_LOG_FORMAT")
        .and_then(|e| e["value"].as_str())
        .map(str::to_owned)
        .context("the container has no MM2_LOG_FORMAT")
}

/// Schema checks of one render: core objects with kubernetes-validate, the
/// prometheus-operator objects with their CRDs.
fn validate_render(docs: &[Value], tag: &str, crds: &Path, scratch: &Path) -> Result<()> {
    let (custom, core): (Vec<&Value>, Vec<&Value>) = docs.iter().partition(|d| {
        d["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("monitoring.coreos.com/"))
    });
    // JSON is YAML: one file of JSON documents.
    let core_file = scratch.join(format!("{tag}-core.yaml"));
    let body: Vec<String> = core.iter().map(|d| d.to_string()).collect();
    fs::write(&core_file, body.join("\n---\n"))?;
    let name = core_file.to_str().context("a non-UTF-8 path")?;
    for version in KUBERNETES_VERSIONS {
        let out = tool(
            KUBERNETES_VALIDATE,
            &["--strict", "--quiet", "-k", version, name],
            PIP_HINT,
        )?;
        ensure!(
            out.status.success(),
            "helm ({tag}): {KUBERNETES_VALIDATE} --strict, Kubernetes {version}: {}",
            text(&out)
        );
    }
    if !custom.is_empty() {
        let errors = crd_errors(crds, &custom, &scratch.join(format!("{tag}-custom.json")))?;
        ensure!(
            errors.is_empty(),
            "helm ({tag}): prometheus-operator CRD schema:\n{}",
            errors.join("\n")
        );
    }
    Ok(())
}

/// The CRD directory of [`PROMETHEUS_OPERATOR`], downloaded once into Go's
/// module cache; its checksum must be [`PROMETHEUS_OPERATOR_SUM`].
fn crd_dir(scratch: &Path) -> Result<PathBuf> {
    let hint = "Go is needed for the prometheus-operator CRDs (https://go.dev/dl, or \
                Debian's golang-go)";
    // Outside any Go module, so no go.mod is consulted.
    let out = Command::new("go")
        .args(["mod", "download", "-json", PROMETHEUS_OPERATOR])
        .current_dir(scratch)
        .output()
        .with_context(|| format!("running `go mod download` ({hint})"))?;
    ensure!(
        out.status.success(),
        "go mod download {PROMETHEUS_OPERATOR}: {}",
        text(&out)
    );
    let info: Value = serde_json::from_slice(&out.stdout)?;
    ensure!(
        info["Sum"] == PROMETHEUS_OPERATOR_SUM,
        "{PROMETHEUS_OPERATOR}: checksum {} is not the pinned {PROMETHEUS_OPERATOR_SUM}",
        info["Sum"]
    );
    let dir = PathBuf::from(info["Dir"].as_str().context("no Dir")?).join(CRD_DIR);
    for file in CRD_FILES {
        ensure!(
            dir.join(file).is_file(),
            "{PROMETHEUS_OPERATOR} has no {CRD_DIR}/{file}"
        );
    }
    Ok(dir)
}

/// Validates prometheus-operator objects against the `openAPIV3Schema` of
/// their CRD's version, with `additionalProperties: false` added wherever a
/// schema lists properties and keeps no unknown fields (so an unknown field
/// is an error, as with `kubernetes-validate --strict`). jsonschema comes
/// with kubernetes-validate.
const CRD_VALIDATE_PY: &str = r#"
import json, sys, yaml, jsonschema

def strict(s):
    if isinstance(s, list):
        for x in s: strict(x)
        return
    if not isinstance(s, dict):
        return
    if "properties" in s and "additionalProperties" not in s \
            and not s.get("x-kubernetes-preserve-unknown-fields"):
        s["additionalProperties"] = False
    for v in s.get("properties", {}).values(): strict(v)
    for k in ("items", "additionalProperties", "not"):
        if isinstance(s.get(k), dict): strict(s[k])
    for k in ("allOf", "anyOf", "oneOf"):
        strict(s.get(k))

crd_files, docs_file = sys.argv[1:-1], sys.argv[-1]
schemas = {}
for name in crd_files:
    crd = yaml.safe_load(open(name))
    for v in crd["spec"]["versions"]:
        key = (crd["spec"]["group"] + "/" + v["name"], crd["spec"]["names"]["kind"])
        schema = v["schema"]["openAPIV3Schema"]
        strict(schema)
        schemas[key] = schema
errors = []
for doc in json.load(open(docs_file)):
    key = (doc.get("apiVersion"), doc.get("kind"))
    what = "%s %s" % (doc.get("kind"), doc.get("metadata", {}).get("name"))
    if key not in schemas:
        errors.append("%s: no CRD for %s" % (what, key[0]))
        continue
    for e in jsonschema.Draft4Validator(schemas[key]).iter_errors(doc):
        errors.append("%s: %s: %s" % (what, "/".join(str(p) for p in e.absolute_path), e.message))
print(json.dumps(errors))
"#;

fn crd_errors(crds: &Path, docs: &[&Value], file: &Path) -> Result<Vec<String>> {
    fs::write(file, serde_json::to_vec(&docs)?)?;
    let mut args = vec!["-c".to_string(), CRD_VALIDATE_PY.to_string()];
    for crd in CRD_FILES {
        args.push(
            crds.join(crd)
                .to_str()
                .context("a non-UTF-8 path")?
                .to_owned(),
        );
    }
    args.push(file.to_str().context("a non-UTF-8 path")?.to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tool("python3", &args, PIP_HINT)?;
    ensure!(
        out.status.success(),
        "the CRD schema check did not run ({PIP_HINT}): {}",
        text(&out)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// Control: the CRD check must reject what the API server would not keep.
fn check_crd_control(crds: &Path, scratch: &Path) -> Result<()> {
    let monitor = json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": "control"},
        "spec": {"selector": {}, "endpoints": [{"port": "metrics", "pathh": "/metrics"}]}
    });
    let rule = json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "control"},
        "spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": ["up"]}]}]}
    });
    for (doc, what) in [
        (&monitor, "a ServiceMonitor with an unknown field `pathh`"),
        (&rule, "a PrometheusRule whose expr is a list"),
    ] {
        ensure!(
            !crd_errors(crds, &[doc], &scratch.join("control.json"))?.is_empty(),
            "control: the CRD schema check accepted {what}, so its verdict proves nothing"
        );
    }
    ensure!(
        crd_errors(crds, &[&json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "ok"}, "spec": {"selector": {}, "endpoints": [{"port": "metrics"}]}})], &scratch.join("control.json"))?.is_empty(),
        "control: the CRD schema check rejected a minimal valid ServiceMonitor"
    );
    eprintln!(
        "xtask: control: the prometheus-operator CRD check rejects an unknown field and a wrong type"
    );
    Ok(())
}

/// Two replicas that never share a node, never all down, membership on.
fn check_ha(docs: &[Value], scratch: &Path) -> Result<()> {
    let deployment = find(docs, "Deployment")?;
    check_ha_spread(deployment, find(docs, "PodDisruptionBudget")?)?;
    let spec = &deployment["spec"];
    let secret = find(docs, "Secret")?;
    let props = secret["stringData"]["mm2.properties"]
        .as_str()
        .context("ha: the Secret has no mm2.properties")?;
    ensure!(
        props
            .lines()
            .rev()
            .find(|l| l.contains("membership.enabled"))
            .map(str::trim)
            == Some(HA_CONFIG_LINE),
        "ha: the Secret's mm2.properties must end with `{HA_CONFIG_LINE}`"
    );
    validate_secret_example(secret, &scratch.join("ha"), "", "the chart's HA Secret")?;
    eprintln!(
        "xtask: helm: ha: {} replicas on different nodes (required podAntiAffinity), \
         RollingUpdate with maxUnavailable 0, PodDisruptionBudget minAvailable 1, membership on",
        spec["replicas"]
    );
    Ok(())
}

/// Where the Strimzi example mounts the secrets Strimzi makes.
const STRIMZI_MOUNTS: &str = "/etc/kafka";

/// The Strimzi example (docs/deploy.md, "Strimzi"): every directory its
/// mm2.properties reads under [`STRIMZI_MOUNTS`] is mounted from a Secret,
/// and with stand-ins for Strimzi's files (a fresh CA, client certificate
/// and key, a password) it passes `mm2-checkpoint validate --strict`.
fn check_strimzi(docs: &[Value], scratch: &Path) -> Result<()> {
    let secret = find(docs, "Secret")?;
    let props = secret["stringData"]["mm2.properties"]
        .as_str()
        .context("strimzi: no mm2.properties")?;
    let mounts = container(docs)?["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let dir = scratch.join("strimzi");
    let pki = crate::certs::generate(&dir.join("pki"))?;
    let stand_ins = [
        ("ca.crt", &pki.ca_pem),
        ("user.crt", &pki.client_cert_pem),
        ("user.key", &pki.client_key_pem),
    ];
    let root = dir.join("mounts");
    let mut read = 0;
    for path in props
        .split(|c: char| c.is_whitespace() || c == '"' || c == '}' || c == '$' || c == '{')
        .filter_map(|word| word.strip_prefix("dir:").or(Some(word)))
        .filter(|word| word.starts_with(&format!("{STRIMZI_MOUNTS}/")))
    {
        // `/etc/kafka/<mount>/<file>` or, for the directory provider,
        // `/etc/kafka/<mount>:<file>`.
        let (mount, file) = match path.split_once(':') {
            Some((mount, file)) => (mount, file),
            None => path.rsplit_once('/').context("a path without a file")?,
        };
        ensure!(
            mounts.iter().any(|m| m["mountPath"] == mount),
            "strimzi: mm2.properties reads {mount}, which no volume is mounted at"
        );
        let local = root.join(mount.trim_start_matches('/'));
        fs::create_dir_all(&local)?;
        match stand_ins.iter().find(|(name, _)| *name == file) {
            Some((_, from)) => {
                fs::copy(from, local.join(file))?;
            }
            None => fs::write(local.join(file), "stand-in")?,
        }
        read += 1;
    }
    ensure!(
        read > 0,
        "strimzi: mm2.properties reads nothing under {STRIMZI_MOUNTS}"
    );
    let local_root = root.join(STRIMZI_MOUNTS.trim_start_matches('/'));
    let mut rewritten = secret.clone();
    rewritten["stringData"]["mm2.properties"] = json!(props.replace(
        STRIMZI_MOUNTS,
        local_root.to_str().context("a non-UTF-8 path")?
    ));
    validate_secret_example(&rewritten, &dir, "", "the chart's Strimzi example")?;
    eprintln!(
        "xtask: helm: strimzi: the {read} files mm2.properties reads under {STRIMZI_MOUNTS} are \
         all on mounted Secrets"
    );
    Ok(())
}

/// The ServiceMonitor scrapes the Service's `metrics` port; the
/// PrometheusRule holds alerts.yml's groups; the extra volumes are mounted.
fn check_monitoring(docs: &[Value], alerts: &Path) -> Result<()> {
    let service = find(docs, "Service")?;
    let monitor = find(docs, "ServiceMonitor")?;
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .context("monitoring: the ServiceMonitor has no matchLabels")?;
    ensure!(
        !selector.is_empty()
            && selector
                .iter()
                .all(|(k, v)| service["metadata"]["labels"].get(k) == Some(v)),
        "monitoring: the ServiceMonitor does not select the Service"
    );
    ensure!(
        monitor["spec"]["endpoints"].as_array().is_some_and(|e| e
            .iter()
            .any(|e| e["port"] == "metrics" && e["path"] == "/metrics")),
        "monitoring: the ServiceMonitor must scrape /metrics on port `metrics`"
    );
    let rule = find(docs, "PrometheusRule")?;
    let expected = yaml_documents(alerts)?
        .into_iter()
        .next()
        .context("alerts.yml is empty")?;
    ensure!(
        rule["spec"]["groups"] == expected["groups"] && expected["groups"].is_array(),
        "monitoring: the PrometheusRule's groups are not those of {}",
        alerts.display()
    );
    ensure!(
        log_format(docs)? == "json",
        "monitoring: logFormat json must set MM2_LOG_FORMAT=json"
    );
    ensure!(
        docs.iter().all(|d| d["kind"] != "Secret"),
        "monitoring: with config.existingSecret the chart must not create a Secret"
    );
    ensure!(
        find(docs, "Deployment")?["spec"]["template"]["metadata"]["annotations"]
            .get("checksum/config")
            .is_none(),
        "monitoring: with config.existingSecret there is no content to hash: no checksum/config"
    );
    let pod = &find(docs, "Deployment")?["spec"]["template"]["spec"];
    let mounts = container(docs)?["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for volume in pod["volumes"].as_array().into_iter().flatten() {
        ensure!(
            mounts.iter().any(|m| m["name"] == volume["name"]),
            "monitoring: volume {} is not mounted",
            volume["name"]
        );
    }
    ensure!(
        pod["volumes"][0]["secret"]["secretName"] == "mm2-checkpoint-config",
        "monitoring: the config volume must be config.existingSecret"
    );
    eprintln!(
        "xtask: helm: monitoring: the ServiceMonitor scrapes the Service's /metrics, the \
         PrometheusRule holds the {} group(s) of alerts.yml, existingSecret and extra volumes \
         are mounted",
        expected["groups"].as_array().map_or(0, Vec::len)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_run_installs_the_pinned_helm() {
        let run = include_str!("../../../.ci/run");
        assert!(
            run.contains(&format!("helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"))
                || run.contains(&format!("helm_version={HELM_VERSION}")),
            ".ci/run must install helm {HELM_VERSION}"
        );
    }

    #[test]
    fn docs_deploy_md_shows_the_checked_strimzi_example() {
        let doc = include_str!("../../../docs/deploy.md");
        let values = include_str!("../../../deploy/helm/mm2-checkpoint/ci/strimzi-values.yaml");
        let body: String = values
            .lines()
            .skip_while(|l| l.starts_with('#'))
            .map(|l| {
                if l.is_empty() {
                    "\n".to_string()
                } else {
                    format!("   {l}\n")
                }
            })
            .collect();
        // The block sits in a numbered list, indented by three spaces.
        assert!(
            doc.contains(&body),
            "docs/deploy.md must show ci/strimzi-values.yaml (after its comment) verbatim"
        );
    }

    #[test]
    fn the_values_files_exist() {
        let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/helm/mm2-checkpoint");
        for file in VALUES_FILES {
            assert!(chart.join(file).is_file(), "{file}");
        }
    }
}
