//! kafka-lite's group membership (classic protocol: JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup) against the real source cluster: members join and
//! get the leader's assignment, a joining or leaving member makes the others
//! rejoin, and a static member that restarts takes its place without a
//! rebalance while its previous incarnation is fenced.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use e2e::{Listener, clusters, unique_name};
use kafka_lite::{Client, ConnectionConfig, Joined, MemberConfig};

async fn client() -> Client {
    let bootstrap = clusters().source().bootstrap.get(Listener::Plaintext);
    let config = ConnectionConfig {
        client_id: "e2e-client-membership".into(),
        request_timeout: Duration::from_secs(20),
        ..ConnectionConfig::default()
    };
    Client::connect(vec![bootstrap.to_string()], config)
        .await
        .expect("connect")
}

fn member(group: &str, instance: Option<&str>) -> MemberConfig {
    MemberConfig {
        group: group.to_owned(),
        protocol_type: "kafka-lite-test".into(),
        protocols: vec![("even".into(), Bytes::from_static(b"v1"))],
        instance_id: instance.map(str::to_owned),
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(10),
    }
}

/// The leader's assignment: every member gets its own member id back.
fn assign(joined: &Joined) -> Vec<(String, Bytes)> {
    if !joined.is_leader() || joined.skip_assignment {
        return Vec::new();
    }
    joined
        .members
        .iter()
        .map(|m| (m.member_id.clone(), Bytes::from(m.member_id.clone())))
        .collect()
}

/// What a member's loop last reached: its generation and assignment, or the
/// error that stopped it.
type Seen = Arc<Mutex<Option<Result<(Joined, Bytes), String>>>>;

/// A member as an application runs one: join, sync, heartbeat every 300 ms,
/// and join again (with its member id) whenever a heartbeat says so, until
/// stopped.
struct Member {
    seen: Seen,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Client>,
}

impl Member {
    fn start(client: Client, config: MemberConfig) -> Member {
        let seen: Seen = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (s, halt) = (seen.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut member_id = String::new();
            'rejoin: while !halt.load(Ordering::Relaxed) {
                let joined = match client.join_group(&config, &member_id).await {
                    Ok(j) => j,
                    Err(e) if e.needs_rejoin() => continue,
                    Err(e) => {
                        *s.lock().unwrap() = Some(Err(e.to_string()));
                        break;
                    }
                };
                member_id = joined.member_id.clone();
                let assignment = match client.sync_group(&config, &joined, &assign(&joined)).await {
                    Ok(a) => a,
                    Err(e) if e.needs_rejoin() => continue,
                    Err(e) => {
                        *s.lock().unwrap() = Some(Err(e.to_string()));
                        break;
                    }
                };
                *s.lock().unwrap() = Some(Ok((joined.clone(), assignment)));
                while !halt.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    match client
                        .heartbeat(&config, joined.generation, &joined.member_id)
                        .await
                    {
                        Ok(()) => {}
                        Err(e) if e.needs_rejoin() => continue 'rejoin,
                        Err(e) => {
                            *s.lock().unwrap() = Some(Err(e.to_string()));
                            break 'rejoin;
                        }
                    }
                }
            }
            client
        });
        Member { seen, stop, task }
    }

    fn seen(&self) -> Option<Result<(Joined, Bytes), String>> {
        self.seen.lock().unwrap().clone()
    }

    /// Stops the loop (without leaving the group) and returns its client.
    async fn stop(self) -> Client {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("member task")
    }
}

