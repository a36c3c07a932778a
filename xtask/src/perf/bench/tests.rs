//! Unit tests of the bench's own logic: option parsing, the CPU and metrics
//! arithmetic, log parsing and the rendered table.

use std::path::PathBuf;

use super::args::Mm2Args;
use super::logs::{
    log_span, log4j_millis, ours_first_round_ms, ours_offsets_replay, ours_sync_read_ms,
};
use super::mm2::{MM2_STORES_LOADED, MM2_SYNCS_READ_DONE, MM2_SYNCS_READ_START, MM2_TASK_CREATED};
use super::process::{ProcSample, cpu_per_round, parse_round_metrics, threads_cpu_delta_ms};
use super::report::{
    CatchUp, Report, RunResult, SizeResult, ratio, render_raw, render_table, secs,
};

#[test]
fn parse_defaults_match_the_issue() {
    let a = Mm2Args::parse(&[]).unwrap();
    assert_eq!(a.groups, vec![10, 100, 1000, 5000, 10_000]);
    assert_eq!(a.ours_only, vec![100_000]);
    assert_eq!(a.mm2_jvm, vec![super::args::Mm2Jvm::Stock]);
    assert_eq!(a.build, super::args::OursBuild::Dist);
    assert_eq!((a.partitions, a.syncs, a.window), (10, 1_000_000, 30));
    use super::args::Variant;
    assert_eq!(a.variants, vec![Variant::GroupSync, Variant::TlsScram]);
    assert_eq!(a.variant_groups, 1000);
}

#[test]
fn parse_reads_every_option() {
    let a = Mm2Args::parse(&[
        "--groups",
        "5, 50",
        "--partitions",
        "3",
        "--syncs",
        "0",
        "--window",
        "7",
        "--out",
        "x.md",
        "--ours-only-groups",
        "0",
        "--mm2-jvm",
        "stock,small",
        "--build",
        "release",
        "--variants",
        "tls-scram",
        "--variant-groups",
        "20",
    ])
    .unwrap();
    assert_eq!(a.variants, vec![super::args::Variant::TlsScram]);
    assert_eq!(a.variant_groups, 20);
    assert!(
        Mm2Args::parse(&["--variants", "none"])
            .unwrap()
            .variants
            .is_empty()
    );
    assert!(
        Mm2Args::parse(&["--mm2-jvm", "none"])
            .unwrap()
            .mm2_jvm
            .is_empty()
    );
    assert!(a.ours_only.is_empty());
    assert_eq!(
        a.mm2_jvm,
        vec![super::args::Mm2Jvm::Stock, super::args::Mm2Jvm::Small]
    );
    assert_eq!(a.build, super::args::OursBuild::Release);
    assert_eq!(a.groups, vec![5, 50]);
    assert_eq!((a.partitions, a.syncs, a.window), (3, 0, 7));
    assert_eq!(a.out, Some(PathBuf::from("x.md")));
}

