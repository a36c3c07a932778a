//! One pipelined connection to one broker.
//!
//! A [`BrokerConnection`] is a cheap-clone handle. Behind it, a writer task
//! owns the write half of the stream and writes whole frames taken from a
//! channel (so a caller that gives up mid-request never leaves half a frame
//! on the wire), and a reader task owns the read half and hands each
//! response frame to the waiter registered under its correlation id. Many
//! requests can be in flight at once.
//!
//! When the stream breaks, the connection is *poisoned*: every in-flight
//! request and every later one fails with the retriable
//! [`Error::ConnectionClosed`]. Callers then get a new connection, for
//! example from [`crate::BrokerPool`], which does that lazily.
//!
//! [`Connector::connect`] establishes a connection: TCP (+TLS), then
//! ApiVersions (remembering the broker's version ranges for negotiation),
//! then SASL when configured.
//!
//! # Re-authentication (KIP-368)
//!
//! When the broker's SaslAuthenticate answer (v1+) gives the session a
//! lifetime (`connections.max.reauth.ms`, or an OAuth token's expiry), the
//! broker closes the connection at the next request after that time unless
//! the client has authenticated again on it. A task per connection does so
//! at a random point between 85 % and 95 % of the lifetime, as Kafka's Java
//! client does: it fetches fresh credentials first (a new token, say), then
//! stops new requests from being sent, lets the in-flight ones complete (the
//! broker would take the SaslHandshake for a request otherwise), runs
//! SaslHandshake and SaslAuthenticate, and lets requests flow again. A
//! failed re-authentication closes the connection; its later requests fail
//! as retriable, and reconnecting reports the authentication error itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Request, StrBytes, VersionRange};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{RwLock, mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::api::ApiRequest;
use crate::config::{ConnectionConfig, SaslConfig};
use crate::counts::RequestCounts;
use crate::error::Error;
use crate::frame::{self, FrameError};
use crate::sasl::{self, SaslMechanism, SaslStep, StartError};
use crate::transport;

/// Kafka's UNSUPPORTED_VERSION error code.
const UNSUPPORTED_VERSION: i16 = 35;

/// Frames queued for the writer task before senders wait.
const WRITE_QUEUE: usize = 64;

/// Validated settings for connecting to the brokers of one cluster: the
/// [`ConnectionConfig`] plus its prepared TLS configuration. Cheap to clone.
#[derive(Clone)]
pub struct Connector {
    config: Arc<ConnectionConfig>,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("config", &self.config)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Connector {
    /// Validates `config`; with TLS, reads the PEM files and builds the
    /// rustls configuration (failing with [`Error::TlsConfig`] or
    /// [`Error::UnsupportedCpu`]).
    pub fn new(config: ConnectionConfig) -> Result<Self, Error> {
        let tls = match &config.tls {
            Some(tls) => Some(crate::tls::client_config(tls)?),
            None => None,
        };
        Ok(Connector {
            config: Arc::new(config),
            tls,
        })
    }

    /// The configuration this connector was built from.
    pub fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Connects to the broker at `address` (`host:port`): TCP and TLS within
    /// `connect_timeout`, then ApiVersions, then SASL if configured.
    pub async fn connect(&self, address: &str) -> Result<BrokerConnection, Error> {
        self.connect_counted(address, None).await
    }

    /// [`connect`](Self::connect), then count every request sent on the
    /// connection in `requests` (setup requests are not counted).
    pub(crate) async fn connect_counted(
        &self,
        address: &str,
        requests: Option<Arc<RequestCounts>>,
    ) -> Result<BrokerConnection, Error> {
        let stream =
            transport::connect(address, self.tls.as_ref(), self.config.connect_timeout).await?;
        let mut connection = BrokerConnection::start(stream, address, &self.config);
        connection.negotiate_api_versions().await?;
        let session = match &self.config.sasl {
            Some(sasl) => {
                let mechanism = connection.start_mechanism(sasl).await?;
                connection.authenticate(sasl, mechanism).await?
            }
            None => None,
        };
        connection.setup_inner()?.requests = requests;
        if let (Some(sasl), Some(lifetime)) = (&self.config.sasl, session) {
            connection.schedule_reauthentication(sasl.clone(), lifetime);
        }
        tracing::debug!(broker = address, "connected");
        Ok(connection)
    }
}

/// A cheap-clone handle to one pipelined broker connection. See the module
/// documentation.
#[derive(Clone)]
pub struct BrokerConnection {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BrokerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerConnection")
            .field("broker", &self.inner.shared.broker)
            .field("closed", &self.is_closed())
            .finish()
    }
}

