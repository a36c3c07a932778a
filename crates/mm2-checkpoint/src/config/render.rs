//! The reports of `mm2-checkpoint validate`: the effective settings as text
//! (`--format text`) or as one JSON document (`--format json`).
//!
//! They show, per enabled flow, every value the daemon will use and where it
//! came from, so an operator can check MM2's layering without reading the
//! source. Both formats are made from the same rows ([`Row`]), so they show
//! the same values; passwords and inline keys appear as `[redacted]` in both.
//! The JSON shape is documented in docs/configuration.md ("validate").

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::check::{ConfigWarning, NotChecked, Secrets};
use super::error::ConfigError;
use super::keys::{self, Shown};
use super::metrics::MetricsSettings;
use super::security::{ClusterConnection, OAuthSettings, PemSource, TokenEndpoint, TrustRoots};
use super::settings::{FlowConfig, MirrorConfig};
use super::validation::Validation;

/// One line of the settings: `key = value    # origin`. `origin` is the key
/// and line the value came from, or `default`; lines derived from other
/// settings (topic names, the TLS summary) have none.
struct Row {
    key: String,
    value: String,
    origin: Option<String>,
}

/// One enabled flow in a report.
struct FlowView<'a> {
    name: String,
    checkpointed: bool,
    reason: String,
    settings: Option<&'a FlowConfig>,
}

/// What a report shows, from a [`MirrorConfig`] or a [`Validation`].
struct View<'a> {
    clusters: &'a [String],
    flows: Vec<FlowView<'a>>,
    metrics: Option<&'a MetricsSettings>,
    no_effect_keys: &'a [String],
    warnings: &'a [ConfigWarning],
    not_checked: &'a [NotChecked],
    secrets: Secrets,
}

impl<'a> View<'a> {
    fn of_config(config: &'a MirrorConfig) -> Self {
        let mut flows: Vec<FlowView<'a>> = config
            .flows
            .iter()
            .map(|f| FlowView {
                reason: config.ownership.reason(&f.name()),
                name: f.name(),
                checkpointed: true,
                settings: Some(f),
            })
            .collect();
        flows.extend(config.ownership.left_to_mm2().iter().map(|name| FlowView {
            name: name.clone(),
            checkpointed: false,
            reason: config.ownership.reason(name),
            settings: None,
        }));
        View {
            clusters: &config.clusters,
            flows,
            metrics: Some(&config.metrics),
            no_effect_keys: &config.no_effect_keys,
            warnings: &config.warnings,
            not_checked: &[],
            secrets: Secrets::Read,
        }
    }

    fn of_validation(v: &'a Validation) -> Self {
        View {
            clusters: &v.clusters,
            flows: v
                .flows
                .iter()
                .map(|f| FlowView {
                    name: f.name.clone(),
                    checkpointed: f.checkpointed,
                    reason: f.reason.clone(),
                    settings: f.settings.as_ref(),
                })
                .collect(),
            metrics: v.metrics.as_ref(),
            no_effect_keys: &v.no_effect_keys,
            warnings: &v.warnings,
            not_checked: &v.not_checked,
            secrets: v.secrets,
        }
    }

    fn checkpointed(&self) -> impl Iterator<Item = &FlowView<'a>> {
        self.flows.iter().filter(|f| f.checkpointed)
    }
}

/// Renders every flow's effective settings, secrets masked, as plain text.
pub fn render_effective_settings(config: &MirrorConfig) -> String {
    render_text(&View::of_config(config))
}

/// The text report of a check without errors (`validate`'s standard output):
/// the effective settings, and with `--no-secrets` what was not checked.
pub fn render_validation_text(validation: &Validation) -> String {
    render_text(&View::of_validation(validation))
}

