//! Group coordinator lookup: the per-group coordinator cache and FindCoordinator,
//! batched (v4+) or one request per group.

use std::collections::{HashMap, HashSet};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::FindCoordinatorRequest;
use kafka_protocol::protocol::StrBytes;

use super::{BrokerInfo, Client};
use crate::connection::BrokerConnection;
use crate::error::Error;

/// FindCoordinator key type for consumer groups.
const GROUP_KEY_TYPE: i8 = 0;
/// Most keys put in one batched (v4+) FindCoordinator request.
const MAX_COORDINATOR_KEYS: usize = 1000;

/// The lane (`0..lanes`) of `group`'s requests: FNV-1a of its id, so the same
/// group always gets the same one, in every process.
fn lane_of(group: &str, lanes: usize) -> usize {
    if lanes <= 1 {
        return 0;
    }
    let hash = group.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % lanes as u64) as usize
}

impl Client {
    /// The coordinator of consumer group `group`: cached, else looked up
    /// with FindCoordinator (with retries).
    pub async fn group_coordinator(&self, group: &str) -> Result<BrokerInfo, Error> {
        let mut found = self.group_coordinators(&[group.to_string()]).await;
        found.remove(group).unwrap_or_else(|| {
            Err(Error::made_up(
                "FindCoordinator",
                ResponseError::CoordinatorNotAvailable,
                format!("group {group:?}"),
            ))
        })
    }

    /// A connection to the coordinator of `group`: always the same one of
    /// the `coordinator_connections` of the connection config, chosen by a
    /// hash of the group id.
    pub async fn coordinator_connection(&self, group: &str) -> Result<BrokerConnection, Error> {
        let coordinator = self.group_coordinator(group).await?;
        let lanes = self.pool().connector().config().coordinator_connections;
        self.pool()
            .get_lane(&coordinator.address(), lane_of(group, lanes))
            .await
    }

    /// The coordinators of many groups, with one result per group. Cached
    /// ones cost nothing; the rest are looked up with batched FindCoordinator
    /// (v4+, up to 1000 keys a request) or one request per group on older
    /// brokers, retrying retriable errors until the deadline.
    pub async fn group_coordinators(
        &self,
        groups: &[String],
    ) -> HashMap<String, Result<BrokerInfo, Error>> {
        let mut results = HashMap::with_capacity(groups.len());
        let mut pending: Vec<String> = Vec::new();
        {
            let cache = self
                .inner
                .coordinators
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let mut seen = HashSet::new();
            for group in groups {
                if !seen.insert(group.as_str()) {
                    continue;
                }
                match cache.get(group) {
                    Some(b) => {
                        results.insert(group.clone(), Ok(b.clone()));
                    }
                    None => pending.push(group.clone()),
                }
            }
        }
        let mut backoff = self.new_backoff();
        let deadline = backoff.deadline();
        while !pending.is_empty() {
            let round = Self::within(deadline, self.find_coordinators_once(&pending)).await;
            let mut retry = Vec::new();
            for (group, result) in round {
                match result {
                    Ok(broker) => {
                        self.inner
                            .coordinators
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(group.clone(), broker.clone());
                        results.insert(group, Ok(broker));
                    }
                    Err(e) => {
                        self.observe_error(&e);
                        if e.is_retriable() {
                            retry.push(group.clone());
                        }
                        results.insert(group, Err(e));
                    }
                }
            }
            if retry.is_empty() || !backoff.wait().await {
                break;
            }
            tracing::debug!(groups = retry.len(), "retrying FindCoordinator");
            pending = retry;
        }
        results
    }

    /// The coordinators of `groups` (no duplicates), as buckets of groups per
    /// coordinator, and the groups whose lookup failed. The cached
    /// coordinators are sorted into their buckets under one lock, without a
    /// copy of the broker per group; the rest are looked up as
    /// [`group_coordinators`](Self::group_coordinators) does. Every batched
    /// group operation starts here, for each of its groups, every round.
    pub(crate) async fn coordinator_buckets(
        &self,
        groups: &[String],
    ) -> (HashMap<BrokerInfo, Vec<String>>, Vec<(String, Error)>) {
        let mut buckets: HashMap<BrokerInfo, Vec<String>> = HashMap::new();
        let mut pending: Vec<String> = Vec::new();
        {
            let cache = self
                .inner
                .coordinators
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for group in groups {
                match cache.get(group) {
                    Some(broker) => match buckets.get_mut(broker) {
                        Some(bucket) => bucket.push(group.clone()),
                        None => {
                            buckets.insert(broker.clone(), vec![group.clone()]);
                        }
                    },
                    None => pending.push(group.clone()),
                }
            }
        }
        let mut failed = Vec::new();
        if !pending.is_empty() {
            for (group, found) in self.group_coordinators(&pending).await {
                match found {
                    Ok(broker) => buckets.entry(broker).or_default().push(group),
                    Err(e) => failed.push((group, e)),
                }
            }
        }
        (buckets, failed)
    }

