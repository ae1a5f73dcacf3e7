//! A listing (of pods, or of the GoCD server's agents) as a shared, persistent snapshot.
//!
//! A list-pods answer used to be a fresh vector of every pod: handing it over cost O(pods),
//! and so did every client's merge of it, at every create-agent. A [`Listing`] is a
//! persistent sorted sequence of chunks, in groups, shared between versions: the API server
//! keeps one per selector up to date as pods change (the GoCD server one of its agents), a
//! list hands out a clone (O(1)), and a client that kept the previous listing asks
//! [`Listing::changed_names`] for the entries that differ, which skips every group and every
//! chunk the two versions share. The first write after a snapshot copies the spine (one
//! entry per group of 16 to 32 chunks), the group and the chunk it lands in, not one entry
//! per chunk of the whole listing.
//!
//! Two listings hold "the same copy" of an entry when they share the same `Arc` — the owner
//! copies an entry on write, so an entry that was not written since is the same allocation.
//! The naive reference is a plain vector of entries in name order ([`Listing::to_vec`],
//! [`Listing::from_pods`]); the tests below check the two agree.

use super::Pod;
use crate::ids::NameHead;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::sync::Arc;

/// Entries per chunk after a split; a chunk splits when it grows past twice this. Writing to
/// a chunk another snapshot shares copies it, touching every entry's reference count: 16
/// costs the fewest cache misses on the x10 day (32 missed 7 % more, 8 missed 1 % more and
/// ran 0.3 % more instructions).
const CHUNK: usize = 16;

/// Chunks per group after a split; a group splits when it grows past twice this. The first
/// write after a snapshot copies the spine (a reference count per group) and the group it
/// lands in (one per chunk): with one flat spine of chunks that copy touched every chunk, a
/// cache line each, about 190 at ten times the day's cluster.
const GROUP: usize = 16;

/// A run of consecutive entries, in name order, shared between listings until written.
type Chunk<T> = Vec<Arc<T>>;

/// Where `name` is in `chunk`, or would go.
fn search<T: Listed>(chunk: &Chunk<T>, name: &str) -> Result<usize, usize> {
    chunk.binary_search_by(|listed| listed.name().cmp(name))
}

/// Binary search over `len` places in name order, `order_at(at)` ordering place `at` against
/// the name looked for: `Ok` where it is, `Err` where it would go.
fn bisect(len: usize, order_at: impl Fn(usize) -> Ordering) -> Result<usize, usize> {
    let (mut low, mut high) = (0, len);
    while low < high {
        let middle = low + (high - low) / 2;
        match order_at(middle) {
            Ordering::Less => low = middle + 1,
            Ordering::Greater => high = middle,
            Ordering::Equal => return Ok(middle),
        }
    }
    Err(low)
}

/// A run of consecutive chunks, with each chunk's last head beside it, so finding a name's
/// chunk reads the group only; shared between listings until written.
struct Group<T> {
    lasts: Vec<NameHead>,
    chunks: Vec<Arc<Chunk<T>>>,
}

/// The groups of one snapshot, with each group's last head beside it.
struct Spine<T> {
    lasts: Vec<NameHead>,
    groups: Vec<Arc<Group<T>>>,
}

impl<T> Clone for Group<T> {
    fn clone(&self) -> Self {
        Group {
            lasts: self.lasts.clone(),
            chunks: self.chunks.clone(),
        }
    }
}

impl<T> Clone for Spine<T> {
    fn clone(&self) -> Self {
        Spine {
            lasts: self.lasts.clone(),
            groups: self.groups.clone(),
        }
    }
}

impl<T> Default for Spine<T> {
    fn default() -> Self {
        Spine {
            lasts: Vec::new(),
            groups: Vec::new(),
        }
    }
}

/// Where `name` belongs among parts in name order whose last heads are `lasts`: the first
/// part whose last name is not below it (else the last part). Each comparison reads `lasts`
/// only, unless two names longer than a head tie on it (then `last_name(at)` is read).
fn part_of<'a>(lasts: &[NameHead], name: &'a str, last_name: impl Fn(usize) -> &'a str) -> usize {
    let head = NameHead::of(name);
    let found = bisect(lasts.len(), |at| {
        lasts[at].order(&head, || (last_name(at), name))
    });
    found
        .unwrap_or_else(|after| after)
        .min(lasts.len().saturating_sub(1))
}

impl<T: Listed> Group<T> {
    /// The chunk a name belongs in.
    fn chunk_of(&self, name: &str) -> usize {
        part_of(&self.lasts, name, |at| self.last_name(at))
    }

    /// The last name of the chunk at `index`.
    fn last_name(&self, index: usize) -> &str {
        let last = self.chunks[index].last();
        last.expect("a listed chunk is never empty").name()
    }

    /// Keep the last head of the chunk at `index` in step after a write to it.
    fn mend_last(&mut self, index: usize) {
        self.lasts[index] = NameHead::of(self.last_name(index));
    }

