//! The process-wide metrics settings (ours; MM2 ignores them), read from the
//! top level of the file only: one `/metrics` endpoint serves every flow. The
//! metrics themselves are described in `docs/operations.md` (Metrics). The
//! types live with the other settings (`settings.rs`), their keys in the key
//! table (`keys.rs`), and `Lookup::metrics_settings` reads them.

use super::keys;
pub use super::settings::{LatencyGranularity, MetricsSettings, Mm2NameFormats};

/// The key choosing the labels of the checkpoint-latency series.
pub const LATENCY_GRANULARITY_KEY: &str = keys::LATENCY_GRANULARITY.name;

/// The key turning MirrorMaker 2's checkpoint-latency names on or off.
pub const MM2_NAMES_KEY: &str = keys::MM2_NAMES.name;

/// The key choosing which of MirrorMaker 2's name formats the MM2 names follow.
pub const MM2_NAME_FORMATS_KEY: &str = keys::MM2_NAME_FORMATS.name;

/// The key of the daemon's status pass interval (0: off).
pub const STATUS_INTERVAL_KEY: &str = keys::STATUS_INTERVAL.name;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::providers::tests::FakeEnvironment;
    use crate::config::{ConfigError, MirrorConfig, Properties};

    const BASE: &str = "clusters = A, B\nA.bootstrap.servers = a:9092\n\
                        B.bootstrap.servers = b:9092\nA->B.enabled = true\n";

    fn load(extra: &str) -> Result<MirrorConfig, ConfigError> {
        let props = Properties::parse(&format!("{BASE}{extra}"))?;
        MirrorConfig::from_properties(&props, &FakeEnvironment::default())
    }

    #[test]
    fn defaults_are_flow_granularity_without_mm2_names() {
        let config = load("").expect("accepted");
        assert_eq!(config.metrics, MetricsSettings::default());
        assert_eq!(config.metrics.latency_granularity, LatencyGranularity::Flow);
        assert!(!config.metrics.mm2_names);
    }

    #[test]
    fn both_keys_are_read_and_known() {
        let config = load(&format!(
            "{LATENCY_GRANULARITY_KEY} = group\n{MM2_NAMES_KEY} = TRUE\n"
        ))
        .expect("accepted");
        assert_eq!(
            config.metrics,
            MetricsSettings {
                latency_granularity: LatencyGranularity::Group,
                mm2_names: true,
                mm2_name_formats: Mm2NameFormats::Legacy,
                status_interval: None,
            }
        );
        assert!(config.unknown_keys.is_empty(), "{:?}", config.unknown_keys);
        assert!(
            config.no_effect_keys.is_empty(),
            "{:?}",
            config.no_effect_keys
        );
        let partition =
            load(&format!("{LATENCY_GRANULARITY_KEY} = partition\n")).expect("accepted");
        assert_eq!(
            partition.metrics.latency_granularity,
            LatencyGranularity::Partition
        );
    }

    #[test]
    fn a_bad_value_names_the_key_line_and_the_accepted_values() {
        let e = load(&format!("{LATENCY_GRANULARITY_KEY} = topic\n"))
            .expect_err("rejected")
            .to_string();
        assert!(e.contains(LATENCY_GRANULARITY_KEY), "{e}");
        assert!(e.contains("line 5"), "{e}");
        assert!(
            e.contains("`topic`") && e.contains("`partition`, `group` or `flow`"),
            "{e}"
        );
        let e = load(&format!("{MM2_NAMES_KEY} = yes\n"))
            .expect_err("rejected")
            .to_string();
        assert!(e.contains(MM2_NAMES_KEY) && e.contains("`yes`"), "{e}");
    }

    #[test]
    fn the_mm2_name_formats_are_a_list_of_legacy_and_new_as_mm2s_metric_names_formats() {
        assert_eq!(
            load("").expect("accepted").metrics.mm2_name_formats,
            Mm2NameFormats::Legacy
        );
        for (value, formats) in [
            ("legacy", Mm2NameFormats::Legacy),
            ("new", Mm2NameFormats::New),
            ("legacy,new", Mm2NameFormats::Both),
            ("new , legacy", Mm2NameFormats::Both),
        ] {
            let config = load(&format!("{MM2_NAME_FORMATS_KEY} = {value}\n")).expect("accepted");
            assert_eq!(config.metrics.mm2_name_formats, formats, "{value}");
            assert!(config.unknown_keys.is_empty(), "{:?}", config.unknown_keys);
        }
        for bad in ["", "NEW", "legacy,", "legacy,old"] {
            let e = load(&format!("{MM2_NAME_FORMATS_KEY} = {bad}\n"))
                .expect_err("rejected")
                .to_string();
            assert!(
                e.contains(MM2_NAME_FORMATS_KEY)
                    && e.contains("line 5")
                    && e.contains("`legacy`, `new` or `legacy,new`"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn validate_prints_the_settings() {
        let config = load(&format!("{LATENCY_GRANULARITY_KEY} = flow\n")).expect("accepted");
        let text = crate::config::render_effective_settings(&config);
        assert!(
            text.contains(&format!(
                "{LATENCY_GRANULARITY_KEY} = flow\n{STATUS_INTERVAL_KEY} = 0\n{MM2_NAMES_KEY} = false\n"
            )),
            "{text}"
        );
    }

    #[test]
    fn a_misspelt_key_is_unknown_with_the_real_one_suggested() {
        let config = load("mm2-checkpoint.metrics.latency.granularty = group\n").expect("accepted");
        let unknown = &config.unknown_keys[0];
        assert_eq!(unknown.suggestion.as_deref(), Some(LATENCY_GRANULARITY_KEY));
    }

    #[test]
    fn the_status_pass_is_off_by_default_and_at_0_and_on_at_an_interval() {
        assert_eq!(load("").expect("accepted").metrics.status_interval, None);
        let off = load(&format!("{STATUS_INTERVAL_KEY} = 0\n")).expect("accepted");
        assert_eq!(off.metrics.status_interval, None);
        let on = load(&format!("{STATUS_INTERVAL_KEY} = 60000\n")).expect("accepted");
        assert_eq!(
            on.metrics.status_interval,
            Some(std::time::Duration::from_secs(60))
        );
        assert!(on.unknown_keys.is_empty(), "{:?}", on.unknown_keys);
        for bad in ["-1", "soon"] {
            let e = load(&format!("{STATUS_INTERVAL_KEY} = {bad}\n"))
                .expect_err("rejected")
                .to_string();
            assert!(
                e.contains(STATUS_INTERVAL_KEY) && e.contains("line 5"),
                "{e}"
            );
        }
    }
}
