//! Group names as map keys: one shared copy per name, compared eight bytes
//! at a time.
//!
//! The per-group maps (the commit follower's view, the checkpoint store, the
//! latency series) are searched by group name several times per group in a
//! round. `str`'s order calls the C library's `memcmp`, and musl's, in the
//! static binary we ship, compares one byte per step: with 100,000 names
//! sharing a long prefix (`<team>-<service>-...`) it was about 30 % of a first
//! round's CPU (docs/benchmarks.md, "Measurements behind the
//! design"). [`Name`] orders exactly as `str` does, with a comparison that
//! reads eight bytes per step in plain Rust.
//!
//! A map keyed by [`Name`] is searched with [`by_name`]: `map.get(by_name(&g))`
//! for `g: &str`. [`Name`] does not borrow as `str`, so no search of such a
//! map falls back to `memcmp` by accident.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// `a` against `b` in byte order (the order of `str`), eight bytes a step:
/// a big-endian word compares as its bytes do one by one.
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (a, b, lengths) = (&a[..n], &b[..n], a.len().cmp(&b.len()));
    if n < 8 {
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        return lengths;
    }
    let mut i = 0;
    while i + 8 <= n {
        let (x, y) = (word(a, i), word(b, i));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    if i < n {
        // The last word, overlapping bytes already found equal.
        let (x, y) = (word(a, n - 8), word(b, n - 8));
        if x != y {
            return x.cmp(&y);
        }
    }
    lengths
}

/// The eight bytes of `s` from `at` as a big-endian word.
fn word(s: &[u8], at: usize) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&s[at..at + 8]);
    u64::from_be_bytes(w)
}

/// A name shared by every map that holds it, ordered as `str` is (see the
/// module's docs).
#[derive(Clone, Debug)]
pub struct Name(Arc<str>);

impl Name {
    /// A new copy of `name`.
    pub fn new(name: &str) -> Self {
        Name(Arc::from(name))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is `name` (compared as [`Name`]s are).
    pub fn is(&self, name: &str) -> bool {
        self.0.len() == name.len() && compare_bytes(self.0.as_bytes(), name.as_bytes()).is_eq()
    }

    /// The shared text itself (for holders that keep `Arc<str>`).
    pub fn shared(&self) -> &Arc<str> {
        &self.0
    }
}

impl From<Arc<str>> for Name {
    fn from(name: Arc<str>) -> Self {
        Name(name)
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_bytes(self.0.as_bytes(), other.0.as_bytes())
    }
}

/// What a map keyed by [`Name`] is searched with: a [`Name`] or a `&str`
/// (through [`by_name`]), ordered as `str` is.
pub trait NameKey {
    /// The name as text.
    fn key_str(&self) -> &str;
}

impl NameKey for Name {
    fn key_str(&self) -> &str {
        &self.0
    }
}

impl NameKey for &str {
    fn key_str(&self) -> &str {
        self
    }
}

impl PartialEq for dyn NameKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for dyn NameKey + '_ {}

impl PartialOrd for dyn NameKey + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn NameKey + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_bytes(self.key_str().as_bytes(), other.key_str().as_bytes())
    }
}

impl<'a> Borrow<dyn NameKey + 'a> for Name {
    fn borrow(&self) -> &(dyn NameKey + 'a) {
        self
    }
}

/// `name` as the key a map of [`Name`]s is searched with.
pub fn by_name<'a, 'n>(name: &'a &'n str) -> &'a (dyn NameKey + 'n) {
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Names with long shared prefixes and every length around a word's.
    fn names() -> impl Strategy<Value = Vec<String>> {
        let byte = prop_oneof![Just('a'), Just('b'), Just('\u{7f}'), Just('é'), Just('0')];
        let name = (0usize..3, proptest::collection::vec(byte, 0..20)).prop_map(|(p, tail)| {
            let prefix = ["", "team-payments-consumer-", "team-payments-"][p];
            let mut s = prefix.to_string();
            s.extend(tail);
            s
        });
        proptest::collection::vec(name, 1..40)
    }

    proptest! {
        #[test]
        fn names_order_as_str_does(names in names()) {
            for a in &names {
                for b in &names {
                    let (x, y) = (Name::new(a), Name::new(b));
                    prop_assert_eq!(x.cmp(&y), a.as_str().cmp(b.as_str()), "{:?} {:?}", a, b);
                    prop_assert_eq!(x == y, a == b);
                }
            }
        }

        #[test]
        fn a_map_of_names_is_found_and_iterated_as_a_map_of_str(names in names()) {
            let by_str: BTreeMap<&str, usize> =
                names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
            let by_names: BTreeMap<Name, usize> =
                names.iter().enumerate().map(|(i, n)| (Name::new(n), i)).collect();
            let order: Vec<(&str, usize)> = by_names.iter().map(|(n, i)| (n.as_str(), *i)).collect();
            prop_assert_eq!(order, by_str.iter().map(|(n, i)| (*n, *i)).collect::<Vec<_>>());
            for n in &names {
                let n = n.as_str();
                prop_assert_eq!(by_names.get(by_name(&n)), by_str.get(n));
                let longer = format!("{n}a");
                prop_assert_eq!(by_names.get(by_name(&longer.as_str())), by_str.get(longer.as_str()));
            }
        }
    }

    #[test]
    fn words_and_their_remainders_compare_by_their_first_different_byte() {
        let cases = [
            ("", "", Ordering::Equal),
            ("", "a", Ordering::Less),
            ("abcdefgh", "abcdefgh", Ordering::Equal),
            ("abcdefgh", "abcdefgi", Ordering::Less),
            ("abcdefghZ", "abcdefgha", Ordering::Less),
            ("bbcdefgh", "abcdefghij", Ordering::Greater),
            ("abcdefghijklmnop", "abcdefghijklmnopq", Ordering::Less),
            ("abcdefgh\u{7f}", "abcdefgh\u{80}", Ordering::Less),
            ("abcdefghijk", "abcdefghijl", Ordering::Less),
            ("abcdefghi", "abcdefghi", Ordering::Equal),
            ("abcdefghij", "abcdefghi", Ordering::Greater),
            ("abcdefg", "abcdefgh", Ordering::Less),
        ];
        for (a, b, want) in cases {
            assert_eq!(
                compare_bytes(a.as_bytes(), b.as_bytes()),
                want,
                "{a:?} {b:?}"
            );
            assert_eq!(compare_bytes(b.as_bytes(), a.as_bytes()), want.reverse());
            assert_eq!(a.cmp(b), want, "the case itself is str's order");
        }
    }
}
