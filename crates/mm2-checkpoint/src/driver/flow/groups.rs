//! Group discovery: the source's groups the flow checkpoints
//! (docs/behaviour.md E).

use std::collections::BTreeSet;

use super::cluster::FlowCluster;
use super::context::{FlowContext, StepError, is_group_denied};

/// Lists the source's groups, applies the group filter and keeps the groups
/// with at least one committed partition the topic filter accepts (docs/behaviour.md E).
///
/// ListGroups silently leaves out groups the principal may not describe, so
/// the plain group names of `groups` that were not listed are asked for
/// too: a GROUP_AUTHORIZATION_FAILED answer for one is warned about.
pub async fn discover_groups<C: FlowCluster>(
    ctx: &FlowContext<C>,
) -> Result<Vec<String>, StepError> {
    let s = &ctx.source;
    let listed = ctx.step(s, "ListGroups", s.list_groups().await)?;
    let mut candidates: BTreeSet<String> = listed
        .into_iter()
        .filter(|g| ctx.group_filter.should_replicate_group(g))
        .collect();
    let unlisted: BTreeSet<String> = plain_names(&ctx.cfg.filters.groups)
        .filter(|g| ctx.group_filter.should_replicate_group(g) && !candidates.contains(*g))
        .map(str::to_owned)
        .collect();
    candidates.extend(unlisted.iter().cloned());
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let candidates: Vec<String> = candidates.into_iter().collect();
    let offsets = ctx.step(s, "OffsetFetch", s.fetch_group_offsets(&candidates).await)?;
    let mut kept = Vec::new();
    for (group, result) in offsets {
        match result {
            Ok(tps) => {
                if tps
                    .keys()
                    .any(|tp| ctx.topic_filter.should_replicate_topic(&tp.topic))
                {
                    kept.push(group);
                }
            }
            Err(e) if is_group_denied(&e) => {
                let op = if unlisted.contains(&group) {
                    "ListGroups"
                } else {
                    "OffsetFetch"
                };
                ctx.note_group_denied(s, op, &group, &e);
            }
            Err(e) => {
                tracing::warn!(flow = %ctx.name, group, error = %e, "cannot list the group's offsets; left out");
            }
        }
    }
    Ok(kept)
}

/// The entries of a `groups` list that are plain group names (no regular
/// expression syntax besides `.`, which matches itself too).
pub(super) fn plain_names(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|name| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    })
}