    /// Split the chunk at `index` if it grew past twice [`CHUNK`].
    fn split_chunk(&mut self, index: usize) {
        if self.chunks[index].len() > 2 * CHUNK {
            let upper = Arc::make_mut(&mut self.chunks[index]).split_off(CHUNK);
            self.chunks.insert(index + 1, Arc::new(upper));
            self.lasts.insert(index + 1, NameHead::of(""));
            self.mend_last(index + 1);
        }
        self.mend_last(index);
    }
}

impl<T: Listed> Spine<T> {
    /// The group a name belongs in.
    fn group_of(&self, name: &str) -> usize {
        part_of(&self.lasts, name, |at| {
            let group = &self.groups[at];
            group.last_name(group.chunks.len() - 1)
        })
    }

    /// Keep the last head of the group at `index` in step after a write to it, and split it
    /// if it grew past twice [`GROUP`] chunks.
    fn mend_group(&mut self, index: usize) {
        if self.groups[index].chunks.len() > 2 * GROUP {
            let group = Arc::make_mut(&mut self.groups[index]);
            let upper = Group {
                lasts: group.lasts.split_off(GROUP),
                chunks: group.chunks.split_off(GROUP),
            };
            self.groups.insert(index + 1, Arc::new(upper));
            self.lasts.insert(index + 1, NameHead::of(""));
            self.mend_last(index + 1);
        }
        self.mend_last(index);
    }

    fn mend_last(&mut self, index: usize) {
        let group = &self.groups[index];
        self.lasts[index] = *group.lasts.last().expect("a listed group is never empty");
    }

    /// The chunk holding `name` or where it would go: group and chunk.
    fn find(&self, name: &str) -> Option<(usize, usize)> {
        let index = self.group_of(name);
        let group = self.groups.get(index)?;
        Some((index, group.chunk_of(name)))
    }
}

/// What a listing holds: entries known by a unique name.
pub trait Listed {
    /// The entry's name (a pod's name, an agent's id).
    fn name(&self) -> &str;
}

impl Listed for Pod {
    fn name(&self) -> &str {
        &self.name
    }
}

/// The pods a list-pods call returns, by name.
pub(crate) type PodList = Listing<Pod>;

/// Entries by name: a sorted sequence of shared chunks. Cloning copies one pointer; a write
/// copies the chunk it lands in (and, once per snapshot, the spine), never the entries.
pub struct Listing<T> {
    spine: Arc<Spine<T>>,
    len: usize,
}

impl<T> Clone for Listing<T> {
    fn clone(&self) -> Self {
        Listing {
            spine: Arc::clone(&self.spine),
            len: self.len,
        }
    }
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            spine: Arc::default(),
            len: 0,
        }
    }
}

impl<T: Listed> Listing<T> {
    /// A listing of these entries (a later entry of the same name replaces an earlier one).
    pub(crate) fn from_pods(entries: impl IntoIterator<Item = Arc<T>>) -> Listing<T> {
        let mut list = Listing::default();
        for entry in entries {
            list.put(entry);
        }
        list
    }

    /// True when both are the same snapshot (clones of one another, nothing written since).
    pub(crate) fn is_same(&self, other: &Listing<T>) -> bool {
        Arc::ptr_eq(&self.spine, &other.spine) && self.len == other.len
    }

