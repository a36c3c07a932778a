//! The effective-settings report printed by `mm2-checkpoint validate`.
//!
//! It shows, per enabled flow, every value the daemon will use and where it came
//! from, so an operator can check MM2's layering without reading the source.
//! Passwords and inline keys print as `[redacted]`.

use std::fmt::Write as _;

use super::security::{ClusterConnection, PemSource, TrustRoots};
use super::{FlowConfig, MirrorConfig};

/// Renders every flow's effective settings, secrets masked, as plain text.
pub fn render_effective_settings(config: &MirrorConfig) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "clusters = {}", config.clusters.join(", "));
    let names: Vec<String> = config.flows.iter().map(FlowConfig::name).collect();
    let _ = writeln!(out, "checkpointed flows = {}", names.join(", "));
    for name in &names {
        let _ = writeln!(out, "  {name}: {}", config.ownership.reason(name));
    }
    let left = config.ownership.left_to_mm2();
    if !left.is_empty() {
        let _ = writeln!(
            out,
            "left to MirrorMaker 2 = {}    # emit.checkpoints.enabled is true: MM2 checkpoints them",
            left.join(", ")
        );
    }
    let m = &config.metrics;
    let _ = writeln!(
        out,
        "{} = {}\n{} = {}",
        super::metrics::LATENCY_GRANULARITY_KEY,
        m.latency_granularity.as_str(),
        super::metrics::MM2_NAMES_KEY,
        m.mm2_names
    );
    for flow in &config.flows {
        render_flow(&mut out, flow);
    }
    if !config.no_effect_keys.is_empty() {
        let _ = writeln!(out, "\nread by MirrorMaker 2, no effect on checkpointing:");
        for key in &config.no_effect_keys {
            let _ = writeln!(out, "  - {key}");
        }
    }
    if !config.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in &config.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

fn render_flow(out: &mut String, flow: &FlowConfig) {
    let _ = writeln!(out, "\n[flow {}]", flow.name());
    let line = |out: &mut String, key: &str, value: String| {
        let origin = flow
            .origins
            .get(key)
            .map(String::as_str)
            .unwrap_or("default");
        let _ = writeln!(out, "  {key} = {value}    # {origin}");
    };
    let secs = |d: std::time::Duration| d.as_secs().to_string();
    let millis = |d: std::time::Duration| d.as_millis().to_string();
    line(
        out,
        "emit.checkpoints.interval.seconds",
        secs(flow.emit_checkpoints_interval),
    );
    line(
        out,
        "sync.group.offsets.enabled",
        flow.sync_group_offsets_enabled.to_string(),
    );
    line(
        out,
        "sync.group.offsets.interval.seconds",
        secs(flow.sync_group_offsets_interval),
    );
    line(
        out,
        "refresh.groups.enabled",
        flow.refresh_groups_enabled.to_string(),
    );
    line(
        out,
        "refresh.groups.interval.seconds",
        secs(flow.refresh_groups_interval),
    );
    line(out, "topics", flow.filters.topics.clone());
    line(out, "topics.exclude", flow.filters.topics_exclude.clone());
    line(out, "groups", flow.filters.groups.clone());
    line(out, "groups.exclude", flow.filters.groups_exclude.clone());
    line(
        out,
        "source.cluster.alias",
        format!("{:?}", flow.source_alias),
    );
    line(
        out,
        "target.cluster.alias",
        format!("{:?}", flow.target_alias),
    );
    let policy = &flow.replication_policy;
    line(
        out,
        "replication.policy.class",
        policy.class_name().to_string(),
    );
    line(
        out,
        "replication.policy.separator",
        format!("{:?}", policy.separator()),
    );
    let _ = writeln!(
        out,
        "  internal topic separator = {:?}",
        policy.internal_separator()
    );
    line(
        out,
        "offset-syncs.topic.location",
        flow.offset_syncs_topic_location.as_str().to_string(),
    );
    line(
        out,
        "checkpoints.topic.replication.factor",
        flow.checkpoints_topic_replication_factor.to_string(),
    );
    line(
        out,
        "consumer.poll.timeout.ms",
        millis(flow.consumer_poll_timeout),
    );
    line(out, "admin.timeout.ms", millis(flow.admin_timeout));
    line(out, "offset.lag.max", flow.offset_lag_max.to_string());
    line(
        out,
        super::GROUP_OFFSETS_MODE_KEY,
        flow.group_offsets_mode.as_str().to_string(),
    );
    line(
        out,
        super::FOLLOW_COALESCE_KEY,
        millis(flow.follow_coalesce),
    );
    line(
        out,
        super::OFFSET_TRANSLATION_KEY,
        flow.offset_translation.as_str().to_string(),
    );
    let budget = match flow.offset_translation {
        super::OffsetTranslation::Precise => flow.translation_max_syncs.to_string(),
        super::OffsetTranslation::Mm2 => format!(
            "{} (unused: translation is mm2)",
            flow.translation_max_syncs
        ),
    };
    line(out, super::TRANSLATION_MAX_SYNCS_KEY, budget);
    let _ = writeln!(
        out,
        "  offset-syncs topic = {} on {}",
        flow.offset_syncs_topic(),
        flow.offset_syncs_cluster().alias
    );
    let _ = writeln!(
        out,
        "  checkpoints topic = {} on {}",
        flow.checkpoints_topic(),
        flow.target.alias
    );
    render_cluster(out, "source", &flow.source, flow);
    render_cluster(out, "target", &flow.target, flow);
}

fn render_cluster(out: &mut String, role: &str, c: &ClusterConnection, flow: &FlowConfig) {
    let _ = writeln!(out, "  {role} cluster {}:", c.alias);
    let line = |out: &mut String, key: &str, value: String| {
        let origin = flow
            .origins
            .get(&format!("{role}.{key}"))
            .map(String::as_str)
            .unwrap_or("default");
        let _ = writeln!(out, "    {key} = {value}    # {origin}");
    };
    let servers: Vec<String> = c
        .bootstrap_servers
        .iter()
        .map(ToString::to_string)
        .collect();
    line(out, "bootstrap.servers", servers.join(","));
    line(
        out,
        "security.protocol",
        c.security_protocol.name().to_string(),
    );
    if let Some(tls) = &c.tls {
        let describe = |s: &PemSource| match s {
            PemSource::File(p) => format!("PEM file {}", p.display()),
            PemSource::Inline(_) => "inline PEM [redacted]".to_string(),
            PemSource::Pkcs12 { path, .. } => format!("PKCS12 store {}", path.display()),
        };
        let trust = match &tls.trust {
            TrustRoots::Default => "default root certificates".to_string(),
            TrustRoots::Pem { source, .. } => describe(source),
        };
        let _ = writeln!(out, "    trust = {trust}");
        match &tls.identity {
            None => {
                let _ = writeln!(out, "    client certificate = none");
            }
            Some(id) => {
                let _ = writeln!(
                    out,
                    "    client certificate = {}, key = {}",
                    describe(&id.certificate_chain),
                    describe(&id.private_key)
                );
            }
        }
        let verify = if tls.verify_hostname {
            "on".to_string()
        } else {
            "OFF (ssl.endpoint.identification.algorithm is empty)".to_string()
        };
        let _ = writeln!(out, "    host name verification = {verify}");
    }
    if let Some(sasl) = &c.sasl {
        line(out, "sasl.mechanism", sasl.mechanism.name().to_string());
        let _ = writeln!(out, "    sasl username = {}", sasl.username);
        let _ = writeln!(out, "    sasl password = {}", sasl.password);
    }
}