struct Inner {
    shared: Arc<Shared>,
    frames: mpsc::Sender<Outgoing>,
    client_id: String,
    request_timeout: Duration,
    /// The broker's version range per API key, from ApiVersions.
    api_versions: HashMap<i16, VersionRange>,
    /// Where sent requests are counted (the pool's counts), if anywhere.
    requests: Option<Arc<RequestCounts>>,
    tasks: [AbortHandle; 2],
    /// Requests hold it shared from before they are sent until their
    /// response arrives; re-authentication holds it exclusively, so it
    /// starts once the in-flight requests are done and no request is sent
    /// while it runs. (tokio's lock queues later readers behind a waiting
    /// writer.)
    gate: RwLock<()>,
    /// The re-authentication task, once the broker asked for one.
    reauth_task: Mutex<Option<AbortHandle>>,
    /// Completed re-authentications.
    reauthentications: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let reauth = self
            .reauth_task
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(task) = reauth.take() {
            task.abort();
        }
    }
}

/// State shared with the reader and writer tasks.
struct Shared {
    broker: String,
    state: Mutex<InFlight>,
    /// The correlation id of the next request; responses carrying an id at
    /// or above it (or a negative one) were never asked for.
    next_correlation_id: AtomicI32,
}

type Waiter = oneshot::Sender<Result<Bytes, Error>>;

/// A request frame on its way to the writer task.
struct Outgoing {
    frame: Bytes,
    correlation_id: i32,
    api: &'static str,
    /// Written only while this window is open.
    window: Option<SendWindow>,
}

tokio::task_local! {
    static SEND_WINDOW: SendWindow;
}

/// A time until which requests may be written to a broker, checked by the
/// connection's writer just before it writes each request sent under it
/// ([`SendWindow::scope`]). A request whose window has closed by then is not
/// written and fails with [`Error::SendWindowClosed`].
///
/// It exists for writers whose right to write is a lease: a process that
/// was paused (SIGSTOP, a frozen VM) after queueing a request, and wakes up
/// after its lease ran out and another instance took its work over, must
/// not deliver that request. The check uses the monotonic clock. What it
/// cannot stop is a request already handed to the operating system before
/// the pause: that one was sent while the lease held.
#[derive(Clone, Debug, Default)]
pub struct SendWindow(Arc<Mutex<Option<std::time::Instant>>>);

impl SendWindow {
    /// A window that is closed until [`open_until`](Self::open_until).
    pub fn closed() -> Self {
        SendWindow::default()
    }

    /// Opens the window until `until` (replacing the previous end).
    pub fn open_until(&self, until: std::time::Instant) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(until);
    }

    /// Closes the window now.
    pub fn close(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Whether a request written now would be within the window.
    pub fn is_open(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| std::time::Instant::now() < until)
    }

    /// Runs `future` with every request it sends (in this task) written only
    /// while this window is open.
    pub async fn scope<F: std::future::Future>(&self, future: F) -> F::Output {
        SEND_WINDOW.scope(self.clone(), future).await
    }
}

struct InFlight {
    waiters: HashMap<i32, Waiter>,
    /// Why the connection is unusable, once it is.
    closed: Option<Closed>,
}