    async fn find_coordinators_once(
        &self,
        groups: &[String],
    ) -> Vec<(String, Result<BrokerInfo, Error>)> {
        let all_fail = |e: &Error| -> Vec<(String, Result<BrokerInfo, Error>)> {
            groups.iter().map(|g| (g.clone(), Err(e.clone()))).collect()
        };
        let connection = match self.any_broker().await {
            Ok(c) => c,
            Err(e) => return all_fail(&e),
        };
        let version = match connection.version_for::<FindCoordinatorRequest>() {
            Ok(v) => v,
            Err(e) => return all_fail(&e),
        };
        let mut out = Vec::with_capacity(groups.len());
        if version >= 4 {
            for chunk in groups.chunks(MAX_COORDINATOR_KEYS) {
                let request = FindCoordinatorRequest::default()
                    .with_key_type(GROUP_KEY_TYPE)
                    .with_coordinator_keys(
                        chunk
                            .iter()
                            .map(|g| StrBytes::from_string(g.clone()))
                            .collect(),
                    );
                match connection.send_with_version(request, version).await {
                    Ok(response) => {
                        let mut answered = HashSet::new();
                        for c in &response.coordinators {
                            let group = c.key.to_string();
                            let result = Error::check_code(
                                "FindCoordinator",
                                c.error_code,
                                format!("group {group:?}"),
                            )
                            .map(|()| BrokerInfo {
                                node_id: c.node_id.0,
                                host: c.host.to_string(),
                                port: c.port,
                                rack: None,
                            });
                            answered.insert(group.clone());
                            out.push((group, result));
                        }
                        for group in chunk.iter().filter(|g| !answered.contains(*g)) {
                            out.push((
                                group.clone(),
                                Err(Error::MalformedResponse {
                                    broker: connection.address().to_string(),
                                    api: "FindCoordinator",
                                    version,
                                    detail: format!("no coordinator returned for group {group:?}"),
                                }),
                            ));
                        }
                    }
                    Err(e) => {
                        out.extend(chunk.iter().map(|g| (g.clone(), Err(e.clone()))));
                    }
                }
            }
        } else {
            let mut tasks = tokio::task::JoinSet::new();
            for group in groups {
                let connection = connection.clone();
                let group = group.clone();
                tasks.spawn(async move {
                    let request = FindCoordinatorRequest::default()
                        .with_key(StrBytes::from_string(group.clone()))
                        .with_key_type(GROUP_KEY_TYPE);
                    let result = connection
                        .send_with_version(request, version)
                        .await
                        .and_then(|r| {
                            Error::check_code(
                                "FindCoordinator",
                                r.error_code,
                                format!("group {group:?}"),
                            )?;
                            Ok(BrokerInfo {
                                node_id: r.node_id.0,
                                host: r.host.to_string(),
                                port: r.port,
                                rack: None,
                            })
                        });
                    (group, result)
                });
            }
            while let Some(joined) = tasks.join_next().await {
                match joined {
                    Ok(pair) => out.push(pair),
                    Err(e) => tracing::error!(error = %e, "FindCoordinator task failed"),
                }
            }
            // A task that panicked leaves its group unanswered: report it.
            let answered: HashSet<String> = out.iter().map(|(g, _)| g.clone()).collect();
            for group in groups.iter().filter(|g| !answered.contains(*g)) {
                out.push((
                    group.clone(),
                    Err(Error::ConnectionClosed {
                        broker: connection.address().to_string(),
                        detail: "FindCoordinator task ended unexpectedly".to_string(),
                    }),
                ));
            }
        }
        out
    }

    /// Forgets `group`'s cached coordinator when `r` says it moved or is
    /// not available, so that a retry finds the new one; passes `r` on. The
    /// one place a group request's coordinator error is handled.
    pub(crate) fn note_coordinator<T>(&self, group: &str, r: Result<T, Error>) -> Result<T, Error> {
        if let Err(e) = &r
            && crate::admin::is_coordinator_error(e)
        {
            self.invalidate_coordinator(group);
        }
        r
    }

    /// Forgets the cached coordinator of `group`.
    pub fn invalidate_coordinator(&self, group: &str) {
        self.inner
            .coordinators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(group);
    }
}

#[cfg(test)]
mod tests {
    use super::lane_of;

    #[test]
    fn a_group_keeps_its_lane_and_groups_spread_over_the_lanes() {
        assert_eq!(lane_of("orders", 1), 0);
        assert_eq!(lane_of("orders", 0), 0);
        assert_eq!(lane_of("orders", 8), lane_of("orders", 8));
        let mut used = [0usize; 8];
        for i in 0..800 {
            used[lane_of(&format!("group-{i}"), 8)] += 1;
        }
        assert!(used.iter().all(|&n| n > 50), "{used:?}");
    }
}
