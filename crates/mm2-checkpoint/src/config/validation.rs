//! What one check of a configuration found ([`Validation`]): the runnable
//! configuration if there is one, every flow with whether it is ours, every
//! error and warning, and what was not checked.

use super::check::{ConfigWarning, NotChecked, Secrets};
use super::error::ConfigError;
use super::metrics::MetricsSettings;
use super::settings::{FlowConfig, MirrorConfig, Ownership};

/// One enabled flow as `validate` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowReport {
    /// `S->T`.
    pub name: String,
    /// Whether mm2-checkpoint checkpoints it (else MirrorMaker 2 keeps it).
    pub checkpointed: bool,
    /// Why, as one sentence ([`Ownership::reason`]).
    pub reason: String,
    /// Its effective settings, when they could be derived: not for flows left
    /// to MirrorMaker 2, flows with errors, or (with [`Secrets::Skip`]) flows
    /// that depend on a value that was not read.
    pub settings: Option<FlowConfig>,
}

/// Everything one check of a configuration found: the configuration itself if
/// it can run, every error, every warning, and what was not checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// The runnable configuration: present when there are no errors and the
    /// secrets were read ([`Secrets::Read`]).
    pub config: Option<MirrorConfig>,
    /// Whether provider values and material were read.
    pub secrets: Secrets,
    /// The aliases from `clusters`; empty when `clusters` has errors.
    pub clusters: Vec<String>,
    /// Every enabled flow, in `clusters` order, with whether it is ours.
    pub flows: Vec<FlowReport>,
    /// The process-wide metrics settings, when they are valid.
    pub metrics: Option<MetricsSettings>,
    /// Keys MirrorMaker 2 reads that have no effect on checkpointing (see
    /// [`MirrorConfig::no_effect_keys`]); only listed when there are no errors,
    /// since a key that an error kept from being read would be listed wrongly.
    pub no_effect_keys: Vec<String>,
    /// Every error, in the order found.
    pub errors: Vec<ConfigError>,
    /// Every warning.
    pub warnings: Vec<ConfigWarning>,
    /// What was not checked, and why.
    pub not_checked: Vec<NotChecked>,
}

impl Validation {
    /// A check that stopped before any flow could be named: only `errors`
    /// and `not_checked`.
    pub(crate) fn failed(
        secrets: Secrets,
        errors: Vec<ConfigError>,
        not_checked: Vec<NotChecked>,
    ) -> Self {
        Self {
            config: None,
            secrets,
            clusters: Vec::new(),
            flows: Vec::new(),
            metrics: None,
            no_effect_keys: Vec::new(),
            errors,
            warnings: Vec::new(),
            not_checked,
        }
    }

    /// The runnable configuration, or every error (never an empty list; a
    /// check without the secrets has no runnable configuration, which is an
    /// error too).
    pub fn into_config(self) -> Result<MirrorConfig, Vec<ConfigError>> {
        match (self.config, self.errors.is_empty()) {
            (Some(config), true) => Ok(config),
            (_, false) => Err(self.errors),
            (None, true) => Err(vec![ConfigError::new(
                "the configuration was checked without its secrets (--no-secrets) and cannot run",
            )]),
        }
    }

    /// Whether the configuration has no errors.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// Whether the check passes: no errors and, when `strict`, no warnings
    /// either (`validate --strict`).
    pub fn passes(&self, strict: bool) -> bool {
        self.is_ok() && (!strict || self.warnings.is_empty())
    }

    /// Keeps only the flows whose target is one of `targets`, as MirrorMaker
    /// 2's `--clusters` does (docs/deploy.md, "Topology"); no targets keeps
    /// every flow. Refused, naming the alias, when a target is not in
    /// `clusters` (nothing is changed then).
    pub fn keep_targets(&mut self, targets: &[String]) -> Result<(), String> {
        if targets.is_empty() {
            return Ok(());
        }
        if let Some(unknown) = targets.iter().find(|t| !self.clusters.contains(t)) {
            return Err(format!(
                "no cluster `{unknown}` in `clusters` (it lists {})",
                match self.clusters.is_empty() {
                    true => "none".to_owned(),
                    false => self.clusters.join(", "),
                }
            ));
        }
        let wanted = |name: &str| {
            name.split_once("->")
                .is_some_and(|(_, target)| targets.iter().any(|t| t == target))
        };
        self.flows.retain(|f| wanted(&f.name));
        if let Some(config) = self.config.as_mut() {
            config.flows.retain(|f| targets.contains(&f.target.alias));
        }
        Ok(())
    }

    /// The flows left to MirrorMaker 2.
    pub fn left_to_mm2(&self) -> Vec<&str> {
        self.flows
            .iter()
            .filter(|f| !f.checkpointed)
            .map(|f| f.name.as_str())
            .collect()
    }

    /// Every flow report of `ownership` for the enabled flows `enabled`, with
    /// the settings in `built` (by flow name).
    pub(crate) fn flow_reports(
        enabled: &[String],
        ownership: &Ownership,
        mut built: Vec<FlowConfig>,
    ) -> Vec<FlowReport> {
        enabled
            .iter()
            .map(|name| {
                let settings = built
                    .iter()
                    .position(|f| f.name() == *name)
                    .map(|i| built.remove(i));
                FlowReport {
                    name: name.clone(),
                    checkpointed: ownership.checkpoints(name),
                    reason: ownership.reason(name),
                    settings,
                }
            })
            .collect()
    }
}
