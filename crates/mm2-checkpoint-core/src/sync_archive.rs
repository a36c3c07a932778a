//! The sync-history topic: precise translation's history kept on the target so
//! it survives restarts and compaction of the offset-syncs topic
//! (docs/translation.md, "Restarts and compaction").
//!
//! Three parts, all pure:
//! * the record format ([`ArchiveKey`], [`Chunk`], [`Mark`]): a partition's
//!   history in chunks of [`CHUNK_SYNCS`] syncs, each sync with the offset of its
//!   record in the offset-syncs topic, and a mark saying up to which position of
//!   the offset-syncs topic the chunks are complete;
//! * [`ArchiveWriter`]: follows the syncs the store applies and says which
//!   records to write (sealed chunks once, the open chunk when it changed,
//!   tombstones for chunks a rewind or the budget made useless);
//! * [`ArchiveRestore`]: at start, decides per partition whether the archived
//!   history may be used, from the offset-syncs topic's surviving records. It is
//!   used only if the topic still holds every record from the mark on, and every
//!   sync there extends the archived history without a rewind; anything that
//!   cannot be shown refuses it, and the store keeps what the topic gives.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::sync_store::{InitMode, OffsetSync};

/// Syncs per chunk. The open chunk is rewritten each time it changes, so a new
/// sync costs at most this many entries of writing; a history of `n` syncs is
/// `n / CHUNK_SYNCS` records.
pub const CHUNK_SYNCS: usize = 32;

/// Version byte of chunk and mark values.
pub const ARCHIVE_VERSION: u8 = 0;

const KEY_CHUNK: u8 = 1;
const KEY_MARK: u8 = 2;

/// One archived sync: `sync` was read from the record at `offset` of the
/// offset-syncs topic (partition 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchivedSync {
    /// Offset of the sync's record in the offset-syncs topic.
    pub offset: i64,
    /// The sync.
    pub sync: OffsetSync,
}

impl ArchivedSync {
    /// An archived sync.
    pub const fn new(offset: i64, upstream: i64, downstream: i64) -> Self {
        Self {
            offset,
            sync: OffsetSync::new(upstream, downstream),
        }
    }
}

/// The key of a sync-history record.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArchiveKey {
    /// Chunk `chunk` of source partition `topic`-`partition`.
    Chunk {
        /// Source topic.
        topic: String,
        /// Source partition.
        partition: i32,
        /// Chunk number within the partition's generation.
        chunk: u32,
    },
    /// The mark (one record, latest wins).
    Mark,
}

/// A chunk value: syncs `chunk * CHUNK_SYNCS ..` of one generation of a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The history generation the chunk belongs to (a rewind starts a new one).
    pub generation: u64,
    /// The syncs, oldest first: record offsets strictly increasing, upstream
    /// offsets non-decreasing.
    pub syncs: Vec<ArchivedSync>,
}

/// The mark value: every sync read before `position` of the offset-syncs topic
/// is in the chunks written before this record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Next offset of the offset-syncs topic the archive had not read.
    pub position: i64,
}

/// Why a sync-history record could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArchiveError {
    /// The key is empty or of an unknown kind.
    UnknownKey(Option<u8>),
    /// The value's version byte is not [`ARCHIVE_VERSION`].
    UnsupportedVersion(u8),
    /// The bytes ended inside `field`.
    Truncated(&'static str),
    /// A varint longer than 10 bytes or above `u64::MAX`.
    BadVarint(&'static str),
    /// The topic name is not UTF-8.
    BadTopic,
    /// A negative partition number.
    NegativePartition(i32),
    /// Bytes left after the last field.
    TrailingBytes(usize),
    /// The syncs are not ordered as one generation's are (record offsets
    /// strictly increasing, upstream offsets non-decreasing), or overflow.
    Disordered(usize),
    /// More syncs than a chunk holds, or none.
    BadCount(u64),
}

impl fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchiveError::UnknownKey(None) => f.write_str("empty key"),
            ArchiveError::UnknownKey(Some(k)) => write!(f, "unknown key kind {k}"),
            ArchiveError::UnsupportedVersion(v) => write!(
                f,
                "unsupported value version {v} (this build reads {ARCHIVE_VERSION})"
            ),
            ArchiveError::Truncated(field) => write!(f, "truncated in field {field}"),
            ArchiveError::BadVarint(field) => write!(f, "invalid varint in field {field}"),
            ArchiveError::BadTopic => f.write_str("topic name is not UTF-8"),
            ArchiveError::NegativePartition(p) => write!(f, "negative partition {p}"),
            ArchiveError::TrailingBytes(n) => write!(f, "{n} bytes after the last field"),
            ArchiveError::Disordered(i) => write!(
                f,
                "sync {i} is out of order (offsets must increase, upstream offsets not decrease)"
            ),
            ArchiveError::BadCount(n) => {
                write!(f, "{n} syncs in a chunk (1 to {CHUNK_SYNCS} allowed)")
            }
        }
    }
}

