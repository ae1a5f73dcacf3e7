//! A name as an ordered map key, compared eight bytes at a time.
//!
//! Pod and agent names share long prefixes (`k8s-ea-<process>-`), so ordering them byte by
//! byte through `memcmp` cost a library call per comparison, about ten per map lookup — and
//! the GoCD server looks an agent up by name at every ping. [`NameKey`] orders exactly as
//! its text does (so `Borrow<str>` lookups stay valid and iteration order is unchanged) but
//! keeps the name's first 24 bytes as three words, made once per key, and compares those
//! inline. The reference is `str`'s own order; the tests below
//! check the two agree on random names.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// Bytes of a name kept as big-endian words for comparing.
const HEAD_BYTES: usize = 24;

/// A shared name, ordered as its text.
#[derive(Clone)]
pub(crate) struct NameKey {
    /// The first `HEAD_BYTES` bytes, zero-padded, as big-endian words: they compare as the
    /// bytes do, so most comparisons end within these three words.
    head: [u64; 3],
    name: Arc<str>,
}

impl NameKey {
    /// The key of `name` (shares the allocation).
    pub(crate) fn new(name: Arc<str>) -> NameKey {
        NameKey {
            head: head_words(&name),
            name,
        }
    }

    /// True when this key is `probe`'s name. For a name that fits in the head (pod names
    /// do) only the key's own words and the name's length are read, never the shared text:
    /// in a large run that text is a cache miss away.
    pub(crate) fn is(&self, probe: &Probe<'_>) -> bool {
        same_name((&self.head, &self.name), (&probe.head, probe.name))
    }

    /// The name.
    pub(crate) fn as_str(&self) -> &str {
        &self.name
    }

    /// The shared name itself.
    pub(crate) fn shared(&self) -> &Arc<str> {
        &self.name
    }
}

/// The first `HEAD_BYTES` bytes of `name`, zero-padded, as big-endian words.
fn head_words(name: &str) -> [u64; 3] {
    let mut padded = [0u8; HEAD_BYTES];
    let bytes = name.as_bytes();
    let kept = bytes.len().min(HEAD_BYTES);
    padded[..kept].copy_from_slice(&bytes[..kept]);
    let word = |at: usize| u64::from_be_bytes(padded[at..at + 8].try_into().expect("8"));
    [word(0), word(8), word(16)]
}

/// Two names, each with its head words, are equal: equal heads and equal lengths within the
/// head are equal names, so the text is read only past the head.
fn same_name((head_a, a): (&[u64; 3], &str), (head_b, b): (&[u64; 3], &str)) -> bool {
    head_a == head_b && a.len() == b.len() && (a.len() <= HEAD_BYTES || a == b)
}

/// A name's head words and length, kept beside a name that lives elsewhere (a listing keeps
/// one per entry, in its chunk): two heads order as their names do, and the names' text is
/// read only when both are longer than the head and tie on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NameHead {
    words: [u64; 3],
    len: usize,
}

impl NameHead {
    /// The head of `name`.
    pub(crate) fn of(name: &str) -> NameHead {
        NameHead {
            words: head_words(name),
            len: name.len(),
        }
    }

    /// How the name this head is of orders against `other`'s; `texts` gives the two names
    /// and is called only when the heads cannot tell.
    pub(crate) fn order<'a>(
        &self,
        other: &NameHead,
        texts: impl FnOnce() -> (&'a str, &'a str),
    ) -> Ordering {
        order_by_head((&self.words, self.len), (&other.words, other.len), || {
            let (a, b) = texts();
            (a.as_bytes(), b.as_bytes())
        })
    }
}

/// Byte order (`<[u8]>::cmp`) of two names given their head words and lengths: zero padding
/// keeps the words' order the bytes' order up to the shorter name's end; equal heads leave
/// the bytes after the head (read through `texts`, only when a name is longer than the
/// head), then the lengths (two names that differ only by trailing zero bytes have equal
/// heads).
fn order_by_head<'a>(
    (head_a, len_a): (&[u64; 3], usize),
    (head_b, len_b): (&[u64; 3], usize),
    texts: impl FnOnce() -> (&'a [u8], &'a [u8]),
) -> Ordering {
    head_a.cmp(head_b).then_with(|| {
        if len_a <= HEAD_BYTES && len_b <= HEAD_BYTES {
            // Both names fit in their heads (pod names do): equal heads leave the lengths,
            // with no library call to compare two empty tails.
            return len_a.cmp(&len_b);
        }
        let (a, b) = texts();
        tail(a).cmp(tail(b)).then(len_a.cmp(&len_b))
    })
}

/// A name looked for among keys ([`NameKey::is`]), its head words made once per lookup.
pub(crate) struct Probe<'a> {
    head: [u64; 3],
    name: &'a str,
}

impl<'a> Probe<'a> {
    /// The probe for `name`.
    pub(crate) fn new(name: &'a str) -> Probe<'a> {
        Probe {
            head: head_words(name),
            name,
        }
    }
}

/// The bytes of a name after its head.
fn tail(name: &[u8]) -> &[u8] {
    &name[name.len().min(HEAD_BYTES)..]
}

impl From<&str> for NameKey {
    fn from(name: &str) -> NameKey {
        NameKey::new(Arc::from(name))
    }
}

impl Borrow<str> for NameKey {
    fn borrow(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for NameKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.name, f)
    }
}

