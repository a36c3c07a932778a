//! Kafka's wire framing: a big-endian `i32` length, then a request or
//! response header, then the message body.
//!
//! Reading is bounded: the announced length is checked against the
//! configured maximum (and for being negative) before any buffer is
//! allocated. Decoding is a pure function of the bytes, so it can be fuzzed
//! ([`decode_response`]).
//!
//! Public for fake brokers in tests ([`read_frame`]) and for the fuzz
//! targets ([`decode_response`]); the client itself sends and receives
//! through [`BrokerConnection`](crate::BrokerConnection).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The announced length is negative or above the limit.
    #[error("announced frame length {size} is outside 0..={max}")]
    TooLarge {
        /// The announced length.
        size: i64,
        /// The limit.
        max: usize,
    },
    /// The stream failed or ended mid-frame.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads one length-prefixed frame (without its length prefix).
///
/// Returns `Ok(None)` on a clean end of stream before a new frame starts.
pub async fn read_frame<S: AsyncRead + Unpin>(
    stream: &mut S,
    max_frame_bytes: usize,
) -> Result<Option<Bytes>, FrameError> {
    FrameReader::new(max_frame_bytes).read(stream).await
}

/// Frames from this size up are read into the buffer of an earlier large
/// frame when nothing refers to that one any more (see [`FrameReader`]).
const REUSE_FROM: usize = 256 * 1024;

/// How many recent large frames a [`FrameReader`] keeps for reuse.
const KEEP_RECENT: usize = 2;

/// Reads a connection's frames one after the other, reusing the buffers of
/// large frames.
///
/// A run of large responses (a catch-up's Fetch responses of several MiB
/// each) would otherwise get a fresh buffer each; with an allocator that maps
/// every large buffer from the kernel and unmaps it when freed (musl's), that
/// costs a page fault per 4 KiB of every response. The reader keeps a handle
/// on its last two large frames; when the next large frame comes
/// and one of them is no longer referenced by anyone else (its response was
/// decoded and dropped) and its size fits (at least the new frame's, at most
/// twice it), its allocation is zeroed and read into again. A frame still in
/// use is never touched: reuse is decided by the buffer's reference count.
/// The first small frame lets the kept buffers go. So a connection holds at
/// most two buffers of its recent large responses beyond those in
/// use: while its responses stay large, and after the last one until its next
/// response (an idle connection keeps them until then).
#[derive(Debug)]
pub struct FrameReader {
    max_frame_bytes: usize,
    recent: Vec<Bytes>,
}

impl FrameReader {
    /// A reader of frames of at most `max_frame_bytes`.
    pub fn new(max_frame_bytes: usize) -> Self {
        FrameReader {
            max_frame_bytes,
            recent: Vec::new(),
        }
    }

    /// Reads the next frame (without its length prefix); `Ok(None)` on a
    /// clean end of stream before a new frame starts.
    pub async fn read<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<Option<Bytes>, FrameError> {
        let mut len = [0u8; 4];
        // Distinguish a clean EOF (no byte of a new frame) from a truncated one.
        let first = stream.read(&mut len[..]).await?;
        if first == 0 {
            return Ok(None);
        }
        if first < 4 {
            stream.read_exact(&mut len[first..]).await?;
        }
        let size = i32::from_be_bytes(len);
        let size = usize::try_from(size)
            .ok()
            .filter(|s| *s <= self.max_frame_bytes)
            .ok_or(FrameError::TooLarge {
                size: i64::from(size),
                max: self.max_frame_bytes,
            })?;
        if size < REUSE_FROM {
            self.recent.clear();
            let mut frame = BytesMut::zeroed(size);
            stream.read_exact(&mut frame).await?;
            return Ok(Some(frame.freeze()));
        }
        let mut frame = match self.reusable(size) {
            Some(mut reused) => {
                reused.resize(size, 0);
                reused
            }
            None => large_buffer(size),
        };
        stream.read_exact(&mut frame).await?;
        let frame = frame.freeze();
        if self.recent.len() >= KEEP_RECENT {
            self.recent.remove(0);
        }
        self.recent.push(frame.clone());
        Ok(Some(frame))
    }