impl std::error::Error for ArchiveError {}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A cursor over bytes; every read is checked.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads the leading version byte; only [`ARCHIVE_VERSION`] is known.
    fn version(&mut self) -> Result<(), ArchiveError> {
        match self.take(1, "version")?[0] {
            ARCHIVE_VERSION => Ok(()),
            other => Err(ArchiveError::UnsupportedVersion(other)),
        }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ArchiveError> {
        if self.bytes.len() < n {
            return Err(ArchiveError::Truncated(field));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn varint(&mut self, field: &'static str) -> Result<u64, ArchiveError> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.take(1, field)?[0];
            let bits = u64::from(b & 0x7f);
            if i == 9 && bits > 1 {
                return Err(ArchiveError::BadVarint(field));
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ArchiveError::BadVarint(field))
    }

    fn signed(&mut self, field: &'static str) -> Result<i64, ArchiveError> {
        self.varint(field).map(unzigzag)
    }

    fn end(&self) -> Result<(), ArchiveError> {
        match self.bytes.len() {
            0 => Ok(()),
            n => Err(ArchiveError::TrailingBytes(n)),
        }
    }
}

impl ArchiveKey {
    /// Key bytes: `[1][u16 topic length][topic][i32 partition][u32 chunk]`
    /// (big-endian) for a chunk, `[2]` for the mark. `None` for a topic name
    /// longer than 65,535 bytes (Kafka allows 249).
    pub fn encode(&self) -> Option<Vec<u8>> {
        match self {
            ArchiveKey::Mark => Some(vec![KEY_MARK]),
            ArchiveKey::Chunk {
                topic,
                partition,
                chunk,
            } => {
                let len = u16::try_from(topic.len()).ok()?;
                let mut out = Vec::with_capacity(11 + topic.len());
                out.push(KEY_CHUNK);
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(topic.as_bytes());
                out.extend_from_slice(&partition.to_be_bytes());
                out.extend_from_slice(&chunk.to_be_bytes());
                Some(out)
            }
        }
    }

    /// Decodes key bytes; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, ArchiveError> {
        let mut r = Reader { bytes };
        let kind = r
            .take(1, "kind")
            .map_err(|_| ArchiveError::UnknownKey(None))?[0];
        let key = match kind {
            KEY_MARK => ArchiveKey::Mark,
            KEY_CHUNK => {
                let len = r.take(2, "topic length")?;
                let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                let topic = std::str::from_utf8(r.take(len, "topic")?)
                    .map_err(|_| ArchiveError::BadTopic)?
                    .to_owned();
                let p = r.take(4, "partition")?;
                let partition = i32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                if partition < 0 {
                    return Err(ArchiveError::NegativePartition(partition));
                }
                let c = r.take(4, "chunk")?;
                ArchiveKey::Chunk {
                    topic,
                    partition,
                    chunk: u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                }
            }
            other => return Err(ArchiveError::UnknownKey(Some(other))),
        };
        r.end()?;
        Ok(key)
    }
}

impl Chunk {
    /// Value bytes: `[version 0][generation: varint][count: varint]`, the first
    /// sync as three zigzag varints (offset, upstream, downstream), then each
    /// next one as deltas from the previous: offset (varint, at least 1),
    /// upstream (varint, at least 0), downstream (zigzag varint).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.syncs.len() * 6);
        out.push(ARCHIVE_VERSION);
        put_varint(&mut out, self.generation);
        put_varint(&mut out, self.syncs.len() as u64);
        let mut prev: Option<ArchivedSync> = None;
        for s in &self.syncs {
            match prev {
                None => {
                    put_varint(&mut out, zigzag(s.offset));
                    put_varint(&mut out, zigzag(s.sync.upstream));
                    put_varint(&mut out, zigzag(s.sync.downstream));
                }
                Some(p) => {
                    put_varint(&mut out, s.offset.wrapping_sub(p.offset) as u64);
                    put_varint(
                        &mut out,
                        s.sync.upstream.wrapping_sub(p.sync.upstream) as u64,
                    );
                    put_varint(
                        &mut out,
                        zigzag(s.sync.downstream.wrapping_sub(p.sync.downstream)),
                    );
                }
            }
            prev = Some(*s);
        }
        out
    }

    /// Decodes value bytes; never panics. The syncs must be ordered as one
    /// generation's (see [`Chunk::syncs`]).
    pub fn decode(bytes: &[u8]) -> Result<Self, ArchiveError> {
        let mut r = Reader { bytes };
        r.version()?;
        let generation = r.varint("generation")?;
        let count = r.varint("count")?;
        if count == 0 || count > CHUNK_SYNCS as u64 {
            return Err(ArchiveError::BadCount(count));
        }
        let mut syncs: Vec<ArchivedSync> = Vec::with_capacity(count as usize);
        for i in 0..count as usize {
            let s = match syncs.last() {
                None => ArchivedSync::new(
                    r.signed("offset")?,
                    r.signed("upstream")?,
                    r.signed("downstream")?,
                ),
                Some(p) => {
                    let d_off = i64::try_from(r.varint("offset delta")?)
                        .map_err(|_| ArchiveError::Disordered(i))?;
                    let d_up = i64::try_from(r.varint("upstream delta")?)
                        .map_err(|_| ArchiveError::Disordered(i))?;
                    let d_down = r.signed("downstream delta")?;
                    let offset = p.offset.checked_add(d_off);
                    let up = p.sync.upstream.checked_add(d_up);
                    let down = p.sync.downstream.checked_add(d_down);
                    match (offset, up, down) {
                        (Some(o), Some(u), Some(d)) if d_off >= 1 => ArchivedSync::new(o, u, d),
                        _ => return Err(ArchiveError::Disordered(i)),
                    }
                }
            };
            syncs.push(s);
        }
        r.end()?;
        Ok(Chunk { generation, syncs })
    }
}