/// The one JSON document of `validate --format json`. `strict` is whether
/// warnings count as failures; `ok` says whether the check passed.
pub fn render_validation_json(validation: &Validation, strict: bool) -> String {
    let view = View::of_validation(validation);
    let ok = validation.passes(strict);
    let flows: Vec<Value> = view
        .flows
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "checkpointed": f.checkpointed,
                "reason": f.reason,
                "settings": f.settings.map(|flow| {
                    json!({
                        "flow": rows_json(&flow_rows(flow)),
                        "source": cluster_json(&flow.source, "source", flow),
                        "target": cluster_json(&flow.target, "target", flow),
                    })
                }),
            })
        })
        .collect();
    let process = view.metrics.map(|m| {
        let rows: Vec<Row> = metrics_rows(m);
        rows_json(&rows)
    });
    let doc = json!({
        "ok": ok,
        "strict": strict,
        "secrets_checked": view.secrets == Secrets::Read,
        "clusters": view.clusters,
        "flows": flows,
        "process": process,
        "no_effect_keys": view.no_effect_keys,
        "errors": validation.errors.iter().map(error_json).collect::<Vec<_>>(),
        "warnings": view.warnings.iter().map(|w| {
            finding(w.key(), w.line(), "message", w.message())
        }).collect::<Vec<_>>(),
        "not_checked": view.not_checked.iter().map(|n| {
            finding(n.key(), n.line(), "why", n.why())
        }).collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

fn error_json(e: &ConfigError) -> Value {
    finding(e.key(), e.line(), "message", e.message())
}

/// `{"key": ..., "line": ..., <text_name>: text}`, without `line` when unknown
/// and with `key` null when the finding is about no key.
fn finding(key: Option<&str>, line: Option<usize>, text_name: &str, text: &str) -> Value {
    let mut object = serde_json::Map::new();
    object.insert("key".into(), json!(key));
    if let Some(line) = line {
        object.insert("line".into(), json!(line));
    }
    object.insert(text_name.into(), json!(text));
    Value::Object(object)
}

fn rows_json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| json!({"key": r.key, "value": r.value, "origin": r.origin}))
            .collect(),
    )
}

fn cluster_json(c: &ClusterConnection, role: &str, flow: &FlowConfig) -> Value {
    json!({"alias": c.alias, "settings": rows_json(&cluster_rows(c, role, flow))})
}

fn render_text(view: &View<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "clusters = {}", view.clusters.join(", "));
    let names: Vec<&str> = view.checkpointed().map(|f| f.name.as_str()).collect();
    let _ = writeln!(out, "checkpointed flows = {}", names.join(", "));
    for flow in view.checkpointed() {
        let _ = writeln!(out, "  {}: {}", flow.name, flow.reason);
    }
    let left: Vec<&str> = view
        .flows
        .iter()
        .filter(|f| !f.checkpointed)
        .map(|f| f.name.as_str())
        .collect();
    if !left.is_empty() {
        let _ = writeln!(
            out,
            "left to MirrorMaker 2 = {}    # emit.checkpoints.enabled is true: MM2 checkpoints them",
            left.join(", ")
        );
    }
    if let Some(m) = view.metrics {
        for row in metrics_rows(m) {
            let _ = writeln!(out, "{} = {}", row.key, row.value);
        }
    }
    for flow in view.checkpointed() {
        let _ = writeln!(out, "\n[flow {}]", flow.name);
        let Some(settings) = flow.settings else {
            let _ = writeln!(
                out,
                "  (settings not shown: they depend on values that were not read; see \
                 `not checked:` below)"
            );
            continue;
        };
        write_rows(&mut out, "  ", &flow_rows(settings));
        for (role, c) in [("source", &settings.source), ("target", &settings.target)] {
            let _ = writeln!(out, "  {role} cluster {}:", c.alias);
            write_rows(&mut out, "    ", &cluster_rows(c, role, settings));
        }
    }
    if !view.no_effect_keys.is_empty() {
        let _ = writeln!(out, "\nread by MirrorMaker 2, no effect on checkpointing:");
        for key in view.no_effect_keys {
            let _ = writeln!(out, "  - {key}");
        }
    }
    if !view.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in view.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    if !view.not_checked.is_empty() {
        let _ = writeln!(out, "\nnot checked:");
        for n in view.not_checked {
            let _ = writeln!(out, "  - {n}");
        }
    }
    if view.secrets == Secrets::Skip {
        let _ = writeln!(
            out,
            "\nstructure only (--no-secrets): config provider values were not read and key and \
             trust material (stores, PEM files) was not opened, so passwords, certificates and \
             keys were NOT checked; run `validate` without --no-secrets where the secrets are \
             mounted to check them"
        );
    }
    out
}