    /// An emptied buffer from a recent large frame nobody else refers to
    /// whose capacity fits `size`: at least `size`, and at most twice it, so a
    /// small response never pins the allocation of a much larger one.
    fn reusable(&mut self, size: usize) -> Option<BytesMut> {
        let fits = size..=size.saturating_mul(2);
        for i in 0..self.recent.len() {
            if !self.recent[i].is_unique() {
                continue;
            }
            match self.recent.remove(i).try_into_mut() {
                Ok(mut buf) if fits.contains(&buf.capacity()) => {
                    buf.clear();
                    return Some(buf);
                }
                Ok(buf) => self.recent.insert(i, buf.freeze()),
                Err(kept) => self.recent.insert(i, kept),
            }
        }
        None
    }
}

/// A fresh zeroed buffer for a large frame of `size` bytes, its capacity
/// rounded up to a multiple of [`REUSE_FROM`] so that the following responses,
/// which vary in size a little (a 4 MiB Fetch ends where a record batch ends),
/// fit in it. The reader writes no page past the frame; an allocator that maps
/// large buffers fresh from the kernel (musl's) gives them no memory until a
/// later frame is read into them.
fn large_buffer(size: usize) -> BytesMut {
    let capacity = size
        .div_ceil(REUSE_FROM)
        .saturating_mul(REUSE_FROM)
        .max(size);
    let mut buf = BytesMut::zeroed(capacity);
    buf.truncate(size);
    buf
}

/// Encodes a complete request frame: length, header (at the header version
/// the API/version needs) and body at `version`.
pub(crate) fn encode_request<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> Result<Bytes, String> {
    encode_request_buf(request, version, correlation_id, client_id).map(BytesMut::freeze)
}

/// [`encode_request`] before freezing: the frame in the one buffer it was
/// written into.
fn encode_request_buf<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> Result<BytesMut, String> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    let header_version = R::header_version(version);
    // Sized up front: a Produce request of 512 KiB built in a buffer that
    // doubles as it fills was copied about once more, in pieces the
    // allocator maps and unmaps (docs/client.md, "Request frames").
    let size = header
        .compute_size(header_version)
        .and_then(|h| Ok(h + request.compute_size(version)?))
        .map_err(|e| format!("sizing the request: {e}"))?;
    let mut buf = BytesMut::with_capacity(4 + size);
    buf.put_i32(0); // patched below
    header
        .encode(&mut buf, header_version)
        .map_err(|e| format!("request header v{header_version}: {e}"))?;
    request
        .encode(&mut buf, version)
        .map_err(|e| e.to_string())?;
    let body_len =
        i32::try_from(buf.len() - 4).map_err(|_| "request larger than 2 GiB".to_string())?;
    buf[..4].copy_from_slice(&body_len.to_be_bytes());
    Ok(buf)
}

/// The correlation id at the start of every response frame (both header
/// versions begin with it), or `None` if the frame is shorter than 4 bytes.
pub(crate) fn peek_correlation_id(frame: &[u8]) -> Option<i32> {
    let bytes: [u8; 4] = frame.get(..4)?.try_into().ok()?;
    Some(i32::from_be_bytes(bytes))
}