    /// How many entries are listed.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The listed entries, in name order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<T>> {
        (self.spine.groups.iter())
            .flat_map(|group| group.chunks.iter())
            .flat_map(|chunk| chunk.iter())
    }

    /// The listed copy of one entry.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<T>> {
        let (group, chunk) = self.spine.find(name)?;
        let chunk = &self.spine.groups[group].chunks[chunk];
        let at = search(chunk, name).ok()?;
        Some(&chunk[at])
    }

    /// The listed entries as a vector, in name order (the naive form of a listing).
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn to_vec(&self) -> Vec<Arc<T>> {
        self.iter().cloned().collect()
    }

    /// List this copy of an entry (replacing any copy of the same name).
    pub(crate) fn put(&mut self, entry: Arc<T>) {
        let spine = Arc::make_mut(&mut self.spine);
        let Some((g, c)) = spine.find(entry.name()) else {
            let head = NameHead::of(entry.name());
            let chunks = vec![Arc::new(vec![entry])];
            let group = Group {
                lasts: vec![head],
                chunks,
            };
            (spine.lasts, spine.groups) = (vec![head], vec![Arc::new(group)]);
            self.len = 1;
            return;
        };
        let group = Arc::make_mut(&mut spine.groups[g]);
        let chunk = Arc::make_mut(&mut group.chunks[c]);
        match search(chunk, entry.name()) {
            // The same name: the heads stay.
            Ok(at) => chunk[at] = entry,
            Err(at) => {
                chunk.insert(at, entry);
                self.len += 1;
                group.split_chunk(c);
                spine.mend_group(g);
            }
        }
    }

    /// Stop listing an entry.
    pub(crate) fn remove(&mut self, name: &str) {
        // Found in the shared snapshot first, so an absent name copies nothing; a copy keeps
        // every place.
        let Some((g, c)) = self.spine.find(name) else {
            return;
        };
        let Ok(at) = search(&self.spine.groups[g].chunks[c], name) else {
            return;
        };
        let spine = Arc::make_mut(&mut self.spine);
        let group = Arc::make_mut(&mut spine.groups[g]);
        let chunk = Arc::make_mut(&mut group.chunks[c]);
        chunk.remove(at);
        self.len -= 1;
        if chunk.is_empty() {
            group.lasts.remove(c);
            group.chunks.remove(c);
        } else {
            group.mend_last(c);
        }
        if group.chunks.is_empty() {
            spine.lasts.remove(g);
            spine.groups.remove(g);
        } else {
            spine.mend_last(g);
        }
    }

    /// The names whose listed copy differs between `earlier` and `self` — added, removed or
    /// replaced by another copy — in name order. Chunks the two listings share are skipped
    /// whole, so the cost follows the chunks written since, not the size of the listings;
    /// inside a written chunk, an entry both sides share is passed without reading its name.
    pub(crate) fn changed_names<'a>(&'a self, earlier: &'a Listing<T>) -> Vec<&'a str> {
        let mut changed = Vec::new();
        let (mut old, mut new) = (Cursor::new(&earlier.spine), Cursor::new(&self.spine));
        loop {
            // Skip what both share: whole groups, then whole chunks.
            loop {
                if old.at_group_start() && new.at_group_start() && old.same_group(&new) {
                    old.skip_group();
                    new.skip_group();
                } else if old.at_chunk_start() && new.at_chunk_start() && old.same_chunk(&new) {
                    old.skip_chunk();
                    new.skip_chunk();
                } else {
                    break;
                }
            }
            let order = match (old.peek(), new.peek()) {
                (None, None) => return changed,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                // The same copy: the same name, unchanged.
                (Some(a), Some(b)) if Arc::ptr_eq(a, b) => Ordering::Equal,
                (Some(a), Some(b)) => {
                    let order = a.name().cmp(b.name());
                    if order == Ordering::Equal {
                        changed.push(a.name());
                    }
                    order
                }
            };
            match order {
                Ordering::Less => {
                    changed.extend(old.peek().map(|gone| gone.name()));
                    old.step();
                }
                Ordering::Greater => {
                    changed.extend(new.peek().map(|added| added.name()));
                    new.step();
                }
                Ordering::Equal => {
                    old.step();
                    new.step();
                }
            }
        }
    }
}

/// A position in a listing's groups and chunks.
struct Cursor<'a, T> {
    groups: &'a [Arc<Group<T>>],
    group: usize,
    chunk: usize,
    entry: usize,
}

impl<'a, T> Cursor<'a, T> {
    fn new(spine: &'a Spine<T>) -> Cursor<'a, T> {
        Cursor {
            groups: &spine.groups,
            group: 0,
            chunk: 0,
            entry: 0,
        }
    }

    fn at_group_start(&self) -> bool {
        self.chunk == 0 && self.at_chunk_start()
    }

    fn at_chunk_start(&self) -> bool {
        self.entry == 0 && self.group < self.groups.len()
    }

    fn same_group(&self, other: &Cursor<'_, T>) -> bool {
        Arc::ptr_eq(&self.groups[self.group], &other.groups[other.group])
    }

    fn this_chunk(&self) -> &'a Arc<Chunk<T>> {
        &self.groups[self.group].chunks[self.chunk]
    }

    fn same_chunk(&self, other: &Cursor<'_, T>) -> bool {
        Arc::ptr_eq(self.this_chunk(), other.this_chunk())
    }

    fn skip_group(&mut self) {
        (self.group, self.chunk, self.entry) = (self.group + 1, 0, 0);
    }

    fn skip_chunk(&mut self) {
        (self.chunk, self.entry) = (self.chunk + 1, 0);
        if self.chunk == self.groups[self.group].chunks.len() {
            self.skip_group();
        }
    }

    fn peek(&self) -> Option<&'a Arc<T>> {
        (self.group < self.groups.len()).then(|| &self.this_chunk()[self.entry])
    }

    fn step(&mut self) {
        self.entry += 1;
        if self.entry == self.this_chunk().len() {
            self.skip_chunk();
        }
    }
}

/// Equal listings list the same entries with equal contents (whether or not the copies are
/// shared).
impl<T: Listed + PartialEq> PartialEq for Listing<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl<T: Listed + Eq> Eq for Listing<T> {}

impl<T: Listed + std::fmt::Debug> std::fmt::Debug for Listing<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Written as the list of entries it holds, in name order.
impl<T: Listed + Serialize> Serialize for Listing<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, T: Listed + Deserialize<'de>> Deserialize<'de> for Listing<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Arc<T>>::deserialize(deserializer).map(Listing::from_pods)
    }
}

impl<T: Listed> FromIterator<Arc<T>> for Listing<T> {
    fn from_iter<I: IntoIterator<Item = Arc<T>>>(entries: I) -> Self {
        Listing::from_pods(entries)
    }
}

#[cfg(test)]
mod tests;