/// Why a connection closed; decides the error its requests fail with.
#[derive(Clone)]
enum Closed {
    /// End of stream, I/O failure or closed by us: retriable
    /// [`Error::ConnectionClosed`].
    Io(String),
    /// The TLS layer failed (an alert from the broker, say): [`Error::Tls`].
    Tls(String, crate::TlsFailure),
    /// The broker announced an impossible frame: [`Error::FrameTooLarge`].
    FrameTooLarge { size: i64, max: usize },
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, InFlight> {
        // A panic while holding this lock cannot leave the map inconsistent
        // (every operation is a single insert/remove), so ignore poisoning.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn closed_error(&self, closed: &Closed) -> Error {
        let broker = self.broker.clone();
        match closed {
            Closed::Io(detail) => Error::ConnectionClosed {
                broker,
                detail: detail.clone(),
            },
            Closed::Tls(detail, kind) => Error::Tls {
                broker,
                detail: detail.clone(),
                kind: *kind,
            },
            Closed::FrameTooLarge { size, max } => Error::FrameTooLarge {
                broker,
                size: *size,
                max: *max,
            },
        }
    }

    fn register(
        &self,
        correlation_id: i32,
    ) -> Result<oneshot::Receiver<Result<Bytes, Error>>, Error> {
        let mut state = self.lock();
        if let Some(closed) = &state.closed {
            return Err(self.closed_error(closed));
        }
        let (tx, rx) = oneshot::channel();
        state.waiters.insert(correlation_id, tx);
        Ok(rx)
    }

    fn remove(&self, correlation_id: i32) {
        self.lock().waiters.remove(&correlation_id);
    }

    /// Fails one in-flight request with `error` (it was never written).
    fn fail(&self, correlation_id: i32, error: Error) {
        let waiter = self.lock().waiters.remove(&correlation_id);
        if let Some(waiter) = waiter {
            let _ = waiter.send(Err(error));
        }
    }

    /// Marks the connection closed and fails every in-flight request.
    fn poison(&self, reason: String) {
        self.close(Closed::Io(reason));
    }

    /// Closes the connection after a failed read or write, telling TLS
    /// failures apart from plain I/O ones.
    fn poison_io(&self, action: &str, error: &std::io::Error) {
        match error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            Some(tls) => self.close(Closed::Tls(
                crate::tls::describe_error(tls),
                crate::tls::failure_kind(tls),
            )),
            None => self.poison(format!("{action} failed: {error}")),
        }
    }

    fn close(&self, closed: Closed) {
        let (waiters, closed) = {
            let mut state = self.lock();
            // The first reason wins; later failures are consequences.
            let closed = state.closed.get_or_insert(closed).clone();
            (std::mem::take(&mut state.waiters), closed)
        };
        tracing::debug!(broker = %self.broker, reason = %self.closed_error(&closed), "connection closed");
        for (_, waiter) in waiters {
            let _ = waiter.send(Err(self.closed_error(&closed)));
        }
    }

    /// Whether no request on this connection used `correlation_id` (only
    /// decidable until the counter wraps past `i32::MAX`).
    fn never_issued(&self, correlation_id: i32) -> bool {
        let next = self.next_correlation_id.load(Ordering::Relaxed);
        next >= 0 && (correlation_id < 0 || correlation_id >= next)
    }

    fn deliver(&self, frame: Bytes) {
        let Some(correlation_id) = frame::peek_correlation_id(&frame) else {
            self.poison(format!(
                "response frame of {} bytes has no correlation id",
                frame.len()
            ));
            return;
        };
        let waiter = self.lock().waiters.remove(&correlation_id);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(Ok(frame));
            }
            None if self.never_issued(correlation_id) => self.poison(format!(
                "protocol error: response with correlation id {correlation_id}, which no \
                 request on this connection used"
            )),
            None => tracing::debug!(
                broker = %self.broker,
                correlation_id,
                "dropping response nobody waits for (timed out or cancelled)"
            ),
        }
    }
}

/// Removes a request's slot if the request future is dropped or times out.
struct SlotGuard<'a> {
    shared: &'a Shared,
    correlation_id: i32,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.shared.remove(self.correlation_id);
    }
}