fn write_rows(out: &mut String, indent: &str, rows: &[Row]) {
    for row in rows {
        match &row.origin {
            Some(origin) => {
                let _ = writeln!(out, "{indent}{} = {}    # {origin}", row.key, row.value);
            }
            None => {
                let _ = writeln!(out, "{indent}{} = {}", row.key, row.value);
            }
        }
    }
}

/// The process-wide settings, in the key table's order.
fn metrics_rows(m: &MetricsSettings) -> Vec<Row> {
    keys::ALL
        .iter()
        .filter_map(|k| match k.shown {
            Shown::Process(value) => Some(derived(k.name, value(m))),
            Shown::Not | Shown::Flow(_) | Shown::FlowDerived(..) => None,
        })
        .collect()
}

/// A row whose value came from `key` of `flow` (its origin, or `default`);
/// connection keys are looked up as `<role>.<key>`.
fn setting_row(flow: &FlowConfig, origin_key: &str, key: &str, value: String) -> Row {
    let origin = flow
        .origins
        .get(origin_key)
        .map(String::as_str)
        .unwrap_or("default");
    Row {
        key: key.to_string(),
        value,
        origin: Some(origin.to_string()),
    }
}

/// A row derived from other settings.
fn derived(key: &str, value: String) -> Row {
    Row {
        key: key.to_string(),
        value,
        origin: None,
    }
}

/// The flow's settings in the key table's order, then the topic names
/// derived from them.
fn flow_rows(flow: &FlowConfig) -> Vec<Row> {
    let mut rows: Vec<Row> = keys::ALL
        .iter()
        .filter_map(|k| match k.shown {
            Shown::Flow(value) => Some(setting_row(flow, k.name, k.name, value(flow))),
            Shown::FlowDerived(label, value) => Some(derived(label, value(flow))),
            Shown::Not | Shown::Process(_) => None,
        })
        .collect();
    rows.extend([
        derived(
            "offset-syncs topic",
            format!(
                "{} on {}",
                flow.offset_syncs_topic(),
                flow.offset_syncs_cluster().alias
            ),
        ),
        derived(
            "checkpoints topic",
            format!("{} on {}", flow.checkpoints_topic(), flow.target.alias),
        ),
        derived(
            "sync-history topic",
            flow.sync_history_topic().map_or_else(
                || format!("(unused: {} = mm2)", keys::OFFSET_TRANSLATION.name),
                |t| format!("{t} on {}", flow.target.alias),
            ),
        ),
    ]);
    rows
}

/// The OAUTHBEARER settings as `validate` shows them (the client secret
/// masked).
fn oauth_rows(oauth: &OAuthSettings, line: &dyn Fn(&str, String) -> Row) -> Vec<Row> {
    let ms = |d: std::time::Duration| d.as_millis().to_string();
    let endpoint = match &oauth.token_endpoint {
        TokenEndpoint::Url(url) => url.clone(),
        TokenEndpoint::File(path) => format!("file://{}", path.display()),
    };
    let mut rows = vec![line("sasl.oauthbearer.token.endpoint.url", endpoint)];
    if let TokenEndpoint::Url(_) = oauth.token_endpoint {
        rows.push(derived("oauth client id", oauth.client_id.clone()));
        rows.push(derived(
            "oauth client secret",
            oauth.client_secret.to_string(),
        ));
        rows.push(derived(
            "oauth scope",
            oauth.scope.clone().unwrap_or_else(|| "(none)".into()),
        ));
        rows.push(line(
            "sasl.oauthbearer.header.urlencode",
            oauth.header_urlencode.to_string(),
        ));
        rows.push(derived(
            "oauth token endpoint trust",
            match &oauth.trust_pem {
                Some(path) => format!("PEM file {}", path.display()),
                None => "default root certificates".to_string(),
            },
        ));
    }
    rows.extend([
        line(
            "sasl.oauthbearer.sub.claim.name",
            oauth.sub_claim_name.clone(),
        ),
        line(
            "sasl.oauthbearer.scope.claim.name",
            oauth.scope_claim_name.clone(),
        ),
        line("sasl.login.retry.backoff.ms", ms(oauth.retry_backoff)),
        line(
            "sasl.login.retry.backoff.max.ms",
            ms(oauth.retry_backoff_max),
        ),
        line(
            "sasl.login.refresh.window.factor",
            oauth.refresh_window_factor.to_string(),
        ),
        line(
            "sasl.login.refresh.window.jitter",
            oauth.refresh_window_jitter.to_string(),
        ),
        line(
            "sasl.login.refresh.min.period.seconds",
            oauth.refresh_min_period.as_secs().to_string(),
        ),
        line(
            "sasl.login.refresh.buffer.seconds",
            oauth.refresh_buffer.as_secs().to_string(),
        ),
        line("sasl.login.connect.timeout.ms", ms(oauth.connect_timeout)),
        line("sasl.login.read.timeout.ms", ms(oauth.read_timeout)),
    ]);
    if !oauth.extensions.is_empty() {
        let names: Vec<&str> = oauth.extensions.iter().map(|(k, _)| k.as_str()).collect();
        rows.push(derived("sasl extensions", names.join(", ")));
    }
    rows
}

