//! The re-read after a failover against a group's lag, for MirrorMaker 2's
//! precision (our default mode: the same 64-slot store) and for precise
//! translation, with the default budget and with one large enough to hold the
//! whole history (docs/translation.md, "Precise translation"; issue 21).
//!
//! The mirror is an identity mirror of `RECORDS` records with an offset sync
//! every `SPACING` records, as MM2's source task writes them with
//! `offset.lag.max = SPACING`. A group `lag` records behind the log end has
//! committed `RECORDS - lag` (the lags leave it 50 records past a sync, half
//! way to the next); the true downstream position is the same offset,
//! so the re-read is that offset minus the checkpoint. A group below the oldest
//! sync a store can use gets no checkpoint at all; after a failover it starts
//! where the consumer's `auto.offset.reset` puts it, which the table shows as
//! "no checkpoint".
//!
//! ```sh
//! cargo run --release -p mm2-checkpoint --example reread_vs_lag
//! ```

use std::hint::black_box;
use std::time::Instant;

use mm2_checkpoint::config::DEFAULT_TRANSLATION_MAX_SYNCS;
use mm2_checkpoint::core::{InitMode, OffsetSyncStore, Precision, Translation};

const TOPIC: &str = "orders";
const RECORDS: i64 = 2_000_000;
const SPACING: i64 = 100;
/// Lags that leave each group 50 records past a sync (mid-way between two).
const LAGS: [i64; 7] = [150, 1_050, 10_050, 100_050, 500_050, 1_000_050, 1_900_050];

/// A live store fed the whole identity mirror's syncs.
fn store(precision: Precision) -> OffsetSyncStore {
    let mut store = OffsetSyncStore::with_precision(InitMode::MustReadToEnd, precision);
    store.finish_initial_read();
    for up in (0..RECORDS).step_by(SPACING as usize) {
        store.apply(TOPIC, 0, up, up);
    }
    store
}

/// The re-read of a group that committed `committed`, or why there is none.
fn reread(store: &OffsetSyncStore, committed: i64) -> String {
    match store.translate_offset(TOPIC, 0, committed) {
        Translation::Translated(down) => thousands(committed - down),
        Translation::TooOld => "no checkpoint".to_owned(),
        other => format!("{other:?}"),
    }
}

/// Nanoseconds per translation of `committed`, over many calls.
fn ns_per_translation(store: &OffsetSyncStore, committed: i64) -> f64 {
    const CALLS: u32 = 2_000_000;
    let t = Instant::now();
    for _ in 0..CALLS {
        black_box(store.translate_offset(TOPIC, 0, black_box(committed)));
    }
    t.elapsed().as_nanos() as f64 / f64::from(CALLS)
}

fn thousands(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn main() {
    let syncs = RECORDS / SPACING;
    let stores = [
        (
            "MM2 (and our default mode)".to_owned(),
            store(Precision::Mm2),
        ),
        (
            format!("precise, default budget ({DEFAULT_TRANSLATION_MAX_SYNCS} syncs)"),
            store(Precision::Precise {
                max_syncs: DEFAULT_TRANSLATION_MAX_SYNCS,
            }),
        ),
        (
            format!("precise, budget {syncs} syncs (whole history)"),
            store(Precision::Precise {
                max_syncs: syncs as usize,
            }),
        ),
    ];
    println!(
        "Identity mirror of {} records, a sync every {SPACING} ({} syncs); \
         records re-read after a failover:\n",
        thousands(RECORDS),
        thousands(syncs)
    );
    let mut header = "| lag (records) |".to_owned();
    let mut rule = "|---:|".to_owned();
    for (name, _) in &stores {
        header.push_str(&format!(" {name} |"));
        rule.push_str("---:|");
    }
    println!("{header}\n{rule}");
    for lag in LAGS {
        let committed = RECORDS - lag;
        let mut row = format!("| {} |", thousands(lag));
        for (_, s) in &stores {
            row.push_str(&format!(" {} |", reread(s, committed)));
        }
        println!("{row}");
    }
    println!("\nTime per translation (ns), a group 1,000 and 1,000,000 records behind:\n");
    for (name, s) in &stores {
        println!(
            "- {name}: {:.0} ns and {:.0} ns",
            ns_per_translation(s, RECORDS - 1_000),
            ns_per_translation(s, RECORDS - 1_000_000)
        );
    }
}