/// Waits until `members` are all synced in one generation whose leader saw
/// exactly them; returns what each got.
async fn stable(members: &[&Member], limit: Duration) -> Vec<(Joined, Bytes)> {
    let deadline = Instant::now() + limit;
    loop {
        let seen: Vec<_> = members.iter().map(|m| m.seen()).collect();
        if let Some(Err(e)) = seen.iter().flatten().find(|r| r.is_err()) {
            panic!("a member stopped: {e}");
        }
        let synced: Vec<(Joined, Bytes)> = seen.into_iter().flatten().flatten().collect();
        if synced.len() == members.len() {
            let generation = synced[0].0.generation;
            let leader = synced.iter().find(|(j, _)| j.is_leader());
            if synced.iter().all(|(j, _)| j.generation == generation)
                && leader
                    .is_some_and(|(j, _)| j.members.len() == members.len() || j.skip_assignment)
            {
                return synced;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no stable generation of {} members within {limit:?}: {:?}",
            members.len(),
            members.iter().map(|m| m.seen()).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn members_join_get_the_leaders_assignment_and_rejoin_when_one_joins_or_leaves() {
    let group = unique_name("membership");
    let config = member(&group, None);
    let a = Member::start(client().await, config.clone());
    let b = Member::start(client().await, config.clone());
    let two = stable(&[&a, &b], Duration::from_secs(30)).await;
    for (joined, assignment) in &two {
        assert_eq!(joined.protocol.as_deref(), Some("even"));
        assert_eq!(
            assignment,
            &Bytes::from(joined.member_id.clone()),
            "its own id"
        );
    }
    let leader = two.iter().find(|(j, _)| j.is_leader()).expect("a leader");
    assert!(
        leader
            .0
            .members
            .iter()
            .all(|m| m.metadata == Bytes::from_static(b"v1"))
    );

    // A third member joins: the others hear of it through their heartbeats
    // and rejoin with their member ids.
    let c = Member::start(client().await, config.clone());
    let three = stable(&[&a, &b, &c], Duration::from_secs(30)).await;
    assert!(three[0].0.generation > two[0].0.generation);
    assert_eq!(
        three[0].0.member_id, two[0].0.member_id,
        "a keeps its member id"
    );
    for (joined, assignment) in &three {
        assert_eq!(assignment, &Bytes::from(joined.member_id.clone()));
    }

    // c leaves: the others rejoin at once, well within c's 10 s session.
    let (jc, _) = three[2].clone();
    let c = c.stop().await;
    let left = Instant::now();
    c.leave_group(&config, &jc.member_id)
        .await
        .expect("c leaves");
    let after = stable(&[&a, &b], Duration::from_secs(30)).await;
    assert!(after[0].0.generation > three[0].0.generation);
    assert!(
        left.elapsed() < Duration::from_secs(8),
        "rebalanced {:?} after c left",
        left.elapsed()
    );
    // An old generation is refused as such.
    let b_client = b.stop().await;
    let (jb, _) = &after[1];
    let e = b_client
        .heartbeat(&config, two[0].0.generation, &jb.member_id)
        .await
        .expect_err("an old generation");
    assert!(e.needs_rejoin(), "{e}");
    let a_client = a.stop().await;
    for (client, (joined, _)) in [(&a_client, &after[0]), (&b_client, &after[1])] {
        client
            .leave_group(&config, &joined.member_id)
            .await
            .expect("leave");
    }
}

#[tokio::test]
async fn a_restarted_static_member_takes_its_place_without_a_rebalance_and_fences_the_old_one() {
    let group = unique_name("membership-static");
    let (pod_a, pod_b) = (member(&group, Some("pod-a")), member(&group, Some("pod-b")));
    let a = Member::start(client().await, pod_a.clone());
    let b = Member::start(client().await, pod_b.clone());
    let before = stable(&[&a, &b], Duration::from_secs(30)).await;
    let (ja, assigned_a) = before[0].clone();
    let leader = before
        .iter()
        .find(|(j, _)| j.is_leader())
        .expect("a leader");
    let ids: Vec<Option<&str>> = leader
        .0
        .members
        .iter()
        .map(|m| m.instance_id.as_deref())
        .collect();
    assert!(
        ids.contains(&Some("pod-a")) && ids.contains(&Some("pod-b")),
        "{ids:?}"
    );

    // pod-a "crashes" (no LeaveGroup) and a new incarnation joins with its
    // instance id within the session timeout: a new member id in the same
    // generation and the same assignment, and pod-b never rebalances.
    let old_a = a.stop().await;
    let a2 = client().await;
    let ja2 = a2.join_group(&pod_a, "").await.expect("pod-a rejoins");
    assert_eq!(ja2.generation, ja.generation, "no rebalance");
    assert_ne!(ja2.member_id, ja.member_id);
    let assignment = a2
        .sync_group(&pod_a, &ja2, &assign(&ja2))
        .await
        .expect("pod-a syncs again");
    assert_eq!(assignment, assigned_a, "pod-a keeps its assignment");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (jb_now, _) = b.seen().expect("b runs").expect("b is fine");
    assert_eq!(jb_now.generation, ja.generation, "pod-b never rejoined");
    // The previous incarnation is fenced, not asked to rejoin.
    let e = old_a
        .heartbeat(&pod_a, ja.generation, &ja.member_id)
        .await
        .expect_err("the old pod-a is fenced");
    assert!(!e.needs_rejoin() && e.is_group_active(), "{e}");
    assert!(e.to_string().contains("FENCED_INSTANCE_ID"), "{e}");
    a2.heartbeat(&pod_a, ja2.generation, &ja2.member_id)
        .await
        .expect("the new pod-a is a member");
    a2.leave_group(&pod_a, &ja2.member_id).await.expect("leave");
    let b_client = b.stop().await;
    b_client
        .leave_group(&pod_b, &jb_now.member_id)
        .await
        .expect("leave");
}