impl Mark {
    /// Value bytes: `[version 0][position: zigzag varint]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![ARCHIVE_VERSION];
        put_varint(&mut out, zigzag(self.position));
        out
    }

    /// Decodes value bytes; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, ArchiveError> {
        let mut r = Reader { bytes };
        r.version()?;
        let position = r.signed("position")?;
        r.end()?;
        Ok(Mark { position })
    }
}

/// One record to write: a key and a value, `None` for a tombstone.
pub type ArchiveRecord = (ArchiveKey, Option<Vec<u8>>);

/// The writer's state for one partition's current generation.
#[derive(Debug, Default)]
struct PartWriter {
    generation: u64,
    /// Syncs of the generation so far (chunk of sync `n` is `n / CHUNK_SYNCS`).
    count: u64,
    /// Lowest chunk not tombstoned for the budget.
    low_chunk: u64,
    /// Highest chunk written (or about to be) in this generation.
    written: Option<u64>,
    /// The open chunk's syncs (fewer than [`CHUNK_SYNCS`]).
    open: Vec<ArchivedSync>,
    /// The open chunk changed since it was last taken.
    dirty: bool,
    /// Records to write, in order (sealed chunks, tombstones).
    pending: Vec<ArchiveRecord>,
}

/// Follows the syncs a precise store applies and says what to write to the
/// sync-history topic (see the module documentation). Pure: the driver feeds
/// it and writes what [`take_records`](Self::take_records) returns.
#[derive(Debug)]
pub struct ArchiveWriter {
    max_syncs: u64,
    next_generation: u64,
    parts: HashMap<(Box<str>, i32), PartWriter>,
    /// Records not tied to a partition's current state (stale chunks), first.
    stale: Vec<ArchiveRecord>,
}