fn cluster_rows(c: &ClusterConnection, role: &str, flow: &FlowConfig) -> Vec<Row> {
    let line = |key: &str, value: String| setting_row(flow, &format!("{role}.{key}"), key, value);
    let servers: Vec<String> = c
        .bootstrap_servers
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut rows = vec![
        line("bootstrap.servers", servers.join(",")),
        line("security.protocol", c.security_protocol.name().to_string()),
    ];
    if let Some(tls) = &c.tls {
        let describe = |s: &PemSource| match s {
            PemSource::Inline(_) => "inline PEM [redacted]".to_string(),
            other => other.describe(),
        };
        let trust = match &tls.trust {
            TrustRoots::Default => "default root certificates".to_string(),
            TrustRoots::Pem {
                source: source @ PemSource::Store { password: None, .. },
                ..
            } => format!(
                "{} (no password: certificates read without an integrity check, as Java does)",
                describe(source)
            ),
            TrustRoots::Pem { source, .. } => describe(source),
        };
        rows.push(derived("trust", trust));
        rows.push(derived(
            "client certificate",
            match &tls.identity {
                None => "none".to_string(),
                Some(id) => format!(
                    "{}, key = {}",
                    describe(&id.certificate_chain),
                    describe(&id.private_key)
                ),
            },
        ));
        let verify = if tls.verify_hostname {
            "on".to_string()
        } else {
            "OFF (ssl.endpoint.identification.algorithm is empty)".to_string()
        };
        rows.push(derived("host name verification", verify));
    }
    if let Some(sasl) = &c.sasl {
        rows.push(line("sasl.mechanism", sasl.mechanism.name().to_string()));
        match (&sasl.oauth, &sasl.aws_iam) {
            (Some(oauth), _) => rows.extend(oauth_rows(oauth, &line)),
            (None, Some(login)) => rows.push(derived("aws credentials", describe_aws_login(login))),
            (None, None) => {
                rows.push(derived("sasl username", sasl.username.clone()));
                rows.push(derived("sasl password", sasl.password.to_string()));
            }
        }
    }
    rows
}

/// Where `AWS_MSK_IAM` takes its credentials from, in the chain's order
/// (no secret: a role's own keys show as `[redacted]`).
fn describe_aws_login(login: &crate::config::security::AwsIamLogin) -> String {
    let mut steps = Vec::new();
    if let Some(profile) = &login.profile {
        steps.push(format!("profile `{profile}`"));
    }
    if let Some(role) = &login.role_arn {
        let with = if login.role_keys.is_some() {
            " with awsRoleAccessKeyId [redacted]"
        } else {
            ""
        };
        steps.push(format!("role {role} via STS{with}"));
    }
    if login.default_providers {
        steps.push(
            "the AWS default chain (environment, web identity, shared profile, container, \
             instance metadata)"
                .to_string(),
        );
    }
    steps.join(", then ")
}