impl PartialEq for NameKey {
    fn eq(&self, other: &Self) -> bool {
        same_name((&self.head, &self.name), (&other.head, &other.name))
    }
}

impl Eq for NameKey {}

impl PartialOrd for NameKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for NameKey {
    /// Byte order (`<[u8]>::cmp`), from the heads where they tell ([`order_by_head`]).
    fn cmp(&self, other: &Self) -> Ordering {
        order_by_head(
            (&self.head, self.name.len()),
            (&other.head, other.name.len()),
            || (self.name.as_bytes(), other.name.as_bytes()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{NameHead, NameKey, Probe};
    use std::collections::{BTreeMap, BTreeSet};

    use crate::ids::TestStream as Stream;

    /// A name from a small alphabet with a common prefix, so that most pairs share many
    /// bytes and differ anywhere, including in length only.
    fn name(random: &mut Stream) -> String {
        let prefix = ["", "k8s-ea-", "k8s-ea-0a1b2c3d-", "k8s-ea-0a1b2c3d-00"];
        let mut text = prefix[random.below(4) as usize].to_owned();
        for _ in 0..random.below(20) {
            text.push(['0', '1', '9', 'a', '-', 'é', '\u{7f}', '\0'][random.below(8) as usize]);
        }
        text
    }

    /// `NameKey::is` answers as text equality, on names of every length around the head:
    /// against the same text, a random one, and the text with its last character dropped or
    /// one more added (equal heads, different lengths or tails).
    #[test]
    fn a_probe_is_a_key_exactly_when_the_texts_are_equal() {
        let mut random = Stream(0x2545_f491_4f6c_dd1d);
        let mut equal = 0;
        for _ in 0..50_000 {
            let a = name(&mut random);
            let b = match random.below(4) {
                0 => a.clone(),
                1 => name(&mut random),
                2 => a
                    .chars()
                    .take(a.chars().count().saturating_sub(1))
                    .collect(),
                _ => format!("{a}\0"),
            };
            let key = NameKey::from(a.as_str());
            assert_eq!(key.is(&Probe::new(&b)), a == b, "{a:?} {b:?}");
            equal += usize::from(a == b);
        }
        assert!(equal > 10_000, "the names repeated");
    }

    #[test]
    fn keys_order_as_their_text_on_random_names() {
        let mut random = Stream(0x9e37_79b9_7f4a_7c15);
        for _ in 0..50_000 {
            let (a, b) = (name(&mut random), name(&mut random));
            let want = a.as_bytes().cmp(b.as_bytes());
            let (x, y) = (NameKey::from(a.as_str()), NameKey::from(b.as_str()));
            assert_eq!(x.cmp(&y), want, "{a:?} vs {b:?}");
            assert_eq!(x == y, a == b);
            assert_eq!(want, a.cmp(&b), "byte order is str's order");
        }
    }

    /// Heads order as their names, and read the names only when a name is longer than the
    /// head: pod names never are, so a listing's search never leaves its chunk.
    #[test]
    fn heads_order_as_their_text_and_read_it_only_past_the_head() {
        let mut random = Stream(0x6a09_e667_f3bc_c908);
        let (mut read_texts, mut short_pairs) = (0, 0);
        for _ in 0..50_000 {
            let a = name(&mut random);
            // Equal texts, texts one byte longer, and unrelated ones.
            let b = match random.below(3) {
                0 => a.clone(),
                1 => format!("{a}0"),
                _ => name(&mut random),
            };
            let read = std::cell::Cell::new(false);
            let order = NameHead::of(&a).order(&NameHead::of(&b), || {
                read.set(true);
                (a.as_str(), b.as_str())
            });
            assert_eq!(order, a.as_bytes().cmp(b.as_bytes()), "{a:?} vs {b:?}");
            if a.len() <= 24 && b.len() <= 24 {
                assert!(!read.get(), "{a:?} and {b:?} fit their heads");
                short_pairs += 1;
            }
            read_texts += usize::from(read.get());
        }
        assert!(
            short_pairs > 5_000 && read_texts > 1_000,
            "both cases came up"
        );
    }

    #[test]
    fn a_map_by_key_iterates_and_finds_as_a_map_by_string() {
        let mut random = Stream(0x2545_f491_4f6c_dd1d);
        let mut by_key = BTreeMap::new();
        let mut by_text = BTreeMap::new();
        for step in 0..5_000u32 {
            let text = name(&mut random);
            if random.below(3) == 0 {
                assert_eq!(by_key.remove(text.as_str()), by_text.remove(&text));
            } else {
                by_key.insert(NameKey::from(text.as_str()), step);
                by_text.insert(text.clone(), step);
            }
            let probe = name(&mut random);
            assert_eq!(
                by_key.get(&NameKey::from(probe.as_str())),
                by_text.get(&probe)
            );
            assert_eq!(by_key.get(probe.as_str()), by_text.get(&probe));
        }
        let keys: Vec<&str> = by_key.keys().map(NameKey::as_str).collect();
        let texts: Vec<&str> = by_text.keys().map(String::as_str).collect();
        assert_eq!(keys, texts);
        assert!(keys.iter().collect::<BTreeSet<_>>().len() > 500);
    }
}
