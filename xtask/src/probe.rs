//! Health probes: a TCP connect, and a real Kafka ApiVersions round trip.
//!
//! The ApiVersions v0 request is small and fixed, so it is encoded by hand
//! here instead of pulling a Kafka client into xtask: request header v1
//! (api key, api version, correlation id, nullable client id) with an empty
//! body. A broker that answers it with our correlation id and error code 0 is
//! serving requests.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, Result, bail};

const API_VERSIONS_KEY: i16 = 18;
const CORRELATION_ID: i32 = 0x6d6d_3263; // "mm2c"
const CLIENT_ID: &[u8] = b"xtask-probe";
const TIMEOUT: Duration = Duration::from_secs(2);

/// True if something accepts a TCP connection on `addr`.
pub fn port_open(addr: &str) -> bool {
    match addr.parse::<SocketAddr>() {
        Ok(sock) => TcpStream::connect_timeout(&sock, TIMEOUT).is_ok(),
        Err(_) => false,
    }
}

/// Sends ApiVersions v0 to a PLAINTEXT listener and checks the answer.
///
/// Returns the number of API keys the broker advertised.
pub fn api_versions(addr: &str) -> Result<usize> {
    let sock: SocketAddr = addr
        .parse()
        .with_context(|| format!("bad listener address {addr:?}"))?;
    let mut stream = TcpStream::connect_timeout(&sock, TIMEOUT)
        .with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;

    let mut body = Vec::with_capacity(32);
    body.extend_from_slice(&API_VERSIONS_KEY.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&CORRELATION_ID.to_be_bytes());
    body.extend_from_slice(&(CLIENT_ID.len() as i16).to_be_bytes());
    body.extend_from_slice(CLIENT_ID);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream
        .write_all(&frame)
        .with_context(|| format!("sending ApiVersions to {addr}"))?;

    let mut len = [0u8; 4];
    stream
        .read_exact(&mut len)
        .with_context(|| format!("reading the ApiVersions response size from {addr}"))?;
    let len = i32::from_be_bytes(len);
    if !(10..=1 << 20).contains(&len) {
        bail!("ApiVersions response from {addr} has implausible size {len}");
    }
    let mut resp = vec![0u8; len as usize];
    stream
        .read_exact(&mut resp)
        .with_context(|| format!("reading the ApiVersions response from {addr}"))?;
    // v0 response: correlation id (i32), error code (i16), array of (key, min, max).
    let field = |at: usize, n: usize| resp.get(at..at + n).context("short ApiVersions response");
    let correlation = i32::from_be_bytes(field(0, 4)?.try_into()?);
    if correlation != CORRELATION_ID {
        bail!(
            "ApiVersions response from {addr} has correlation id {correlation}, sent {CORRELATION_ID}"
        );
    }
    let error = i16::from_be_bytes(field(4, 2)?.try_into()?);
    if error != 0 {
        bail!("ApiVersions from {addr} returned error code {error}");
    }
    let count = i32::from_be_bytes(field(6, 4)?.try_into()?);
    usize::try_from(count)
        .with_context(|| format!("ApiVersions from {addr}: negative array length {count}"))
}
