//! Health probes: a TCP connect, a real Kafka ApiVersions round trip, and
//! an HTTP GET (the daemon's `/readyz` and `/metrics`).
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

/// How long [`http_get`] waits for the answer.
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// The whole HTTP/1.1 response to `GET path` from `addr` (status line
/// included, a chunked body decoded: the daemon streams `/metrics`), or
/// `None` on any failure.
pub fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(HTTP_TIMEOUT)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    match buf.split_once("\r\n\r\n") {
        Some((head, body)) if head.contains("\r\nTransfer-Encoding: chunked\r\n") => {
            Some(format!("{head}\r\n\r\n{}", e2e::http::dechunk(body)?))
        }
        _ => Some(buf),
    }
}

/// The HTTP status of `GET path` on `addr`, or `None` if there is no answer.
pub fn http_status(addr: &str, path: &str) -> Option<u16> {
    parse_http_status(&http_get(addr, path)?)
}

/// The status code of an HTTP response's status line.
fn parse_http_status(response: &str) -> Option<u16> {
    response.split_whitespace().nth(1)?.parse().ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_status_is_read_from_the_status_line() {
        assert_eq!(
            parse_http_status("HTTP/1.1 503 Service Unavailable\r\n"),
            Some(503)
        );
        assert_eq!(parse_http_status("HTTP/1.1 200 OK\r\n\r\nready"), Some(200));
        assert_eq!(parse_http_status(""), None);
    }

    #[test]
    fn http_get_reads_the_whole_response() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            // The whole request head, which may arrive in pieces.
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while !request.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap() == 1 {
                request.push(byte[0]);
            }
            conn.write_all(b"HTTP/1.1 200 OK\r\n\r\nready").unwrap();
            String::from_utf8_lossy(&request).into_owned()
        });
        assert_eq!(http_status(&addr, "/readyz"), Some(200));
        assert!(
            server
                .join()
                .unwrap()
                .starts_with("GET /readyz HTTP/1.1\r\n")
        );
    }
}
