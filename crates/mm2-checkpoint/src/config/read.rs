//! Reading a whole configuration: [`MirrorConfig`]'s constructors and the
//! check of every part of a file (which flows are enabled, which are ours,
//! each flow's settings, the keys nothing reads).

use std::path::Path;

use super::check::{Checker, ConfigWarning, NotChecked, Secrets, Unknown};
use super::connector::{self, CONNECTOR_FLOW, ConfigFormat};
use super::error::ConfigError;
use super::known_keys;
use super::lookup::Lookup;
use super::metrics::MetricsSettings;
use super::properties::Properties;
use super::providers::{Environment, Providers};
use super::security::is_connection_key;
use super::setting::java_parse_boolean;
use super::settings::{FlowConfig, MirrorConfig, Ownership, UnknownKey};
use super::validation::Validation;

impl MirrorConfig {
    /// Reads and validates a configuration file (UTF-8): an `mm2.properties`
    /// or a MirrorCheckpointConnector configuration, told apart by content
    /// ([`ConfigFormat::Auto`]). Reads referenced provider and PEM files; does
    /// no network I/O. Fails with the first error ([`Self::validate_file`]
    /// reports them all).
    pub fn load(path: &Path, env: &dyn Environment) -> Result<Self, ConfigError> {
        Self::load_as(path, ConfigFormat::Auto, env)
    }

    /// [`load`](Self::load) with the format given.
    pub fn load_as(
        path: &Path,
        format: ConfigFormat,
        env: &dyn Environment,
    ) -> Result<Self, ConfigError> {
        first_error(Self::validate_file(path, format, env, Secrets::Read))
    }

    /// Validates configuration text in `format` and derives the enabled flows;
    /// fails with the first error.
    pub fn from_text(
        text: &str,
        format: ConfigFormat,
        env: &dyn Environment,
    ) -> Result<Self, ConfigError> {
        first_error(Self::validate_text(text, format, env, Secrets::Read))
    }

    /// Validates parsed `mm2.properties` entries and derives the enabled
    /// flows; fails with the first error.
    pub fn from_properties(props: &Properties, env: &dyn Environment) -> Result<Self, ConfigError> {
        first_error(Self::validate_entries(props, env, false, Secrets::Read))
    }

    /// Checks a configuration file completely: every independent error, every
    /// warning, and (with [`Secrets::Skip`]) what was not read. Does no
    /// network I/O.
    pub fn validate_file(
        path: &Path,
        format: ConfigFormat,
        env: &dyn Environment,
        secrets: Secrets,
    ) -> Validation {
        let bytes = match env.read_file(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                return Validation::failed(
                    secrets,
                    vec![ConfigError::new(format!(
                        "cannot read `{}`: {e}",
                        path.display()
                    ))],
                    Vec::new(),
                );
            }
        };
        match std::str::from_utf8(&bytes) {
            Ok(text) => Self::validate_text(text, format, env, secrets),
            // The properties reader names the line of the first bad byte.
            Err(_) => Validation::failed(
                secrets,
                vec![
                    Properties::parse_bytes(&bytes)
                        .err()
                        .unwrap_or_else(|| ConfigError::new("the file is not valid UTF-8")),
                ],
                Vec::new(),
            ),
        }
    }

    /// [`validate_file`](Self::validate_file) for configuration text.
    pub fn validate_text(
        text: &str,
        format: ConfigFormat,
        env: &dyn Environment,
        secrets: Secrets,
    ) -> Validation {
        let (props, is_connector) = match connector::read_all(text, format) {
            Ok(read) => read,
            Err(errors) => {
                let rest = NotChecked::new(
                    None,
                    None,
                    "the settings: the file has entries that cannot be read",
                );
                return Validation::failed(secrets, errors, vec![rest]);
            }
        };
        let mut validation = Self::validate_entries(&props, env, is_connector, secrets);
        if is_connector {
            // A missing cluster setting is named by its cluster (`target.<k>`);
            // in a connector configuration that is `target.cluster.<k>`.
            for e in &mut validation.errors {
                if let Some(key) = e.key()
                    && e.line().is_none()
                    && let Some(written) = connector::cluster_key(key)
                {
                    *e = ConfigError::for_key(written, e.message());
                }
            }
        }
        validation
    }

    /// Checks parsed entries that may stand for a connector configuration
    /// (`connector.rs`), whose keys are then reported as the user wrote them.
    ///
    /// Every independent part is checked even after an error: the provider
    /// declarations, the metrics settings, `clusters`, each flow's `enabled`
    /// and `emit.checkpoints.enabled`, and each checkpointed flow's keys and
    /// clusters. What depends on a part with an error is skipped (a flow whose
    /// `enabled` is invalid; everything but the metrics and providers when
    /// `clusters` is), and a [`NotChecked`] entry says so.
    fn validate_entries(
        props: &Properties,
        env: &dyn Environment,
        is_connector: bool,
        secrets: Secrets,
    ) -> Validation {
        let checker = Checker::new(secrets);
        let found = {
            let lookup = Lookup::new(props, Providers::declare(props, env, &checker), &checker);
            check_entries(&lookup, props, env, is_connector)
        };
        let (mut errors, warnings, mut not_checked) = checker.into_findings();
        // In file order; what has no line (a missing key, a flow) last.
        errors.sort_by_key(|e| (e.line().is_none(), e.line()));
        not_checked.sort_by_key(|n| (n.line().is_none(), n.line()));
        let Some(found) = found else {
            return Validation {
                warnings,
                not_checked,
                ..Validation::failed(secrets, errors, Vec::new())
            };
        };
        let ownership = if is_connector {
            Ownership::Connector
        } else {
            found.ownership
        };
        let flows = Validation::flow_reports(&found.enabled, &ownership, found.built);
        let config = match (errors.is_empty(), secrets, found.metrics) {
            (true, Secrets::Read, Some(metrics))
                if flows
                    .iter()
                    .all(|f| !f.checkpointed || f.settings.is_some()) =>
            {
                Some(MirrorConfig {
                    clusters: found.clusters.clone(),
                    flows: flows.iter().filter_map(|f| f.settings.clone()).collect(),
                    ownership,
                    warnings: warnings.clone(),
                    unknown_keys: found.unknown_keys,
                    no_effect_keys: found.no_effect_keys.clone(),
                    metrics,
                })
            }
            _ => None,
        };
        Validation {
            config,
            secrets,
            clusters: found.clusters,
            flows,
            metrics: found.metrics,
            no_effect_keys: found.no_effect_keys,
            errors,
            warnings,
            not_checked,
        }
    }
}

