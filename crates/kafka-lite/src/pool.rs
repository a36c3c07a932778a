//! Lazily (re)connecting connections, one per broker address and lane.
//!
//! [`BrokerPool::get`] returns the live connection to a broker, opening one
//! on first use and replacing a closed (poisoned) one on the next use. Two
//! callers asking for the same broker at once share one connection attempt.
//! Lane 0 is the connection every request uses; [`BrokerPool::get_lane`]
//! opens further connections to the same broker, for requests that may run
//! beside the others (see `ConnectionConfig::coordinator_connections`). The
//! pool counts the requests sent on its connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::connection::{BrokerConnection, Connector};
use crate::counts::RequestCounts;
use crate::error::Error;

type Slot = Arc<tokio::sync::Mutex<Option<BrokerConnection>>>;
/// A broker's address and a lane number.
type SlotKey = (String, usize);

/// Connections to the brokers of one cluster, keyed by `host:port`.
/// Cheap to clone; clones share the connections.
#[derive(Clone, Debug)]
pub struct BrokerPool {
    connector: Connector,
    slots: Arc<Mutex<HashMap<SlotKey, Slot>>>,
    requests: Arc<RequestCounts>,
}

impl BrokerPool {
    /// An empty pool connecting with `connector`.
    pub fn new(connector: Connector) -> Self {
        BrokerPool {
            connector,
            slots: Arc::default(),
            requests: Arc::default(),
        }
    }

    /// The connector used for new connections.
    pub fn connector(&self) -> &Connector {
        &self.connector
    }

    /// The open connection to `address`, connecting first if there is none
    /// or the previous one closed.
    pub async fn get(&self, address: &str) -> Result<BrokerConnection, Error> {
        self.get_lane(address, 0).await
    }

    /// The open connection of `lane` to `address` (lane 0 is
    /// [`get`](Self::get)'s), connecting first if there is none or the
    /// previous one closed.
    pub async fn get_lane(&self, address: &str, lane: usize) -> Result<BrokerConnection, Error> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots
                .entry((address.to_string(), lane))
                .or_default()
                .clone()
        };
        let mut current = slot.lock().await;
        if let Some(connection) = current.as_ref()
            && !connection.is_closed()
        {
            return Ok(connection.clone());
        }
        let connection = self
            .connector
            .connect_counted(address, Some(self.requests.clone()))
            .await?;
        *current = Some(connection.clone());
        Ok(connection)
    }

    /// Number of requests sent so far on the connections this pool (or a
    /// clone of it) opened, whoever sent them. Connection setup (ApiVersions,
    /// SASL) is not counted. Useful to check batching.
    pub fn requests_sent(&self) -> u64 {
        self.requests.total()
    }

    /// The requests sent on this pool's connections, in total and per API
    /// (shared: it keeps counting).
    pub fn request_counts(&self) -> Arc<RequestCounts> {
        self.requests.clone()
    }

    /// Forgets the connections to `address`, every lane (in-flight requests
    /// on them carry on); the next [`get`](Self::get) connects anew.
    pub fn invalidate(&self, address: &str) {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(a, _), _| a != address);
    }
}