impl ArchiveWriter {
    /// A writer for a store keeping `max_syncs` per partition; new generations
    /// are numbered from `next_generation` (above every archived one).
    pub fn new(max_syncs: usize, next_generation: u64) -> Self {
        Self {
            max_syncs: max_syncs.max(1) as u64,
            next_generation,
            parts: HashMap::new(),
            stale: Vec::new(),
        }
    }

    /// Follows one sync the store applied, read at `offset` of the offset-syncs
    /// topic; `restarted` is the store's [`SyncApplied::restarted`](super::SyncApplied).
    pub fn on_sync(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        sync: OffsetSync,
        restarted: bool,
    ) {
        let key = (Box::<str>::from(topic), partition);
        let next_generation = &mut self.next_generation;
        let part = self.parts.entry(key).or_insert_with(|| {
            let generation = *next_generation;
            *next_generation += 1;
            PartWriter {
                generation,
                ..PartWriter::default()
            }
        });
        if restarted && part.count > 0 {
            // Chunks of the old generation are tombstoned before the new one's.
            if let Some(hi) = part.written {
                for chunk in part.low_chunk..=hi {
                    part.pending
                        .push((chunk_key(topic, partition, chunk), None));
                }
            }
            part.generation = self.next_generation;
            self.next_generation += 1;
            part.count = 0;
            part.low_chunk = 0;
            part.written = None;
            part.open.clear();
        }
        part.open.push(ArchivedSync { offset, sync });
        part.count += 1;
        part.dirty = true;
        if part.open.len() == CHUNK_SYNCS {
            let chunk = (part.count - 1) / CHUNK_SYNCS as u64;
            let value = Chunk {
                generation: part.generation,
                syncs: std::mem::take(&mut part.open),
            }
            .encode();
            part.pending
                .push((chunk_key(topic, partition, chunk), Some(value)));
            part.written = Some(chunk);
            part.dirty = false;
        }
        // Chunks wholly below the budget's window are no longer needed.
        let dropped = part.count.saturating_sub(self.max_syncs);
        while (part.low_chunk + 1) * CHUNK_SYNCS as u64 <= dropped {
            if part.written.is_some_and(|w| w >= part.low_chunk) {
                part.pending
                    .push((chunk_key(topic, partition, part.low_chunk), None));
            }
            part.low_chunk += 1;
        }
    }

    /// Continues the archived history `restored` of a partition (accepted by
    /// [`ArchiveRestore::finish`]): what was written for the partition since
    /// is forgotten, the chunks the archive holds are kept, and the syncs
    /// after the mark are written with the open chunk.
    pub fn adopt(&mut self, restored: &RestoredPartition) {
        let mut part = PartWriter {
            generation: restored.generation,
            count: restored.first_chunk * CHUNK_SYNCS as u64 + restored.syncs.len() as u64,
            low_chunk: restored.first_chunk,
            ..PartWriter::default()
        };
        let sealed = restored.syncs.len() / CHUNK_SYNCS;
        // Full chunks holding a sync from after the mark (or completed by one)
        // are written again; the ones the archive holds whole are not.
        let archived_sealed = restored.archived / CHUNK_SYNCS;
        for (n, chunk) in restored.syncs.chunks(CHUNK_SYNCS).enumerate() {
            let number = restored.first_chunk + n as u64;
            if chunk.len() < CHUNK_SYNCS {
                part.open = chunk.to_vec();
                part.dirty = true;
            } else if n >= archived_sealed {
                let value = Chunk {
                    generation: restored.generation,
                    syncs: chunk.to_vec(),
                }
                .encode();
                part.pending.push((
                    chunk_key(&restored.topic, restored.partition, number),
                    Some(value),
                ));
            }
        }
        part.written = (sealed > 0).then(|| restored.first_chunk + sealed as u64 - 1);
        self.next_generation = self.next_generation.max(restored.generation + 1);
        self.parts
            .insert((restored.topic.as_str().into(), restored.partition), part);
    }

