//! Group and topic filters (`groups`, `groups.exclude`, `topics`,
//! `topics.exclude`) against 100,000 names: the matching a round does for
//! every group it lists and every topic it sees. Run with the regex crate's
//! feature set as built, to weigh its size against matching speed
//! (docs/benchmarks.md, "Binary and image size").
//!
//! * `default_groups`: MM2's defaults (`.*` minus `console-consumer-.*`,
//!   `connect-.*`, `__.*`).
//! * `listed_groups`: an operator's list of alternatives with a class.
//! * `default_topics`: MM2's topic defaults (`.*` minus internal topics).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_main};
use mm2_checkpoint::core::filter::{GroupFilter, TopicFilter};

const NAMES: usize = 100_000;

fn names() -> Vec<String> {
    (0..NAMES)
        .map(|i| match i % 4 {
            0 => format!("payments-service-{i}-consumer"),
            1 => format!("connect-mirror-{i}"),
            2 => format!("orders.eu-west-1.team{}.v2-{i}", i % 97),
            _ => format!("analytics_stream_{i}_reader"),
        })
        .collect()
}

fn filters(c: &mut Criterion) {
    let names = names();
    let mut group = c.benchmark_group("filters_100k_names");
    group.throughput(Throughput::Elements(NAMES as u64));
    group.sample_size(20);
    let default_groups = GroupFilter::new(None, None).expect("MM2's default group filter");
    group.bench_function("default_groups", |b| {
        b.iter(|| {
            names
                .iter()
                .filter(|n| default_groups.should_replicate_group(black_box(n)))
                .count()
        })
    });
    let listed = GroupFilter::new(
        Some("payments-service-[0-9]+-consumer, orders\\..*\\.team(1|2|3)[0-9]*\\.v2-.*, audit-.*"),
        Some("payments-service-9.*"),
    )
    .expect("a listed group filter");
    group.bench_function("listed_groups", |b| {
        b.iter(|| {
            names
                .iter()
                .filter(|n| listed.should_replicate_group(black_box(n)))
                .count()
        })
    });
    let default_topics = TopicFilter::new(None, None).expect("MM2's default topic filter");
    group.bench_function("default_topics", |b| {
        b.iter(|| {
            names
                .iter()
                .filter(|n| default_topics.should_replicate_topic(black_box(n)))
                .count()
        })
    });
    group.finish();
}

mod harness {
    criterion::criterion_group!(benches, super::filters);
}
criterion_main!(harness::benches);
