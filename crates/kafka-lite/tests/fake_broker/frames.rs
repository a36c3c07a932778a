//! Response framing shared by the fake broker of the integration tests and
//! the connection's unit tests (which include this file by path).

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::{Encodable, HeaderVersion};

/// A complete response frame (length, header at the right version, body).
pub fn response_frame<T: Encodable + HeaderVersion>(
    correlation_id: i32,
    response: &T,
    version: i16,
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, T::header_version(version))
        .expect("encode header");
    response.encode(&mut buf, version).expect("encode body");
    let len = i32::try_from(buf.len() - 4).expect("small frame");
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf.to_vec()
}
