//! The byte stream to one broker: TCP (with `TCP_NODELAY`), optionally
//! wrapped in TLS. Everything above this module sees one [`BrokerStream`].

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::error::Error;

/// A connected stream to a broker, plaintext or TLS.
#[derive(Debug)]
pub(crate) enum BrokerStream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsStream<TcpStream>>),
}

/// Splits `host:port` (or `[v6]:port`) into host and port.
pub(crate) fn split_address(address: &str) -> Result<(&str, u16), Error> {
    let invalid = |detail: &str| Error::InvalidAddress {
        broker: address.to_string(),
        detail: detail.to_string(),
    };
    let (host, port) = address
        .rsplit_once(':')
        .ok_or_else(|| invalid("expected host:port"))?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return Err(invalid("empty host"));
    }
    let port = port
        .parse::<u16>()
        .map_err(|_| invalid("port is not a number in 0..=65535"))?;
    Ok((host, port))
}

/// Opens a TCP connection to `address` (and does the TLS handshake when
/// `tls` is given), all within `timeout`.
pub(crate) async fn connect(
    address: &str,
    tls: Option<&Arc<rustls::ClientConfig>>,
    timeout: Duration,
) -> Result<BrokerStream, Error> {
    let (host, port) = split_address(address)?;
    let server_name = match tls {
        Some(_) => {
            Some(
                ServerName::try_from(host.to_string()).map_err(|e| Error::InvalidAddress {
                    broker: address.to_string(),
                    detail: format!("host is not a valid TLS server name: {e}"),
                })?,
            )
        }
        None => None,
    };
    let attempt = async {
        let tcp = TcpStream::connect((host, port))
            .await
            .map_err(|source| Error::Io {
                broker: address.to_string(),
                source: Arc::new(source),
            })?;
        tcp.set_nodelay(true).map_err(|source| Error::Io {
            broker: address.to_string(),
            source: Arc::new(source),
        })?;
        match (tls, server_name) {
            (Some(config), Some(name)) => {
                let stream = TlsConnector::from(config.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| tls_error(address, e))?;
                Ok(BrokerStream::Tls(Box::new(stream)))
            }
            _ => Ok(BrokerStream::Plain(tcp)),
        }
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .map_err(|_| Error::ConnectTimeout {
            broker: address.to_string(),
            timeout,
        })?
}

/// Classifies a failure during the TLS handshake: rustls errors (bad
/// certificate, alert from the broker) are TLS errors, the rest is I/O.
fn tls_error(address: &str, error: io::Error) -> Error {
    if let Some(tls) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Error::Tls {
            broker: address.to_string(),
            detail: crate::tls::describe_error(tls),
            kind: crate::tls::failure_kind(tls),
        }
    } else if matches!(
        error.kind(),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
    ) {
        Error::Tls {
            broker: address.to_string(),
            detail: format!(
                "broker closed the connection during the TLS handshake ({error}); \
                 is this a TLS listener? A plaintext Kafka listener closes a TLS handshake \
                 like this (use security.protocol PLAINTEXT or SASL_PLAINTEXT for it), and \
                 so does a TLS listener that requires a client certificate"
            ),
            kind: crate::TlsFailure::Other,
        }
    } else {
        Error::Io {
            broker: address.to_string(),
            source: Arc::new(error),
        }
    }
}

impl AsyncRead for BrokerStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BrokerStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            BrokerStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for BrokerStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            BrokerStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            BrokerStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BrokerStream::Plain(s) => Pin::new(s).poll_flush(cx),
            BrokerStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BrokerStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            BrokerStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            BrokerStream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            BrokerStream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            BrokerStream::Plain(s) => s.is_write_vectored(),
            BrokerStream::Tls(s) => s.is_write_vectored(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split_into_host_and_port() {
        assert_eq!(split_address("broker-1:9092").unwrap(), ("broker-1", 9092));
        assert_eq!(split_address("[::1]:9093").unwrap(), ("::1", 9093));
        assert!(split_address("broker-1").is_err());
        assert!(split_address(":9092").is_err());
        assert!(split_address("b:99999").is_err());
    }

    #[tokio::test]
    async fn refused_connection_is_an_io_error_naming_the_broker() {
        // Bind then drop a listener to get a port nothing listens on.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = connect(&address, None, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert!(err.to_string().contains(&address), "{err}");
        assert!(err.is_retriable());
    }
}
