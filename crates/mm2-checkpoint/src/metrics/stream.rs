//! The `/metrics` exposition written in bounded pieces instead of one text.
//!
//! At `partition` latency granularity (opt-in) there is one series per
//! group-partition, ~150 MB of text at 1,000,000 of them. The encoder
//! (`prometheus-client`) writes into a [`std::fmt::Write`] synchronously, so a
//! scrape runs it on a blocking thread with a [`StreamWriter`]: the text
//! collects in a piece of about [`PIECE`] bytes, and at the points where the
//! encoder holds no lock the rounds need ([`yield_point`], called by the latency
//! collector between its batches) a full piece is handed to the connection's
//! task through a channel of one slot. A slow scraper therefore slows only the
//! blocking thread, never a round; a scraper that goes away closes the channel,
//! and the next hand-over ends the encoding with an error.
//!
//! The text is the same as the one [`super::Metrics::encode_prometheus`] and
//! [`super::Metrics::encode_openmetrics`] build: same encoder, same registry,
//! only the writer differs.

use std::cell::RefCell;
use std::fmt;

use tokio::sync::mpsc;

/// The size at which a piece is handed over. A piece may be larger by what
/// the encoder writes between two yield points: the families other than the
/// latency series (small: a few series per flow) or one batch of the latency
/// collector.
pub(super) const PIECE: usize = 64 * 1024;

/// The piece being filled on this thread and where full pieces go.
struct Piece {
    buf: String,
    tx: mpsc::Sender<String>,
}

impl Piece {
    fn hand_over(&mut self) -> fmt::Result {
        let full = std::mem::replace(&mut self.buf, String::with_capacity(PIECE + PIECE / 4));
        // Blocks this (blocking) thread until the connection's task took the
        // previous piece; fails once the connection's task is gone.
        self.tx.blocking_send(full).map_err(|_| fmt::Error)
    }
}

thread_local! {
    /// Set only while [`stream`] runs on this thread.
    static STREAM: RefCell<Option<Piece>> = const { RefCell::new(None) };
}

/// Appends to this thread's current piece; never blocks.
pub(super) struct StreamWriter;

impl fmt::Write for StreamWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        STREAM.with_borrow_mut(|piece| match piece {
            Some(piece) => {
                piece.buf.push_str(s);
                Ok(())
            }
            None => Err(fmt::Error),
        })
    }
}

/// Hands the current piece over if it is full. Call it only while holding no
/// lock that anything but a scrape takes: it may wait for a slow scraper. Does
/// nothing outside [`stream`] (an exposition built as one text).
pub(super) fn yield_point() -> fmt::Result {
    STREAM.with_borrow_mut(|piece| match piece {
        Some(piece) if piece.buf.len() >= PIECE => piece.hand_over(),
        _ => Ok(()),
    })
}

/// Clears this thread's stream when [`stream`] ends, even by a panic (a
/// blocking thread is reused).
struct Reset;

impl Drop for Reset {
    fn drop(&mut self) {
        STREAM.with_borrow_mut(Option::take);
    }
}

/// Runs `encode` with a writer whose text goes to `tx` in pieces, the last
/// one included. Blocks: call it on a blocking thread. An error means the
/// text was not sent whole (the receiver went away, or the encoder failed).
pub(super) fn stream(
    tx: mpsc::Sender<String>,
    encode: impl FnOnce(&mut StreamWriter) -> fmt::Result,
) -> fmt::Result {
    STREAM.with_borrow_mut(|piece| {
        *piece = Some(Piece {
            buf: String::with_capacity(PIECE + PIECE / 4),
            tx,
        });
    });
    let _reset = Reset;
    encode(&mut StreamWriter)?;
    STREAM.with_borrow_mut(|piece| match piece {
        Some(piece) if !piece.buf.is_empty() => piece.hand_over(),
        _ => Ok(()),
    })
}
