//! Timings read from logs: the Log4j timestamps of MM2's Connect worker, and
//! the `elapsed_ms` of our JSON log.

/// Milliseconds since midnight of a Log4j `[yyyy-MM-ddTHH:mm:ss,SSS]` or
/// `[yyyy-MM-dd HH:mm:ss,SSS]` line prefix.
pub fn log4j_millis(line: &str) -> Option<i64> {
    let ts = line.strip_prefix('[')?.get(11..23)?;
    let (hms, ms) = ts.split_once([',', '.'])?;
    let mut parts = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(((h * 60 + m) * 60 + s) * 1000 + ms.parse::<i64>().ok()?)
}

/// Seconds between the first line containing `from` and the first later line
/// containing all of `to` (Log4j timestamps; a day wrap is allowed).
pub fn log_span(text: &str, from: &str, to: &[&str]) -> Option<f64> {
    let mut lines = text.lines();
    let start = lines.by_ref().find(|l| l.contains(from))?;
    let end = lines.find(|l| to.iter().all(|t| l.contains(t)))?;
    let mut d = log4j_millis(end)? - log4j_millis(start)?;
    if d < 0 {
        d += 86_400_000;
    }
    Some(d as f64 / 1e3)
}

/// The `fields` of the first line of our JSON log whose message is `message`.
fn ours_log_fields(log: &str, message: &str) -> Option<serde_json::Value> {
    log.lines().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        let fields = v.get("fields")?;
        (fields.get("message")?.as_str()? == message).then(|| fields.clone())
    })
}

/// `elapsed_ms` of our JSON log's `read the offset-syncs topic to its end` line.
pub fn ours_sync_read_ms(log: &str) -> Option<u64> {
    ours_log_fields(log, "read the offset-syncs topic to its end")?
        .get("elapsed_ms")?
        .as_u64()
}

/// `records` and `elapsed_ms` of our JSON log's line that ends the commit
/// follower's start-up replay of `__consumer_offsets`.
pub fn ours_offsets_replay(log: &str) -> Option<(u64, u64)> {
    let f = ours_log_fields(
        log,
        "read the __consumer_offsets topic to its end; following commits",
    )?;
    Some((f.get("records")?.as_u64()?, f.get("elapsed_ms")?.as_u64()?))
}

/// `elapsed_ms` of the first round that emitted checkpoints: the first line
/// of our JSON log `emission round done` with `emitted` above 0.
pub fn ours_first_round_ms(log: &str) -> Option<u64> {
    log.lines().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        let fields = v.get("fields")?;
        if fields.get("message")?.as_str()? != "emission round done"
            || fields.get("emitted")?.as_u64()? == 0
        {
            return None;
        }
        fields.get("elapsed_ms")?.as_u64()
    })
}