/// Decodes a response frame (without its length prefix) for request type
/// `R` at `version`: the response header (v0, or v1 with tagged fields, as
/// the API/version requires) and the body. Returns the correlation id and
/// the response. Pure; never panics on any input.
pub fn decode_response<R: Request>(
    mut frame: Bytes,
    version: i16,
) -> Result<(i32, R::Response), String> {
    let header_version = <R::Response as HeaderVersion>::header_version(version);
    let header = ResponseHeader::decode(&mut frame, header_version)
        .map_err(|e| format!("response header v{header_version}: {e}"))?;
    let body =
        <R::Response as Decodable>::decode(&mut frame, version).map_err(|e| e.to_string())?;
    if frame.has_remaining() {
        tracing::debug!(
            api_key = R::KEY,
            version,
            trailing = frame.remaining(),
            "ignoring trailing bytes after response body"
        );
    }
    Ok((header.correlation_id, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};

    #[tokio::test]
    async fn length_above_the_limit_is_rejected_before_reading_the_body() {
        let mut input: &[u8] = &[0, 0, 0x10, 0, 1, 2, 3];
        let err = read_frame(&mut input, 1024).await.unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::TooLarge {
                    size: 4096,
                    max: 1024
                }
            ),
            "{err}"
        );
    }

    #[tokio::test]
    async fn negative_length_is_rejected() {
        let mut input: &[u8] = &(-5i32).to_be_bytes();
        let err = read_frame(&mut input, 1024).await.unwrap_err();
        assert!(
            matches!(err, FrameError::TooLarge { size: -5, .. }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn clean_end_of_stream_is_none_and_truncated_frame_is_an_error() {
        let mut empty: &[u8] = &[];
        assert!(read_frame(&mut empty, 1024).await.unwrap().is_none());
        let mut truncated: &[u8] = &[0, 0, 0, 10, 1, 2];
        assert!(matches!(
            read_frame(&mut truncated, 1024).await,
            Err(FrameError::Io(_))
        ));
    }

    #[tokio::test]
    async fn frame_is_read_whole() {
        let mut input: &[u8] = &[0, 0, 0, 3, 7, 8, 9, 0xff];
        assert_eq!(
            read_frame(&mut input, 1024).await.unwrap().unwrap(),
            Bytes::from_static(&[7, 8, 9])
        );
    }

    /// `frames` as one stream: each with its length prefix.
    fn stream_of(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in frames {
            out.extend_from_slice(&(f.len() as i32).to_be_bytes());
            out.extend_from_slice(f);
        }
        out
    }

    #[tokio::test]
    async fn large_frames_reuse_a_released_buffer_and_never_one_in_use() {
        let big = |b: u8, n: usize| vec![b; n];
        let input = stream_of(&[
            big(1, REUSE_FROM + 10),
            big(2, REUSE_FROM + 5),
            big(3, REUSE_FROM + 10),
            big(4, REUSE_FROM),
            vec![5; 3],
            big(6, REUSE_FROM),
        ]);
        let mut input = &input[..];
        let mut reader = FrameReader::new(1 << 24);
        let first = reader.read(&mut input).await.unwrap().unwrap();
        let first_at = first.as_ptr();
        // The first frame is still held: the second gets a buffer of its own.
        let second = reader.read(&mut input).await.unwrap().unwrap();
        assert_ne!(second.as_ptr(), first_at);
        assert!(
            first.iter().all(|&b| b == 1),
            "a frame in use is never overwritten"
        );
        assert!(second.iter().all(|&b| b == 2));
        let second_at = second.as_ptr();
        // Released, the first frame's buffer is read into again (emptied first:
        // nothing of the earlier frame shows through).
        drop(first);
        let third = reader.read(&mut input).await.unwrap().unwrap();
        assert_eq!(third.as_ptr(), first_at);
        assert_eq!(third.len(), REUSE_FROM + 10);
        assert!(third.iter().all(|&b| b == 3));
        drop(second);
        let fourth = reader.read(&mut input).await.unwrap().unwrap();
        assert_eq!(fourth.as_ptr(), second_at);
        assert_eq!(&fourth[..], &big(4, REUSE_FROM)[..]);
        // A small frame lets the kept buffers go: the next large one is fresh.
        drop((third, fourth));
        assert_eq!(
            &reader.read(&mut input).await.unwrap().unwrap()[..],
            &[5, 5, 5]
        );
        assert!(reader.recent.is_empty());
        let sixth = reader.read(&mut input).await.unwrap().unwrap();
        assert!(sixth.iter().all(|&b| b == 6));
        assert!(reader.read(&mut input).await.unwrap().is_none());
    }

    /// Whether a frame of `second` bytes is read into the buffer of a frame
    /// of `first` bytes read and dropped before it (its bytes checked).
    async fn reads_into_the_first_buffer(first: usize, second: usize) -> bool {
        let input = stream_of(&[vec![1; first], vec![2; second]]);
        let mut input = &input[..];
        let mut reader = FrameReader::new(1 << 24);
        let first = reader.read(&mut input).await.unwrap().unwrap();
        let first_at = first.as_ptr();
        drop(first);
        let next = reader.read(&mut input).await.unwrap().unwrap();
        assert_eq!(next.len(), second);
        assert!(next.iter().all(|&b| b == 2));
        next.as_ptr() == first_at
    }

    #[tokio::test]
    async fn a_slightly_larger_next_frame_reuses_the_buffer() {
        assert!(reads_into_the_first_buffer(REUSE_FROM * 4 - 100, REUSE_FROM * 4).await);
    }

    #[tokio::test]
    async fn a_kept_buffer_far_larger_than_the_next_frame_is_not_used() {
        // A 768 KiB buffer would hold a 256 KiB frame.
        assert!(!reads_into_the_first_buffer(REUSE_FROM * 3, REUSE_FROM).await);
    }

    #[tokio::test]
    async fn a_kept_buffer_too_small_for_the_next_frame_is_not_used() {
        let input = stream_of(&[vec![1; REUSE_FROM], vec![2; REUSE_FROM * 2]]);
        let mut input = &input[..];
        let mut reader = FrameReader::new(1 << 24);
        drop(reader.read(&mut input).await.unwrap().unwrap());
        let next = reader.read(&mut input).await.unwrap().unwrap();
        assert_eq!(next.len(), REUSE_FROM * 2);
        assert!(next.iter().all(|&b| b == 2));
        // The smaller buffer stays kept (a later frame may fit it), beside the new one.
        assert_eq!(reader.recent.len(), 2);
        assert_eq!(reader.recent[0].len(), REUSE_FROM);
    }

    #[test]
    fn request_frame_carries_length_key_version_and_correlation_id() {
        let frame = encode_request(&MetadataRequest::default(), 12, 42, "me").unwrap();
        let len = i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        assert_eq!(i16::from_be_bytes([frame[4], frame[5]]), 3, "api key");
        assert_eq!(i16::from_be_bytes([frame[6], frame[7]]), 12, "api version");
        assert_eq!(
            i32::from_be_bytes(frame[8..12].try_into().unwrap()),
            42,
            "correlation id"
        );
    }

    #[test]
    fn a_large_produce_request_is_written_into_one_buffer_of_its_size() {
        use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
        use kafka_protocol::messages::{ProduceRequest, TopicName};
        let records = Bytes::from(vec![7u8; 600 * 1024]);
        let request = ProduceRequest::default().with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("checkpoints")))
                .with_partition_data(vec![
                    PartitionProduceData::default().with_records(Some(records.clone())),
                ]),
        ]);
        for version in [3, 9] {
            let buf = encode_request_buf(&request, version, 7, "me").unwrap();
            assert_eq!(
                buf.len(),
                buf.capacity(),
                "v{version}: sized once, never regrown"
            );
            let mut frame = buf.freeze().slice(4..);
            let header_version = ProduceRequest::header_version(version);
            RequestHeader::decode(&mut frame, header_version).unwrap();
            let decoded = ProduceRequest::decode(&mut frame, version).unwrap();
            assert_eq!(decoded, request, "v{version}");
            assert!(!frame.has_remaining());
        }
    }

    #[test]
    fn garbage_response_is_an_error_not_a_panic() {
        for bytes in [
            &[][..],
            &[0, 0],
            &[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff],
        ] {
            assert!(
                decode_response::<ApiVersionsRequest>(Bytes::copy_from_slice(bytes), 3).is_err()
            );
            assert!(decode_response::<MetadataRequest>(Bytes::copy_from_slice(bytes), 12).is_err());
        }
    }
}