impl BrokerConnection {
    /// Starts the reader and writer tasks over an established stream. The
    /// connection knows no broker versions until ApiVersions is negotiated.
    pub(crate) fn start<S>(stream: S, address: &str, config: &ConnectionConfig) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut read_half, mut write_half) = tokio::io::split(stream);
        let shared = Arc::new(Shared {
            broker: address.to_string(),
            state: Mutex::new(InFlight {
                waiters: HashMap::new(),
                closed: None,
            }),
            next_correlation_id: AtomicI32::new(0),
        });
        let (frames, mut queue) = mpsc::channel::<Outgoing>(WRITE_QUEUE);

        let writer_shared = shared.clone();
        let writer = tokio::spawn(async move {
            while let Some(out) = queue.recv().await {
                if let Some(window) = &out.window
                    && !window.is_open()
                {
                    writer_shared.fail(
                        out.correlation_id,
                        Error::SendWindowClosed {
                            broker: writer_shared.broker.clone(),
                            api: out.api,
                        },
                    );
                    continue;
                }
                if let Err(e) = write_half.write_all(&out.frame).await {
                    writer_shared.poison_io("write", &e);
                    return;
                }
            }
            // Every handle is gone: close our side politely.
            let _ = write_half.shutdown().await;
        });

        let reader_shared = shared.clone();
        let max_frame_bytes = config.max_frame_bytes;
        let reader = tokio::spawn(async move {
            let mut frames = frame::FrameReader::new(max_frame_bytes);
            loop {
                match frames.read(&mut read_half).await {
                    Ok(Some(frame)) => reader_shared.deliver(frame),
                    Ok(None) => {
                        reader_shared.poison("broker closed the connection".to_string());
                        return;
                    }
                    Err(FrameError::TooLarge { size, max }) => {
                        reader_shared.close(Closed::FrameTooLarge { size, max });
                        return;
                    }
                    Err(FrameError::Io(e)) => {
                        reader_shared.poison_io("read", &e);
                        return;
                    }
                }
            }
        });

        BrokerConnection {
            inner: Arc::new(Inner {
                shared,
                frames,
                client_id: config.client_id.clone(),
                request_timeout: config.request_timeout,
                api_versions: HashMap::new(),
                requests: None,
                tasks: [writer.abort_handle(), reader.abort_handle()],
                gate: RwLock::new(()),
                reauth_task: Mutex::new(None),
                reauthentications: AtomicU64::new(0),
            }),
        }
    }

    /// How long a request waits for its response (the connection config's
    /// `request_timeout`).
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// The broker address (`host:port`) this connection goes to.
    pub fn address(&self) -> &str {
        &self.inner.shared.broker
    }

    /// Whether the connection is closed (poisoned); it then fails every
    /// request and should be replaced.
    pub fn is_closed(&self) -> bool {
        self.inner.shared.lock().closed.is_some() || self.inner.frames.is_closed()
    }

    /// Closes the connection: in-flight and later requests fail with
    /// [`Error::ConnectionClosed`]. Other clones of this handle see it closed.
    pub fn close(&self) {
        self.inner.shared.poison("closed by the client".to_string());
        for task in &self.inner.tasks {
            task.abort();
        }
    }

    /// How many times this connection re-authenticated (KIP-368) so far.
    pub fn reauthentications(&self) -> u64 {
        self.inner.reauthentications.load(Ordering::Relaxed)
    }

    /// Whether two handles refer to the same underlying connection.
    pub fn same_connection(&self, other: &BrokerConnection) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The version range the broker advertised for `api_key`, if any.
    pub fn broker_versions(&self, api_key: i16) -> Option<VersionRange> {
        self.inner.api_versions.get(&api_key).copied()
    }

    /// The version [`send`](Self::send) uses for `R`: the highest one both
    /// the broker and kafka-lite support. Build the request for that version.
    pub fn version_for<R: ApiRequest>(&self) -> Result<i16, Error> {
        let ours = R::supported_versions();
        let broker = self.broker_versions(R::KEY);
        match broker.map(|b| ours.intersect(&b)) {
            Some(common) if !common.is_empty() => Ok(common.max),
            _ => Err(Error::UnsupportedVersion {
                broker: self.address().to_string(),
                api: R::NAME,
                broker_range: broker,
                supported_range: ours,
            }),
        }
    }

    /// Sends `request` at the negotiated version ([`version_for`](Self::version_for))
    /// and waits for its response.
    ///
    /// Not for requests the broker does not answer (Produce with acks=0).
    pub async fn send<R: ApiRequest>(&self, request: R) -> Result<R::Response, Error> {
        let version = self.version_for::<R>()?;
        self.send_with_version(request, version).await
    }

    /// Sends `request` at exactly `version` (any version kafka-protocol can
    /// encode, whatever the broker advertised) and waits for its response.
    ///
    /// On a connection from a [`BrokerPool`](crate::BrokerPool) the request
    /// is counted in [`BrokerPool::requests_sent`](crate::BrokerPool::requests_sent).
    pub async fn send_with_version<R: ApiRequest>(
        &self,
        request: R,
        version: i16,
    ) -> Result<R::Response, Error> {
        self.send_within(request, version, self.inner.request_timeout)
            .await
    }

    /// [`send_with_version`](Self::send_with_version) waiting up to `timeout`
    /// for the response instead of the connection's request timeout: for
    /// requests the broker holds on purpose (JoinGroup waits for the whole
    /// rebalance).
    pub async fn send_within<R: ApiRequest>(
        &self,
        request: R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, Error> {
        if let Some(requests) = &self.inner.requests {
            requests.count(R::NAME);
        }
        let frame = self.round_trip(&request, version, timeout, true).await?;
        self.decode::<R>(frame, version)
    }

    /// Sends a SASL request at the negotiated version, past the gate that
    /// holds requests back during re-authentication. Counted like any
    /// request once the connection is set up (so re-authentications are).
    async fn send_sasl<R: ApiRequest>(&self, request: R) -> Result<R::Response, Error> {
        let version = self.version_for::<R>()?;
        if let Some(requests) = &self.inner.requests {
            requests.count(R::NAME);
        }
        let frame = self
            .round_trip(&request, version, self.inner.request_timeout, false)
            .await?;
        self.decode::<R>(frame, version)
    }

    fn decode<R: ApiRequest>(&self, frame: Bytes, version: i16) -> Result<R::Response, Error> {
        let malformed = |detail: String| Error::MalformedResponse {
            broker: self.address().to_string(),
            api: R::NAME,
            version,
            detail,
        };
        let (_, response) = frame::decode_response::<R>(frame, version).map_err(malformed)?;
        Ok(response)
    }

    /// Sends one request and returns its raw response frame (header
    /// included). With `gated`, waits while a re-authentication runs (that
    /// wait counts towards `timeout`).
    async fn round_trip<R: ApiRequest>(
        &self,
        request: &R,
        version: i16,
        timeout: Duration,
        gated: bool,
    ) -> Result<Bytes, Error> {
        let codec = <R as kafka_protocol::protocol::Message>::VERSIONS;
        if version < codec.min || version > codec.max {
            return Err(Error::Encode {
                api: R::NAME,
                version,
                detail: format!("kafka-protocol encodes only versions {codec}"),
            });
        }
        let inner = &self.inner;
        let closed = || {
            // The writer or reader stopped: report why, if known.
            let state = inner.shared.lock().closed.clone();
            let closed =
                state.unwrap_or_else(|| Closed::Io("the connection's tasks stopped".into()));
            inner.shared.closed_error(&closed)
        };
        // The send window of the calling task (if any) goes with the frame.
        let window = SEND_WINDOW.try_with(SendWindow::clone).ok();
        let exchange = async {
            let _shared = if gated {
                Some(inner.gate.read().await)
            } else {
                None
            };
            let correlation_id = inner
                .shared
                .next_correlation_id
                .fetch_add(1, Ordering::Relaxed);
            let frame = frame::encode_request(request, version, correlation_id, &inner.client_id)
                .map_err(|detail| Error::Encode {
                api: R::NAME,
                version,
                detail,
            })?;
            let response = inner.shared.register(correlation_id)?;
            let _slot = SlotGuard {
                shared: &inner.shared,
                correlation_id,
            };
            let out = Outgoing {
                frame,
                correlation_id,
                api: R::NAME,
                window,
            };
            inner.frames.send(out).await.map_err(|_| closed())?;
            response.await.map_err(|_| closed())?
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(Error::RequestTimeout {
                broker: self.address().to_string(),
                api: R::NAME,
                timeout,
            }),
        }
    }

    /// Mutable access during setup, before the handle is shared.
    fn setup_inner(&mut self) -> Result<&mut Inner, Error> {
        let broker = self.address().to_string();
        Arc::get_mut(&mut self.inner).ok_or(Error::ConnectionClosed {
            broker,
            detail: "connection handle shared during setup".to_string(),
        })
    }

    /// Sends ApiVersions at the highest version we know; if the broker
    /// answers UNSUPPORTED_VERSION (in v0 format, as Kafka does), retries at
    /// the highest ApiVersions version the broker listed.
    async fn negotiate_api_versions(&mut self) -> Result<(), Error> {
        let mut version = ApiVersionsRequest::MAX_VERSION;
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("kafka-lite"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let mut attempts = 0;
        let response = loop {
            attempts += 1;
            let frame = self
                .round_trip(&request, version, self.inner.request_timeout, false)
                .await?;
            // ApiVersions responses always use header v0 (correlation id
            // only), and every version starts its body with the error code.
            let error_code = frame.get(4..6).map(|b| i16::from_be_bytes([b[0], b[1]]));
            if error_code == Some(UNSUPPORTED_VERSION) && attempts == 1 {
                let fallback: ApiVersionsResponse = self.decode::<ApiVersionsRequest>(frame, 0)?;
                let broker_max = fallback
                    .api_keys
                    .iter()
                    .find(|k| k.api_key == ApiVersionsRequest::KEY)
                    .map_or(0, |k| k.max_version);
                version = broker_max.clamp(0, ApiVersionsRequest::MAX_VERSION);
                tracing::debug!(
                    broker = self.address(),
                    version,
                    "retrying ApiVersions at a lower version"
                );
                continue;
            }
            break self.decode::<ApiVersionsRequest>(frame, version)?;
        };
        Error::check_code(
            "ApiVersions",
            response.error_code,
            format!("broker {}", self.address()),
        )?;
        let versions = response
            .api_keys
            .iter()
            .map(|k| {
                (
                    k.api_key,
                    VersionRange {
                        min: k.min_version,
                        max: k.max_version,
                    },
                )
            })
            .collect();
        self.setup_inner()?.api_versions = versions;
        Ok(())
    }

    /// The SASL mechanism for one authentication, with its credential
    /// fetched (which may take a network round trip to a token endpoint).
    async fn start_mechanism(&self, config: &SaslConfig) -> Result<Box<dyn SaslMechanism>, Error> {
        let mechanism = config.mechanism.name().to_string();
        sasl::start(config, self.address())
            .await
            .map_err(|e| match e {
                StartError::Sasl(e) => Error::Authentication {
                    broker: self.address().to_string(),
                    mechanism,
                    detail: e.0,
                },
                StartError::Credentials(error) => Error::Credentials {
                    broker: self.address().to_string(),
                    mechanism,
                    error: Box::new(error),
                },
            })
    }

    /// SaslHandshake v1 naming the mechanism, then SaslAuthenticate rounds
    /// until the mechanism is done. Returns the session lifetime the broker
    /// gave (SaslAuthenticate v1+), if it gave one.
    async fn authenticate(
        &self,
        config: &SaslConfig,
        mut mechanism: Box<dyn SaslMechanism>,
    ) -> Result<Option<Duration>, Error> {
        let mechanism_name = config.mechanism.name();
        let auth_error = |detail: String| Error::Authentication {
            broker: self.address().to_string(),
            mechanism: mechanism_name.to_string(),
            detail,
        };

        let handshake = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_static_str(mechanism_name));
        let response = self.send_sasl(handshake).await?;
        if response.error_code != 0 {
            let enabled: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(auth_error(format!(
                "broker rejected the mechanism (error code {}); it enables [{}]",
                response.error_code,
                enabled.join(", ")
            )));
        }

        let mut token = mechanism.initial_response().map_err(|e| auth_error(e.0))?;
        let lifetime = loop {
            let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
            let response = match self.send_sasl(request).await {
                Ok(response) => response,
                Err(Error::ConnectionClosed { detail, .. }) => {
                    return Err(auth_error(format!(
                        "broker closed the connection during authentication ({detail})"
                    )));
                }
                Err(e) => return Err(e),
            };
            if response.error_code != 0 {
                let message = response.error_message.as_ref().map_or("", |m| m.as_str());
                let name = kafka_protocol::error::ResponseError::try_from_code(response.error_code)
                    .map(|e| crate::error::kafka_error_name(&e))
                    .unwrap_or_default();
                // The mechanism's view of the failure, unless the broker's
                // message already says it (Kafka repeats OAUTHBEARER's JSON).
                let detail = match mechanism.failure_detail() {
                    Some((server, raw)) if !message.contains(raw.as_str()) => {
                        format!("{name}: {message} ({server})")
                    }
                    _ => format!("{name}: {message}"),
                };
                return Err(auth_error(detail));
            }
            match mechanism
                .evaluate(&response.auth_bytes)
                .map_err(|e| auth_error(e.0))?
            {
                SaslStep::Respond(next) => token = next,
                SaslStep::Done => break response.session_lifetime_ms,
            }
        };
        tracing::debug!(
            broker = self.address(),
            mechanism = mechanism_name,
            session_lifetime_ms = lifetime,
            "authenticated"
        );
        Ok(u64::try_from(lifetime)
            .ok()
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis))
    }

    /// Starts the task that re-authenticates before each session expires;
    /// the first session lasts `lifetime`. See the module documentation.
    fn schedule_reauthentication(&self, config: SaslConfig, lifetime: Duration) {
        let connection: Weak<Inner> = Arc::downgrade(&self.inner);
        let task = tokio::spawn(async move {
            let mut lifetime = lifetime;
            loop {
                tokio::time::sleep(reauthentication_delay(lifetime)).await;
                let Some(inner) = connection.upgrade() else {
                    return;
                };
                let connection = BrokerConnection { inner };
                if connection.is_closed() {
                    return;
                }
                match connection.reauthenticate(&config).await {
                    Ok(Some(next)) => lifetime = next,
                    Ok(None) => return,
                    Err(e) => {
                        tracing::warn!(
                            broker = connection.address(),
                            error = %e,
                            "re-authentication failed; closing the connection"
                        );
                        connection
                            .inner
                            .shared
                            .poison(format!("re-authentication failed: {e}"));
                        return;
                    }
                }
            }
        });
        *self
            .inner
            .reauth_task
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
    }

    /// Authenticates again on this connection (KIP-368): fresh credentials
    /// first, then, with no request in flight and none sent meanwhile,
    /// SaslHandshake and SaslAuthenticate. Returns the new session lifetime.
    async fn reauthenticate(&self, config: &SaslConfig) -> Result<Option<Duration>, Error> {
        let mechanism = self.start_mechanism(config).await?;
        let _exclusive = self.inner.gate.write().await;
        let lifetime = self.authenticate(config, mechanism).await?;
        self.inner.reauthentications.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(broker = self.address(), "re-authenticated");
        Ok(lifetime)
    }

    /// Creates a connection over `stream` with a fixed set of broker
    /// versions, for tests of the request machinery.
    #[cfg(test)]
    fn with_versions<S>(
        stream: S,
        config: &ConnectionConfig,
        versions: HashMap<i16, VersionRange>,
    ) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let mut connection = Self::start(stream, "test-broker:9092", config);
        if let Ok(inner) = connection.setup_inner() {
            inner.api_versions = versions;
        }
        connection
    }
}

/// When to re-authenticate a session of `lifetime`: at a random point
/// between 85 % and 95 % of it, as Kafka's Java client does, so that many
/// connections opened together do not all re-authenticate together.
fn reauthentication_delay(lifetime: Duration) -> Duration {
    let mut random = [0u8; 2];
    // Without randomness, the middle of the range.
    let spread = match getrandom::fill(&mut random) {
        Ok(()) => f64::from(u16::from_le_bytes(random)) / f64::from(u16::MAX),
        Err(_) => 0.5,
    };
    lifetime.mul_f64(0.85 + 0.10 * spread)
}

#[cfg(test)]
mod tests;