/// The config of `validation`, or its first error.
fn first_error(validation: Validation) -> Result<MirrorConfig, ConfigError> {
    validation
        .into_config()
        .map_err(|mut errors| errors.remove(0))
}

/// What [`check_entries`] derived (its problems are in the checker).
struct Found {
    clusters: Vec<String>,
    metrics: Option<MetricsSettings>,
    /// Every enabled flow whose hand-over setting is valid, in `clusters` order.
    enabled: Vec<String>,
    ownership: Ownership,
    /// The checkpointed flows that were derived without problems.
    built: Vec<FlowConfig>,
    unknown_keys: Vec<UnknownKey>,
    no_effect_keys: Vec<String>,
}

/// Checks every part of `props` through `lookup`; `None` when `clusters`
/// itself has errors, so that no flow can be named.
fn check_entries(
    lookup: &Lookup<'_>,
    props: &Properties,
    env: &dyn Environment,
    is_connector: bool,
) -> Option<Found> {
    let checker = lookup.checker;
    let connector_key = |key: &str| -> String {
        key.strip_prefix(CONNECTOR_FLOW)
            .and_then(|k| k.strip_prefix('.'))
            .filter(|_| is_connector)
            .unwrap_or(key)
            .to_string()
    };
    let metrics = lookup.metrics_settings().ok();
    let Ok(clusters) = lookup.clusters() else {
        checker.not_checked(NotChecked::new(
            Some("clusters".to_string()),
            props.line("clusters"),
            "the flows, the cluster settings and the key names: they all depend on the cluster \
             aliases",
        ));
        return None;
    };
    let unknown_keys = known_keys::unknown_keys(props.keys(), &clusters);
    let mut unknown_as_written = Vec::new();
    for unknown in &unknown_keys {
        let line = props.line(&unknown.key);
        let at = line.map_or_else(String::new, |line| format!(" (line {line})"));
        let unknown_written = UnknownKey {
            key: props.written_as(&unknown.key).to_string(),
            suggestion: unknown.suggestion.as_deref().map(connector_key),
            note: unknown.note,
        };
        let unknown = &unknown_written;
        let mut text = format!(
            "`{}`{at} is read by neither MirrorMaker 2 nor mm2-checkpoint and has no effect",
            unknown.key
        );
        match (&unknown.suggestion, unknown.note) {
            (Some(suggestion), Some(note)) => {
                text.push_str(&format!("; {note}: use `{suggestion}`"));
            }
            (Some(suggestion), None) => {
                text.push_str(&format!("; did you mean `{suggestion}`?"));
            }
            (None, Some(note)) => text.push_str(&format!("; {note}")),
            (None, None) => {}
        }
        checker.warn(ConfigWarning::new(Some(unknown.key.clone()), line, text));
        unknown_as_written.push(unknown_written);
    }
    for key in props.keys() {
        let client_key = ["consumer.", "producer.", "admin."]
            .iter()
            .find_map(|p| key.strip_prefix(p));
        if client_key.is_some_and(is_connection_key) {
            checker.warn(ConfigWarning::new(
                Some(key.to_string()),
                props.line(key),
                format!(
                    "`{key}` is ignored (MM2 drops top-level client keys too); put it on a \
                     cluster, e.g. `<alias>.{key}`"
                ),
            ));
        }
    }
    let global_heartbeats = lookup
        .raw("emit.heartbeats.enabled")
        .is_none_or(java_parse_boolean);
    let mut enabled = Vec::new();
    let mut undecided = false;
    for source in &clusters {
        for target in &clusters {
            if source == target {
                continue;
            }
            let flow = format!("{source}->{target}");
            match lookup.flow_enabled(&flow, global_heartbeats) {
                Ok(false) => {}
                Ok(true) => match lookup.emit_checkpoints(&flow) {
                    Ok(emit) => enabled.push((flow, source.clone(), target.clone(), emit)),
                    Err(Unknown) => {
                        undecided = true;
                        checker.not_checked(NotChecked::new(
                            None,
                            None,
                            format!(
                                "flow {flow}: its emit.checkpoints.enabled has an error or was \
                                 not read, so it is not known whether mm2-checkpoint or \
                                 MirrorMaker 2 checkpoints it"
                            ),
                        ));
                    }
                },
                Err(Unknown) => {
                    undecided = true;
                    checker.not_checked(NotChecked::new(
                        None,
                        None,
                        format!(
                            "flow {flow}: its `enabled` setting has an error or was not read, \
                             so it is not known whether the flow is enabled"
                        ),
                    ));
                }
            }
        }
    }
    // A flow with `emit.checkpoints.enabled=false` is handed over to us;
    // once one is, the file is shared with MM2 and the others stay MM2's.
    let handed_over: Vec<(String, String)> = enabled
        .iter()
        .filter_map(|(flow, _, _, emit)| match emit {
            Some((false, s)) => Some((flow.clone(), s.describe_origin())),
            _ => None,
        })
        .collect();
    let ownership = if handed_over.is_empty() {
        Ownership::OwnFile
    } else {
        Ownership::Shared {
            left_to_mm2: enabled
                .iter()
                .filter(|(flow, ..)| !handed_over.iter().any(|(f, _)| f == flow))
                .map(|(flow, ..)| flow.clone())
                .collect(),
            handed_over,
        }
    };
    let mut built = Vec::new();
    for (flow, source, target, _) in &enabled {
        if !ownership.checkpoints(flow) {
            continue;
        }
        let prefix = format!("{flow}.");
        for key in props.keys() {
            let Some(rest) = key.strip_prefix(&prefix) else {
                continue;
            };
            let line = props.line(key);
            if is_connector && is_connection_key(rest) {
                let at = line.map_or_else(String::new, |line| format!(" (line {line})"));
                let written = props.written_as(key);
                checker.warn(ConfigWarning::new(
                    Some(written.to_string()),
                    line,
                    format!(
                        "`{written}`{at} is ignored (as in MirrorConnectorConfig, a bare \
                         connection key reaches no client); use `source.cluster.{rest}` and \
                         `target.cluster.{rest}`"
                    ),
                ));
            } else if is_connection_key(rest) {
                checker.warn(ConfigWarning::new(
                    Some(key.to_string()),
                    line,
                    format!(
                        "`{key}` is ignored (as in MM2, a flow-level connection key reaches no \
                         client); use `{source}.<key>`/`{target}.<key>` or \
                         `{flow}.source.admin.<key>`-style keys"
                    ),
                ));
            }
        }
        if let Ok(config) = lookup.flow(flow, source, target, env) {
            built.push(config);
        }
    }
    if enabled.is_empty() && !undecided {
        checker.error(
            ConfigError::for_key(
                "clusters",
                format!(
                    "no flow is enabled; enable one with e.g. `{}.enabled = true`",
                    match clusters.as_slice() {
                        [a, b, ..] => format!("{a}->{b}"),
                        _ => "<source>-><target>".to_string(),
                    }
                ),
            )
            .at_line(props.line("clusters")),
        );
    }
    // What MM2 reads but checkpointing does not use: every key that is
    // neither unknown nor read above (the providers' own keys are read when
    // they are declared). Only when nothing failed: a key an error kept from
    // being read would be listed wrongly.
    let no_effect_keys = if checker.error_count() > 0 {
        Vec::new()
    } else {
        props
            .keys()
            .filter(|k| {
                *k != "clusters"
                    && !k.starts_with("config.providers")
                    && !lookup.was_read(k)
                    && !unknown_keys.iter().any(|u| u.key == *k)
            })
            .map(|k| match props.line(k) {
                Some(line) => format!("{} (line {line})", props.written_as(k)),
                None => props.written_as(k).to_string(),
            })
            .collect()
    };
    Some(Found {
        clusters,
        metrics,
        enabled: enabled.into_iter().map(|(flow, ..)| flow).collect(),
        ownership,
        built,
        unknown_keys: unknown_as_written,
        no_effect_keys,
    })
}
