//! Which instance owns a flow: the membership protocol's bytes and the
//! leader's choice (docs/membership.md, "The election").
//!
//! Every instance running a flow with membership on joins the flow's group on
//! the target cluster with [`PROTOCOL_TYPE`]/[`PROTOCOL`] and, as metadata, the
//! last generation in which it owned the flow. The leader gives the flow to one
//! member:
//! 1. the member that owned it most recently keeps it (so a member joining or
//!    leaving does not move the work, and a paused instance that comes back
//!    with an old claim loses to the one that took over);
//! 2. otherwise a member picked by the group's name among the members sorted
//!    by their static instance id (else member id), so the flows of a
//!    configuration spread over the instances instead of all landing on one.
//!
//! Every member learns from its assignment whether it owns the flow.

/// The protocol type of our membership groups (consumers use `consumer`).
pub const PROTOCOL_TYPE: &str = "mm2-checkpoint";

/// The one protocol our members support.
pub const PROTOCOL: &str = "owner-v1";

/// The version byte leading metadata and assignments.
const VERSION: u8 = 1;

/// What a member tells the leader when it joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberClaim {
    /// The last generation in which this member owned the flow, if any.
    pub owned_in: Option<i32>,
}

impl MemberClaim {
    /// Five bytes: the version, then the generation (big-endian; -1 for none).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(5);
        out.push(VERSION);
        out.extend_from_slice(&self.owned_in.unwrap_or(-1).to_be_bytes());
        out
    }

    /// The claim in `bytes`; `None` for anything that is not our version-1
    /// metadata (such a member gets no work).
    pub fn decode(bytes: &[u8]) -> Option<MemberClaim> {
        match bytes {
            [VERSION, g0, g1, g2, g3] => {
                let g = i32::from_be_bytes([*g0, *g1, *g2, *g3]);
                Some(MemberClaim {
                    owned_in: (g >= 0).then_some(g),
                })
            }
            _ => None,
        }
    }
}

/// A member as the leader sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The coordinator's member id.
    pub member_id: String,
    /// Its static `group.instance.id`, if any.
    pub instance_id: Option<String>,
    /// Its metadata, decoded (`None`: unreadable, never chosen).
    pub claim: Option<MemberClaim>,
}

impl Candidate {
    fn sort_key(&self) -> (&str, &str) {
        (
            self.instance_id.as_deref().unwrap_or(&self.member_id),
            &self.member_id,
        )
    }
}

/// The member id that owns the flow of `group` among `members`, by the rules
/// of the module docs; `None` if no member sent readable metadata.
pub fn choose_owner<'a>(group: &str, members: &'a [Candidate]) -> Option<&'a str> {
    let mut readable: Vec<&Candidate> = members.iter().filter(|m| m.claim.is_some()).collect();
    readable.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let latest = readable
        .iter()
        .filter_map(|m| m.claim.and_then(|c| c.owned_in).map(|g| (g, *m)))
        // The most recent owner; among equal claims the first by sort key.
        .max_by(|(ga, a), (gb, b)| ga.cmp(gb).then(b.sort_key().cmp(&a.sort_key())));
    if let Some((_, m)) = latest {
        return Some(&m.member_id);
    }
    if readable.is_empty() {
        return None;
    }
    let pick = (fnv1a(group.as_bytes()) % readable.len() as u64) as usize;
    Some(&readable[pick].member_id)
}

/// The assignment bytes for a member: the version, then 1 if it owns the flow.
pub fn encode_assignment(owns: bool) -> Vec<u8> {
    vec![VERSION, u8::from(owns)]
}

/// Whether an assignment gives the flow to its receiver. Anything else than
/// our version-1 assignment (an empty one included) means "not the owner".
pub fn owns_by_assignment(bytes: &[u8]) -> bool {
    matches!(bytes, [VERSION, 1])
}

/// 64-bit FNV-1a: a stable hash (the same in every instance and release).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, instance: Option<&str>, owned_in: Option<i32>) -> Candidate {
        Candidate {
            member_id: id.to_string(),
            instance_id: instance.map(str::to_string),
            claim: Some(MemberClaim { owned_in }),
        }
    }

    #[test]
    fn a_claim_round_trips_and_foreign_metadata_is_unreadable() {
        for owned_in in [None, Some(0), Some(7), Some(i32::MAX)] {
            let c = MemberClaim { owned_in };
            assert_eq!(MemberClaim::decode(&c.encode()), Some(c));
        }
        assert_eq!(MemberClaim::decode(b""), None);
        assert_eq!(MemberClaim::decode(&[2, 0, 0, 0, 1]), None);
        assert_eq!(MemberClaim::decode(&[1, 0, 0, 1]), None);
    }

    #[test]
    fn the_most_recent_owner_keeps_the_flow_when_members_come_and_go() {
        let members = [
            member("m-a", None, None),
            member("m-b", None, Some(4)),
            member("m-c", None, Some(2)),
        ];
        assert_eq!(choose_owner("g", &members), Some("m-b"));
        // A paused instance back with an older claim loses.
        let members = [member("old", None, Some(3)), member("new", None, Some(5))];
        assert_eq!(choose_owner("g", &members), Some("new"));
    }

    #[test]
    fn without_an_owner_the_pick_depends_only_on_the_group_and_the_sorted_members() {
        let a = [
            member("m-1", Some("pod-2"), None),
            member("m-2", Some("pod-0"), None),
            member("m-3", Some("pod-1"), None),
        ];
        let mut b = a.clone();
        b.reverse();
        for group in ["x", "y", "mm2-checkpoint.A.B"] {
            assert_eq!(choose_owner(group, &a), choose_owner(group, &b));
        }
        // Several flows spread over the instances.
        let owners: std::collections::BTreeSet<_> = (0..12)
            .filter_map(|i| choose_owner(&format!("mm2-checkpoint.S{i}.T"), &a))
            .collect();
        assert!(owners.len() > 1, "{owners:?}");
    }

    #[test]
    fn members_with_unreadable_metadata_get_nothing() {
        let mut odd = member("odd", None, None);
        odd.claim = None;
        assert_eq!(choose_owner("g", std::slice::from_ref(&odd)), None);
        let members = [odd, member("ok", None, None)];
        assert_eq!(choose_owner("g", &members), Some("ok"));
    }

    #[test]
    fn only_our_assignment_with_the_flag_set_gives_ownership() {
        assert!(owns_by_assignment(&encode_assignment(true)));
        assert!(!owns_by_assignment(&encode_assignment(false)));
        assert!(!owns_by_assignment(b""));
        assert!(!owns_by_assignment(&[2, 1]));
    }
}
