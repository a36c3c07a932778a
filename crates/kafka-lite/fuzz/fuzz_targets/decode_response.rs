//! Feeds arbitrary bytes to response-frame decoding (header and body) for
//! several APIs at several versions. The first input byte picks the API and
//! version; the rest is the frame after its length prefix. Decoding must
//! return `Ok` or `Err`, never panic.
#![no_main]

use bytes::Bytes;
use kafka_lite::frame::decode_response;
use kafka_protocol::messages::{
    ApiVersionsRequest, DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest, ListGroupsRequest,
    ListOffsetsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, ProduceRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let frame = Bytes::copy_from_slice(rest);
    let version = i16::from(selector & 0x0f);
    match selector >> 4 {
        0 => drop(decode_response::<ApiVersionsRequest>(frame, version.min(4))),
        1 => drop(decode_response::<MetadataRequest>(frame, version.clamp(1, 12))),
        2 => drop(decode_response::<FindCoordinatorRequest>(frame, version.min(4))),
        3 => drop(decode_response::<OffsetFetchRequest>(frame, version.clamp(1, 9))),
        4 => drop(decode_response::<OffsetCommitRequest>(frame, version.clamp(2, 9))),
        5 => drop(decode_response::<ListGroupsRequest>(frame, version.min(5))),
        6 => drop(decode_response::<DescribeGroupsRequest>(frame, version.min(5))),
        7 => drop(decode_response::<ListOffsetsRequest>(frame, version.clamp(1, 8))),
        8 => drop(decode_response::<FetchRequest>(frame, version.clamp(4, 12))),
        9 => drop(decode_response::<ProduceRequest>(frame, version.clamp(3, 9))),
        10 => drop(decode_response::<SaslHandshakeRequest>(frame, 1)),
        _ => drop(decode_response::<SaslAuthenticateRequest>(frame, version.min(2))),
    }
});
