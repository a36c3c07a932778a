//! Topic names interned as `u32` ids, counted, for the structures that hold one
//! entry per (group, partition): the commit follower's view, the checkpoint
//! store and the `checkpoint_latency_ms` series. A 4-byte id per entry instead
//! of a 16-byte shared name (or a copy of its own) is most of what keeps those
//! entries small at a million group-partitions (docs/benchmarks.md, issue 18).

use std::collections::HashMap;
use std::sync::Arc;

/// The topic names a structure's entries hold, each once, by id, with the
/// number of entries holding it (a name no entry holds any more is forgotten
/// and its id reused).
#[derive(Clone, Debug, Default)]
pub struct TopicIds {
    pub(crate) names: Vec<Option<(Arc<str>, usize)>>,
    pub(crate) ids: HashMap<Arc<str>, u32>,
    free: Vec<u32>,
}

impl TopicIds {
    /// The id of `name`, if an entry holds it.
    pub fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name of `id` ("" for an id no entry holds).
    pub fn name(&self, id: u32) -> &str {
        self.names
            .get(id as usize)
            .and_then(Option::as_ref)
            .map_or("", |(name, _)| &**name)
    }

    /// Every name an entry holds, with how many entries hold it.
    pub fn held(&self) -> impl Iterator<Item = (&str, usize)> {
        self.names.iter().flatten().map(|(name, n)| (&**name, *n))
    }

    /// The shared name of `id` (`None` for an id no entry holds), to keep
    /// beyond a borrow of the table.
    pub fn shared_name(&self, id: u32) -> Option<&Arc<str>> {
        self.names
            .get(id as usize)
            .and_then(Option::as_ref)
            .map(|(name, _)| name)
    }

    /// The id of `name`, counting one more entry holding it.
    pub fn hold(&mut self, name: &str) -> u32 {
        if let Some(id) = self.id(name)
            && let Some(Some((_, n))) = self.names.get_mut(id as usize)
        {
            *n += 1;
            return id;
        }
        let shared: Arc<str> = Arc::from(name);
        let slot = Some((Arc::clone(&shared), 1));
        let id = match self.free.pop() {
            Some(id) => {
                self.names[id as usize] = slot;
                id
            }
            None => {
                self.names.push(slot);
                u32::try_from(self.names.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.ids.insert(shared, id);
        id
    }

    /// One more entry holds `id`, a name held already (an id no entry holds
    /// is left alone).
    pub fn hold_id(&mut self, id: u32) {
        if let Some(Some((_, n))) = self.names.get_mut(id as usize) {
            *n += 1;
        }
    }

    /// One entry fewer holds `id`; the name is forgotten with the last.
    pub fn release(&mut self, id: u32) {
        if let Some(slot) = self.names.get_mut(id as usize)
            && let Some((name, n)) = slot
        {
            *n -= 1;
            if *n == 0 {
                self.ids.remove(&**name);
                *slot = None;
                self.free.push(id);
            }
        }
    }

    /// Every name held, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.ids.keys().map(|name| &**name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_counted_and_reused_after_the_last_release() {
        let mut t = TopicIds::default();
        let a = t.hold("a");
        assert_eq!(t.hold("a"), a);
        let b = t.hold("b");
        t.release(a);
        assert_eq!(t.id("a"), Some(a), "one entry still holds a");
        t.release(a);
        assert_eq!(t.id("a"), None);
        assert_eq!(t.name(a), "");
        assert_eq!(t.hold("c"), a, "a's id is reused");
        assert_eq!((t.name(a), t.name(b)), ("c", "b"));
        assert_eq!(t.names.len(), 2);
    }
}