    /// Records to tombstone first (chunks of the archive no history uses).
    pub fn tombstone(&mut self, keys: impl IntoIterator<Item = ArchiveKey>) {
        self.stale.extend(keys.into_iter().map(|k| (k, None)));
    }

    /// The records to write now, in order: stale tombstones, each partition's
    /// pending records and changed open chunk, then the mark at `position`
    /// (the offset-syncs topic's next offset: every sync before it was fed).
    /// The caller writes them in this order, or keeps them to write again.
    pub fn take_records(&mut self, position: i64) -> Vec<ArchiveRecord> {
        let mut out = std::mem::take(&mut self.stale);
        for ((topic, partition), part) in &mut self.parts {
            out.append(&mut part.pending);
            if part.dirty && !part.open.is_empty() {
                let chunk = part.count / CHUNK_SYNCS as u64;
                let value = Chunk {
                    generation: part.generation,
                    syncs: part.open.clone(),
                }
                .encode();
                out.push((chunk_key(topic, *partition, chunk), Some(value)));
                part.written = Some(chunk);
            }
            part.dirty = false;
        }
        out.push((ArchiveKey::Mark, Some(Mark { position }.encode())));
        out
    }

    /// Syncs held in open chunks (the writer's memory, besides pending records).
    pub fn open_syncs(&self) -> usize {
        self.parts.values().map(|p| p.open.len()).sum()
    }
}

fn chunk_key(topic: &str, partition: i32, chunk: u64) -> ArchiveKey {
    ArchiveKey::Chunk {
        topic: topic.to_owned(),
        partition,
        chunk: u32::try_from(chunk).unwrap_or(u32::MAX),
    }
}

/// A partition's archived history accepted at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoredPartition {
    /// Source topic.
    pub topic: String,
    /// Source partition.
    pub partition: i32,
    /// The archived generation, continued.
    pub generation: u64,
    /// Chunk number of `syncs[0]`.
    pub first_chunk: u64,
    /// The archived syncs before the mark, then the offset-syncs topic's syncs
    /// from the mark on, oldest first.
    pub syncs: Vec<ArchivedSync>,
    /// How many of `syncs` came from the archive.
    pub archived: usize,
    /// Whether the archive still held the generation's first sync (chunk 0).
    pub complete: bool,
}

/// Why archived histories were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No mark in the archive: nothing was ever completely written.
    NoMark,
    /// The offset-syncs topic ends before the mark: it was recreated or truncated.
    TopicBehindMark {
        /// The mark's position.
        mark: i64,
        /// The topic's end offset.
        end: i64,
    },
    /// Records after the mark are gone (compacted or deleted): a rewind may have
    /// been among them.
    GapAfterMark {
        /// The offset expected next.
        expected: i64,
        /// The offset found (the end offset if none).
        found: i64,
    },
    /// This partition's syncs after the mark went back (a rewind).
    Rewound,
    /// A surviving sync before the mark is not the archived one.
    Differs,
    /// The partition's newest archived sync is no longer in the topic and no
    /// newer one is: the topic does not describe this history.
    NewestGone,
    /// The partition's chunks are not contiguous or not ordered.
    BrokenChunks,
    /// The checkpoints could not be loaded (must-read-to-end mode): no history
    /// older than the offset-syncs topic's last sync per partition is used.
    MustReadToEnd,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoMark => f.write_str("the sync-history topic has no mark"),
            Refusal::TopicBehindMark { mark, end } => write!(
                f,
                "the offset-syncs topic ends at {end}, before the archived position {mark} (recreated or truncated)"
            ),
            Refusal::GapAfterMark { expected, found } => write!(
                f,
                "the offset-syncs topic lost records after the archived position (expected offset {expected}, found {found}): a rewind may be among them"
            ),
            Refusal::Rewound => {
                f.write_str("an offset sync after the archived position went back (a rewind)")
            }
            Refusal::Differs => f.write_str(
                "a surviving offset sync differs from the archived one (offset-syncs topic recreated?)",
            ),
            Refusal::NewestGone => {
                f.write_str("the newest archived offset sync is gone from the offset-syncs topic")
            }
            Refusal::BrokenChunks => f.write_str("the archived chunks are missing or disordered"),
            Refusal::MustReadToEnd => f.write_str(
                "the checkpoints topic could not be read (must-read-to-end mode)",
            ),
        }
    }
}