#[test]
fn parse_refuses_bad_values_naming_the_option() {
    for (args, needle) in [
        (&["--groups", "10,x"][..], "--groups"),
        (&["--groups", "0,10"][..], "--groups"),
        (&["--partitions"][..], "--partitions"),
        (&["--syncs", "-1"][..], "--syncs"),
        (&["--frobnicate"][..], "--frobnicate"),
        (&["--mm2-jvm", "huge"][..], "--mm2-jvm"),
        (&["--build", "debug"][..], "--build"),
        (&["--variants", "fast"][..], "--variants"),
        (&["--variant-groups", "0"][..], "--variant-groups"),
    ] {
        let e = Mm2Args::parse(args).unwrap_err().to_string();
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn cpu_per_round_divides_ticks_by_rounds() {
    let s = |t, threads: &[(u32, f64)]| ProcSample {
        cpu_ticks: t,
        threads: threads.iter().copied().collect(),
        ..ProcSample::default()
    };
    assert_eq!(
        cpu_per_round(&s(100, &[]), &s(160, &[]), 30.0, 100),
        Some(0.02)
    );
    assert_eq!(cpu_per_round(&s(100, &[]), &s(160, &[]), 0.0, 100), None);
    assert_eq!(cpu_per_round(&s(160, &[]), &s(100, &[]), 3.0, 100), None);
    // Below one tick, the threads' runtimes tell: thread 2 is new, 3 exited.
    let a = s(5, &[(1, 10.0), (3, 50.0)]);
    let b = s(5, &[(1, 12.5), (2, 1.5)]);
    assert_eq!(threads_cpu_delta_ms(&a, &b), 4.0);
    assert_eq!(cpu_per_round(&a, &b, 4.0, 100), Some(0.001));
}

#[test]
fn round_metrics_are_summed_over_flows() {
    let text = "# HELP x\n\
        mm2_checkpoint_round_duration_seconds_sum{flow=\"a->b\"} 0.5\n\
        mm2_checkpoint_round_duration_seconds_count{flow=\"a->b\"} 4\n\
        mm2_checkpoint_round_duration_seconds_bucket{flow=\"a->b\",le=\"0.1\"} 4\n\
        mm2_checkpoint_round_duration_seconds_sum{flow=\"c->d\"} 0.25\n\
        mm2_checkpoint_round_duration_seconds_count{flow=\"c->d\"} 1\n";
    assert_eq!(parse_round_metrics(text), Some((0.75, 5)));
    assert_eq!(parse_round_metrics("# nothing\n"), None);
}

#[test]
fn log_span_uses_log4j_timestamps() {
    let log = "[2026-12-02T15:30:01,250] INFO Creating task x-0 (W)\n\
        [2026-12-02T15:30:02,000] INFO Starting KafkaBasedLog with topic mm2-offset-syncs.t.internal reportErrorsToCallback=false (K)\n\
        [2026-12-02T15:30:04,500] INFO Finished reading KafkaBasedLog for topic mm2-offset-syncs.t.internal (K)\n\
        [2026-12-02T15:30:04,501] INFO starting checkpoint and offset sync stores took 3000 ms (S)\n";
    assert_eq!(
        log_span(log, MM2_SYNCS_READ_START, &[MM2_SYNCS_READ_DONE]),
        Some(2.5)
    );
    assert_eq!(
        log_span(log, MM2_TASK_CREATED, &[MM2_STORES_LOADED]),
        Some(3.251)
    );
    assert_eq!(log_span(log, "never logged", &["x"]), None);
    assert_eq!(log4j_millis("[2026-12-02 00:00:01,007] x"), Some(1_007));
}

#[test]
fn our_sync_read_time_comes_from_the_json_log() {
    let log = "{\"level\":\"INFO\",\"fields\":{\"message\":\"read the checkpoints topic to its end\",\"elapsed_ms\":3}}\n\
        {\"level\":\"INFO\",\"fields\":{\"message\":\"read the offset-syncs topic to its end\",\"records\":10,\"elapsed_ms\":412}}\n";
    assert_eq!(ours_sync_read_ms(log), Some(412));
    assert_eq!(ours_sync_read_ms("not json\n"), None);
}

#[test]
fn our_offsets_replay_comes_from_the_json_log() {
    let log = "{\"level\":\"INFO\",\"fields\":{\"message\":\"reading the __consumer_offsets topic\",\"records\":5}}\n\
        {\"level\":\"INFO\",\"fields\":{\"message\":\"read the __consumer_offsets topic to its end; following commits\",\"records\":1200000,\"partitions\":10,\"elapsed_ms\":2400}}\n";
    assert_eq!(ours_offsets_replay(log), Some((1_200_000, 2400)));
    assert_eq!(ours_offsets_replay("{}\n"), None);
}

#[test]
fn our_first_round_is_the_first_emitting_round_of_the_json_log() {
    let log = "{\"level\":\"INFO\",\"fields\":{\"message\":\"emission round done\",\"emitted\":0,\"skipped\":4,\"elapsed_ms\":2}}\n\
        {\"level\":\"INFO\",\"fields\":{\"message\":\"emission round done\",\"emitted\":1000000,\"skipped\":0,\"elapsed_ms\":4321}}\n\
        {\"level\":\"INFO\",\"fields\":{\"message\":\"emission round done\",\"emitted\":10,\"skipped\":0,\"elapsed_ms\":7}}\n";
    assert_eq!(ours_first_round_ms(log), Some(4321));
    // A log from before rounds carried their time: the bench falls back.
    let old = "{\"level\":\"INFO\",\"fields\":{\"message\":\"emission round done\",\"emitted\":3,\"skipped\":0}}\n";
    assert_eq!(ours_first_round_ms(old), None);
}

#[test]
fn ratio_and_units_render_readably() {
    assert_eq!(ratio(Some(450.0), Some(8.0)), "56×");
    assert_eq!(ratio(Some(3.0), Some(2.0)), "1.5×");
    assert_eq!(ratio(None, Some(2.0)), "—");
    assert_eq!(secs(Some(12.34)), "12.3 s");
    assert_eq!(secs(Some(0.0123)), "12.3 ms");
    assert_eq!(secs(Some(0.000_5)), "500 µs");
}

#[test]
fn table_has_a_row_per_metric_and_size_and_the_catch_up() {
    let run = |first: f64, rss: u64| RunResult {
        start_to_first_s: first,
        start_to_all_s: first,
        first_round_s: Some(0.1),
        cpu_per_round_s: Some(0.01),
        steady_rss_kib: rss,
        peak_rss_kib: rss,
        ..RunResult::default()
    };
    let report = Report {
        started_unix: 0,
        kafka_version: "4.1.1".into(),
        commit: "abc".into(),
        mm2_jvm: vec![],
        ours_build: "dist".into(),
        sizes: vec![SizeResult {
            groups: 10,
            partitions: 10,
            variant: None,
            loadavg: "1 1 1".into(),
            mm2: vec![("stock".into(), run(10.0, 460 * 1024))],
            ours: run(0.05, 8 * 1024),
            kafka_producer: super::side_by_side::parse_producer_performance(
                "5000 records sent, 1000.0 records/sec (0.09 MB/sec), 3.1 ms avg latency, 9.0 ms max latency.\n\
                 100 records sent, 500.0 records/sec (0.04 MB/sec), 3.0 ms avg latency, 200.0 ms max latency, \
                 2 ms 50th, 5 ms 95th, 8 ms 99th, 9 ms 99.9th.\n",
                90,
                "acks=all".into(),
            ),
        }],
        catch_up: Some(CatchUp {
            syncs: 1_000_000,
            mm2_full_s: 12.0,
            mm2_empty_s: 2.0,
            ours_full_s: 1.1,
            ours_empty_s: 0.1,
            ours_once_full_s: 1.3,
            ours_once_empty_s: 0.2,
            mm2_spawn_to_loaded_full_s: 20.0,
            kafka_consumer: super::side_by_side::parse_consumer_performance(
                "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, \
                 nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n\
                 2026-12-04 19:20:00:000, 2026-12-04 19:20:04:000, 120.0, 30.0, 1000000, \
                 250000.0, 3000, 1000, 120.0, 4000000.0\n",
            ),
            kafka_consumer_tuned: None,
            raw_fetch: Some(super::report::RawFetchRate {
                records: 1_000_000,
                bytes: 50_000_000,
                fetches: 12,
                end: 1_000_000,
                max_bytes: 4 << 20,
                secs: 0.2,
                records_per_s: 5_000_000.0,
            }),
            loadavg: "1 1 1".into(),
        }),
    };
    let t = render_table(&report);
    assert!(
        t.contains("| start → first checkpoint | 10 × 10 | 10.0 s | 50.0 ms | 200× |"),
        "{t}"
    );
    assert!(
        t.contains("| steady RSS | 10 × 10 | 460.0 MiB | 8.0 MiB | 58× |"),
        "{t}"
    );
    assert!(
        t.contains(
            "| offset-sync catch-up (full − empty) | 1000000 syncs | 10.0 s | 1.00 s | 10× |"
        ),
        "{t}"
    );
    assert!(
        t.contains("| offset-sync catch-up rate | 1000000 syncs | 0.10 M/s | 1.00 M/s | 10× |"),
        "{t}"
    );
    assert!(
        t.contains(
            "| catch-up rate ÷ Kafka's own consumer (4.00 M/s) | 1000000 syncs | 2 % | 25 % | |"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "| catch-up rate ÷ raw Fetch, records not decoded (5.00 M/s) | 1000000 syncs | 2 % | 20 % | |"
        ),
        "{t}"
    );
    // The last line of ProducerPerformance's output is the whole run's.
    assert!(
        t.contains(
            "| first round ÷ Kafka's ProducerPerformance (100 records of 90 B in 0.20 s) | 10 × 10 | | 50 % | |"
        ),
        "{t}"
    );
    // 7 metrics, the produce reference, bytes per group-partition, the four
    // catch-up rows.
    assert_eq!(t.lines().count(), 2 + 7 + 1 + 1 + 4);
    assert!(
        render_raw(&report)
            .contains("- 10 × 10 Kafka's ProducerPerformance on the target: 100 records of 90 B"),
        "{}",
        render_raw(&report)
    );
    assert!(
        t.contains("| RSS per group-partition (ours) | 10 × 10 | | 83886 B | |"),
        "{t}"
    );
    assert!(render_raw(&report).contains("catch-up, 1000000 syncs"));
}

#[test]
fn a_side_that_did_not_finish_is_a_lower_bound_and_ours_alone_says_so() {
    use super::report::Incomplete;
    let done = RunResult {
        start_to_first_s: 0.1,
        start_to_all_s: 0.2,
        steady_rss_kib: 20 * 1024,
        ..RunResult::default()
    };
    let slow = RunResult::incomplete(
        Some(std::time::Duration::from_secs(5)),
        Incomplete {
            seen: 31_659,
            total: 50_000,
            after_s: 600.4,
        },
    );
    let failed = RunResult::failed(&anyhow::anyhow!("the worker exited\nwith details"));
    let size = |groups, mm2| SizeResult {
        groups,
        partitions: 10,
        variant: None,
        loadavg: "1 1 1".into(),
        mm2,
        ours: done.clone(),
        kafka_producer: None,
    };
    let report = Report {
        started_unix: 0,
        kafka_version: "4.1.1".into(),
        commit: "abc".into(),
        mm2_jvm: vec![],
        ours_build: "dist".into(),
        sizes: vec![
            size(
                5000,
                vec![("stock".into(), slow.clone()), ("small".into(), failed)],
            ),
            size(100_000, vec![]),
        ],
        catch_up: None,
    };
    let t = render_table(&report);
    assert!(
        t.contains(
            "| start → all checkpoints | 5000 × 10 | > 600 s (31,659 of 50,000 checkpoints) | 200.0 ms | — |"
        ),
        "{t}"
    );
    assert!(
        t.contains("| steady RSS | 5000 × 10 | — | 20.0 MiB | — |"),
        "{t}"
    );
    assert!(
        t.contains("| steady RSS (MM2 JVM: small) | 5000 × 10 | failed (the worker exited) | 20.0 MiB | — |"),
        "{t}"
    );
    assert!(
        t.contains("| start → all checkpoints | 100000 × 10 | not run | 200.0 ms | — |"),
        "{t}"
    );
    let raw = render_raw(&report);
    assert!(
        raw.contains("did not finish: 31659 of 50000 checkpoints after 600 s"),
        "{raw}"
    );
    assert!(raw.contains("FAILED: the worker exited"), "{raw}");
}

#[test]
fn request_counts_are_read_per_cluster_and_api() {
    let text = "# HELP mm2_checkpoint_requests Kafka requests\n\
                # TYPE mm2_checkpoint_requests counter\n\
                mm2_checkpoint_requests_total{cluster=\"src\",api=\"OffsetFetch\"} 12\n\
                mm2_checkpoint_requests_total{cluster=\"tgt\",api=\"Produce\"} 3\n\
                mm2_checkpoint_request_errors_total{cluster=\"src\",api=\"\",error=\"\"} 0\n";
    let counts = super::process::parse_request_counts(text);
    assert_eq!(
        counts.into_iter().collect::<Vec<_>>(),
        [
            (("src".to_owned(), "OffsetFetch".to_owned()), 12),
            (("tgt".to_owned(), "Produce".to_owned()), 3)
        ]
    );
}

#[test]
fn parse_takes_groups_0_as_no_side_by_side_size() {
    let a = Mm2Args::parse(&["--groups", "0", "--ours-only-groups", "100000"]).unwrap();
    assert!(a.groups.is_empty());
    assert_eq!(a.ours_only, vec![100_000]);
}

#[test]
fn parse_reads_the_armv7_build_and_refuses_unknown_ones() {
    let a = Mm2Args::parse(&["--build", "armv7-qemu"]).unwrap();
    assert_eq!(a.build, super::args::OursBuild::Armv7Qemu);
    let e = Mm2Args::parse(&["--build", "riscv"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("armv7-qemu"), "{e}");
}