/// A chunk as the restore holds it until [`ArchiveRestore::build`]: still
/// encoded (about 5 bytes a sync, against 24 decoded), checked when read.
/// `build` decodes each partition's chunks once and drops the bytes.
#[derive(Debug)]
struct HeldChunk {
    generation: u64,
    /// How many syncs the chunk holds.
    len: usize,
    /// The value bytes; empty once `build` has decoded them.
    bytes: Box<[u8]>,
}

/// A partition's archived history while the offset-syncs topic is read.
#[derive(Debug)]
struct Candidate {
    generation: u64,
    first_chunk: u64,
    syncs: Vec<ArchivedSync>,
    after: Vec<ArchivedSync>,
    matched_newest: bool,
    refused: Option<Refusal>,
}

/// The restore decision (see the module documentation). Build it from the
/// sync-history topic's records ([`record`](Self::record)), then
/// [`observe`](Self::observe) every record of the offset-syncs topic's initial
/// read, oldest first, then [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct ArchiveRestore {
    chunks: BTreeMap<(String, i32), BTreeMap<u32, HeldChunk>>,
    mark: Option<Mark>,
    skipped: usize,
    /// Source topic → partition → candidate (looked up by `&str`, so
    /// observing a record allocates nothing).
    candidates: HashMap<Box<str>, HashMap<i32, Candidate>>,
    built: bool,
    /// Next offset expected at or after the mark; `None` before the first.
    next: Option<i64>,
    gap: Option<(i64, i64)>,
}

/// What [`ArchiveRestore::finish`] decided.
#[derive(Debug, Default)]
pub struct RestoreDecision {
    /// Partitions whose archived history is used.
    pub accepted: Vec<RestoredPartition>,
    /// Partitions whose archived history is not, and why.
    pub refused: Vec<((String, i32), Refusal)>,
    /// A reason that refused every partition, if there was one.
    pub refused_all: Option<Refusal>,
    /// Archive records that are of no use any more (refused partitions' chunks,
    /// older generations' leftovers): to tombstone.
    pub stale: Vec<ArchiveKey>,
    /// One above the highest generation archived: where new ones start.
    pub next_generation: u64,
    /// Undecodable archive records skipped.
    pub skipped: usize,
}

impl ArchiveRestore {
    /// An empty restore (no archive: every partition gets what the topic gives).
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one record of the sync-history topic (oldest first; the last
    /// record of a key wins, a null value deletes it). An undecodable record is
    /// counted and ignored; returns its error.
    pub fn record(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> Result<(), ArchiveError> {
        let r = self.try_record(key, value);
        if r.is_err() {
            self.skipped += 1;
        }
        r
    }

    fn try_record(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> Result<(), ArchiveError> {
        let key = ArchiveKey::decode(key.unwrap_or_default())?;
        match (key, value) {
            (ArchiveKey::Mark, None) => self.mark = None,
            (ArchiveKey::Mark, Some(v)) => self.mark = Some(Mark::decode(v)?),
            (
                ArchiveKey::Chunk {
                    topic,
                    partition,
                    chunk,
                },
                value,
            ) => {
                let parts = self.chunks.entry((topic, partition)).or_default();
                match value {
                    None => {
                        parts.remove(&chunk);
                    }
                    Some(v) => match Chunk::decode(v) {
                        Ok(c) => {
                            // Held encoded: a restart restoring 10^7 syncs
                            // would otherwise hold them decoded twice over.
                            let held = HeldChunk {
                                generation: c.generation,
                                len: c.syncs.len(),
                                bytes: v.into(),
                            };
                            parts.insert(chunk, held);
                        }
                        Err(e) => {
                            // A bad chunk replaces the good one it supersedes.
                            parts.remove(&chunk);
                            return Err(e);
                        }
                    },
                }
            }
        }
        Ok(())
    }

    /// The mark read, if any.
    pub fn mark(&self) -> Option<Mark> {
        self.mark
    }

    /// One above the highest generation archived: where a writer started
    /// before [`finish`](Self::finish) numbers new generations, so that no
    /// leftover chunk can pass for one of them.
    pub fn next_generation(&self) -> u64 {
        self.chunks
            .values()
            .flat_map(|c| c.values())
            .map(|c| c.generation.saturating_add(1))
            .max()
            .unwrap_or(0)
    }

    /// Archived chunks held (the current record of each key).
    pub fn chunk_count(&self) -> usize {
        self.chunks.values().map(BTreeMap::len).sum()
    }

    fn build(&mut self) {
        if self.built {
            return;
        }
        self.built = true;
        let Some(mark) = self.mark else {
            // Nothing will be restored: only the keys matter from here on.
            self.drop_chunk_bytes();
            return;
        };
        for ((topic, partition), chunks) in &mut self.chunks {
            let Some(generation) = chunks.values().map(|c| c.generation).max() else {
                continue;
            };
            let mut mine: Vec<(u32, &mut HeldChunk)> = chunks
                .iter_mut()
                .filter(|(_, c)| c.generation == generation)
                .map(|(&n, c)| (n, c))
                .collect();
            let first_chunk = u64::from(mine[0].0);
            let count = mine.len();
            let mut refused = None;
            let mut syncs: Vec<ArchivedSync> = Vec::new();
            for (i, (n, c)) in mine.iter_mut().enumerate() {
                let last = i + 1 == count;
                let contiguous = u64::from(*n) == first_chunk + i as u64;
                if !contiguous || (!last && c.len != CHUNK_SYNCS) {
                    refused = Some(Refusal::BrokenChunks);
                    break;
                }
                // Read and checked once already (`record`).
                let Ok(chunk) = Chunk::decode(&std::mem::take(&mut c.bytes)) else {
                    refused = Some(Refusal::BrokenChunks);
                    break;
                };
                if let (Some(p), Some(s)) = (syncs.last(), chunk.syncs.first())
                    && (s.offset <= p.offset || s.sync.upstream < p.sync.upstream)
                {
                    refused = Some(Refusal::BrokenChunks);
                    break;
                }
                syncs.extend(chunk.syncs.into_iter().filter(|s| s.offset < mark.position));
            }
            if refused.is_some() {
                syncs = Vec::new();
            }
            syncs.shrink_to_fit();
            if syncs.is_empty() && refused.is_none() {
                // Everything archived is from after the mark: not yet complete.
                refused = Some(Refusal::BrokenChunks);
            }
            self.candidates
                .entry(topic.as_str().into())
                .or_default()
                .insert(
                    *partition,
                    Candidate {
                        generation,
                        first_chunk,
                        syncs,
                        after: Vec::new(),
                        matched_newest: false,
                        refused,
                    },
                );
        }
        // Older generations' chunks are never restored.
        self.drop_chunk_bytes();
    }

    /// Frees the encoded chunks; their keys and generations stay (the stale
    /// records to tombstone, the next generation).
    fn drop_chunk_bytes(&mut self) {
        for c in self.chunks.values_mut().flat_map(BTreeMap::values_mut) {
            c.bytes = Box::default();
        }
    }

    /// Observes the record at `offset` of the offset-syncs topic's initial read,
    /// with its decoded sync if it is one (`None` for a record that is not).
    pub fn observe(&mut self, offset: i64, sync: Option<(&str, i32, OffsetSync)>) {
        self.build();
        let Some(mark) = self.mark else { return };
        if offset >= mark.position && self.gap.is_none() {
            let expected = self.next.unwrap_or(mark.position);
            if offset != expected {
                self.gap = Some((expected, offset));
            }
            self.next = Some(offset + 1);
        }
        let Some((topic, partition, sync)) = sync else {
            return;
        };
        if self.candidates.is_empty() {
            return;
        }
        let Some(c) = self
            .candidates
            .get_mut(topic)
            .and_then(|parts| parts.get_mut(&partition))
        else {
            return;
        };
        if c.refused.is_some() {
            return;
        }
        if offset < mark.position {
            let Some(first) = c.syncs.first() else { return };
            if offset < first.offset {
                return;
            }
            match c.syncs.binary_search_by_key(&offset, |s| s.offset) {
                Ok(i) if c.syncs[i].sync == sync => {
                    if i + 1 == c.syncs.len() {
                        c.matched_newest = true;
                    }
                }
                _ => c.refused = Some(Refusal::Differs),
            }
        } else {
            let newest = c.after.last().or(c.syncs.last()).map(|s| s.sync);
            if newest.is_some_and(|n| sync.upstream < n.upstream) {
                c.refused = Some(Refusal::Rewound);
                c.after = Vec::new();
            } else {
                c.after.push(ArchivedSync { offset, sync });
            }
        }
    }

    /// Decides, once the offset-syncs topic was read up to `end` (exclusive) in
    /// `mode`: in [`InitMode::MustReadToEnd`] no archived history is used.
    pub fn finish(mut self, end: i64, mode: InitMode) -> RestoreDecision {
        self.build();
        let mut d = RestoreDecision {
            skipped: self.skipped,
            next_generation: self.next_generation(),
            ..RestoreDecision::default()
        };
        let all_keys = |chunks: &BTreeMap<(String, i32), BTreeMap<u32, HeldChunk>>| {
            chunks
                .iter()
                .flat_map(|((t, p), cs)| cs.keys().map(move |&n| chunk_key(t, *p, u64::from(n))))
                .collect::<Vec<_>>()
        };
        let Some(mark) = self.mark else {
            if !self.chunks.is_empty() {
                d.refused_all = Some(Refusal::NoMark);
            }
            d.stale = all_keys(&self.chunks);
            return d;
        };
        let global = if mode == InitMode::MustReadToEnd {
            Some(Refusal::MustReadToEnd)
        } else if end < mark.position {
            Some(Refusal::TopicBehindMark {
                mark: mark.position,
                end,
            })
        } else if let Some((expected, found)) = self.gap {
            Some(Refusal::GapAfterMark { expected, found })
        } else if self.next.unwrap_or(mark.position) != end {
            Some(Refusal::GapAfterMark {
                expected: self.next.unwrap_or(mark.position),
                found: end,
            })
        } else {
            None
        };
        if let Some(reason) = global {
            d.refused_all = Some(reason);
            d.stale = all_keys(&self.chunks);
            return d;
        }
        let candidates = self.candidates.into_iter().flat_map(|(topic, parts)| {
            parts
                .into_iter()
                .map(move |(p, c)| ((String::from(topic.clone()), p), c))
        });
        for (key, c) in candidates {
            let refused = c.refused.or_else(|| {
                (!c.matched_newest && c.after.is_empty()).then_some(Refusal::NewestGone)
            });
            let chunks = &self.chunks[&key];
            match refused {
                Some(reason) => {
                    d.stale.extend(
                        chunks
                            .keys()
                            .map(|&n| chunk_key(&key.0, key.1, u64::from(n))),
                    );
                    d.refused.push((key, reason));
                }
                None => {
                    let archived = c.syncs.len();
                    // Chunks of older generations, and chunks past the mark
                    // beyond the restored ones, are of no use.
                    let last = c.first_chunk + (archived.max(1) as u64 - 1) / CHUNK_SYNCS as u64;
                    d.stale.extend(
                        chunks
                            .iter()
                            .filter(|(n, ch)| {
                                ch.generation != c.generation || u64::from(**n) > last
                            })
                            .map(|(&n, _)| chunk_key(&key.0, key.1, u64::from(n))),
                    );
                    let mut syncs = c.syncs;
                    syncs.extend(c.after);
                    d.accepted.push(RestoredPartition {
                        topic: key.0,
                        partition: key.1,
                        generation: c.generation,
                        first_chunk: c.first_chunk,
                        syncs,
                        archived,
                        complete: c.first_chunk == 0,
                    });
                }
            }
        }
        d.accepted
            .sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        d.refused.sort_by(|a, b| a.0.cmp(&b.0));
        d
    }
}

#[cfg(test)]
mod tests;
