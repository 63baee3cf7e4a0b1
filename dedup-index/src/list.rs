//! Intrusive doubly linked lists over the index's per-lane link arrays.
//!
//! Each slot of the index has one [`Link`] per index type ("lane"). The links live in
//! [`Links`], one array per lane indexed by slot. A partition is a [`Head`]: first, last and
//! length. Links are `u32` slot numbers, with [`NIL`] for "no neighbour" and [`UNTRACKED`] for
//! "this lane does not track the slot".

use std::ops::{Index, IndexMut};

/// No neighbour: the end of a list.
pub(crate) const NIL: u32 = u32::MAX;
/// The lane does not track this slot.
pub(crate) const UNTRACKED: u32 = u32::MAX - 1;
/// The largest number of slots, so that every slot number stays below [`UNTRACKED`].
pub(crate) const MAX_SLOTS: usize = (u32::MAX - 1) as usize;

/// The neighbours of one slot in one lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Link {
    pub(crate) const UNTRACKED: Link = Link {
        prev: UNTRACKED,
        next: UNTRACKED,
    };

    pub(crate) fn is_tracked(self) -> bool {
        self.prev != UNTRACKED
    }
}

/// One ordered list: a partition of one index type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) len: u32,
}

impl Head {
    pub(crate) const EMPTY: Head = Head {
        first: NIL,
        last: NIL,
        len: 0,
    };
}

/// One lane (index type) of the links.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lane {
    pub(crate) lane: usize,
}

impl Lane {
    /// Where the link of `slot` in this lane is.
    #[inline]
    pub(crate) fn at(self, slot: u32) -> At {
        At {
            lane: self.lane,
            slot,
        }
    }
}

/// The place of one link: its lane and slot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At {
    lane: usize,
    slot: u32,
}

/// The links of every slot in every lane.
///
/// One vector per lane, indexed by slot: a list walk steps through one dense array, and the
/// lane's array is found without looking at the slot (off the walk's chain of dependent
/// loads). The arrays grow with the slots, one link per lane per new slot, so no growth
/// writes more than it adds (their reallocation of large arrays is a remap, not a copy).
/// Links of slots not in use are [`Link::UNTRACKED`].
#[derive(Debug, Clone)]
pub(crate) struct Links {
    lanes: Vec<Vec<Link>>,
}

impl Links {
    /// No links yet, for `n_lanes` lanes.
    pub(crate) fn new(n_lanes: usize) -> Self {
        Links {
            lanes: vec![Vec::new(); n_lanes],
        }
    }

    /// How many slots have links.
    pub(crate) fn len(&self) -> usize {
        self.lanes.first().map_or(0, Vec::len)
    }

    /// The link at `at`, if that slot has links.
    #[inline]
    pub(crate) fn get(&self, at: At) -> Option<&Link> {
        self.lanes.get(at.lane)?.get(at.slot as usize)
    }

    /// The links of one lane, by slot (empty for a lane that does not exist).
    #[inline]
    pub(crate) fn lane_mut(&mut self, lane: usize) -> &mut [Link] {
        self.lanes.get_mut(lane).map_or(&mut [], Vec::as_mut_slice)
    }

    /// The link at `at`, if that slot has links.
    #[inline]
    pub(crate) fn get_mut(&mut self, at: At) -> Option<&mut Link> {
        self.lanes.get_mut(at.lane)?.get_mut(at.slot as usize)
    }

    /// Makes room for `additional` more slots without moving the links later.
    pub(crate) fn reserve(&mut self, additional: usize) {
        for lane in &mut self.lanes {
            lane.reserve(additional);
        }
    }

    /// Gives links to the slots below `n_slots`.
    #[inline]
    pub(crate) fn ensure(&mut self, n_slots: usize) {
        for lane in &mut self.lanes {
            // One slot more, as every new slot of a load asks: a push, cheaper than `resize`.
            if lane.len() + 1 == n_slots {
                lane.push(Link::UNTRACKED);
            } else if lane.len() < n_slots {
                lane.resize(n_slots, Link::UNTRACKED);
            }
        }
    }

    /// Touches the spare room of every lane for the slots `from..to` (see
    /// [`DedupIndex::touch_ahead`](crate::DedupIndex::touch_ahead)).
    pub(crate) fn touch_spare(&mut self, from: usize, to: usize) {
        for lane in &mut self.lanes {
            touch_spare(lane, from, to, || Link::UNTRACKED);
        }
    }

    /// Adds a lane, untracked for every slot.
    pub(crate) fn add_lane(&mut self) {
        self.lanes.push(vec![Link::UNTRACKED; self.len()]);
    }

    /// Marks every link untracked, keeping the memory.
    pub(crate) fn clear(&mut self) {
        for lane in &mut self.lanes {
            lane.fill(Link::UNTRACKED);
        }
    }

    /// Drops the links of the slots from `n_slots` on (which must be untracked) and gives
    /// back the memory past them.
    pub(crate) fn shrink_to(&mut self, n_slots: usize) {
        for lane in &mut self.lanes {
            lane.truncate(n_slots);
            lane.shrink_to_fit();
        }
    }
}

impl Index<At> for Links {
    type Output = Link;

    #[inline]
    fn index(&self, at: At) -> &Link {
        &self.lanes[at.lane][at.slot as usize]
    }
}

impl IndexMut<At> for Links {
    #[inline]
    fn index_mut(&mut self, at: At) -> &mut Link {
        &mut self.lanes[at.lane][at.slot as usize]
    }
}

/// Sets the `next` link of `slot`; a slot number out of range (only possible if an index type
/// broke its contract) is ignored rather than a panic.
#[inline]
fn set_next(links: &mut Links, lane: Lane, slot: u32, next: u32) {
    if let Some(link) = links.get_mut(lane.at(slot)) {
        link.next = next;
    }
}

/// Sets the `prev` link of `slot`, like [`set_next`].
#[inline]
fn set_prev(links: &mut Links, lane: Lane, slot: u32, prev: u32) {
    if let Some(link) = links.get_mut(lane.at(slot)) {
        link.prev = prev;
    }
}

/// Sets both links of `slot`, like [`set_next`].
#[inline]
fn set(links: &mut Links, lane: Lane, slot: u32, link: Link) {
    if let Some(old) = links.get_mut(lane.at(slot)) {
        *old = link;
    }
}

/// The links of `slot`, [`Link::UNTRACKED`] if out of range.
#[inline]
fn get(links: &Links, lane: Lane, slot: u32) -> Link {
    links.get(lane.at(slot)).copied().unwrap_or(Link::UNTRACKED)
}

/// Whether `slot` names a neighbour (not [`NIL`], not [`UNTRACKED`]).
#[inline]
fn is_slot(slot: u32) -> bool {
    slot < UNTRACKED
}

/// Appends `slot` (not linked in this lane) to the list of `head`.
#[inline]
pub(crate) fn push_back(links: &mut Links, lane: Lane, head: &mut Head, slot: u32) {
    set(
        links,
        lane,
        slot,
        Link {
            prev: head.last,
            next: NIL,
        },
    );
    if is_slot(head.last) {
        set_next(links, lane, head.last, slot);
    } else {
        head.first = slot;
    }
    head.last = slot;
    head.len += 1;
}

/// Prepends `slot` (not linked in this lane) to the list of `head`.
#[inline]
pub(crate) fn push_front(links: &mut Links, lane: Lane, head: &mut Head, slot: u32) {
    set(
        links,
        lane,
        slot,
        Link {
            prev: NIL,
            next: head.first,
        },
    );
    if is_slot(head.first) {
        set_prev(links, lane, head.first, slot);
    } else {
        head.last = slot;
    }
    head.first = slot;
    head.len += 1;
}

/// Links `slot` (not linked in this lane) just before `anchor`, which is in `head`'s list.
#[inline]
pub(crate) fn link_before(links: &mut Links, lane: Lane, head: &mut Head, slot: u32, anchor: u32) {
    let prev = get(links, lane, anchor).prev;
    set(links, lane, slot, Link { prev, next: anchor });
    set_prev(links, lane, anchor, slot);
    if is_slot(prev) {
        set_next(links, lane, prev, slot);
    } else {
        head.first = slot;
    }
    head.len += 1;
}

/// Links `slot` (not linked in this lane) just after `anchor`, which is in `head`'s list.
#[inline]
pub(crate) fn link_after(links: &mut Links, lane: Lane, head: &mut Head, slot: u32, anchor: u32) {
    let next = get(links, lane, anchor).next;
    set(links, lane, slot, Link { prev: anchor, next });
    set_next(links, lane, anchor, slot);
    if is_slot(next) {
        set_prev(links, lane, next, slot);
    } else {
        head.last = slot;
    }
    head.len += 1;
}

/// Unlinks `slot` from `head`'s list and marks it untracked in this lane.
#[inline]
pub(crate) fn unlink(links: &mut Links, lane: Lane, head: &mut Head, slot: u32) {
    let link = get(links, lane, slot);
    unlink_in(links.lane_mut(lane.lane), head, slot, link);
}

/// Unlinks `slot`, whose links are `link`, from `head`'s list in one lane (whose links are
/// `lane`) and marks it untracked there: [`unlink`] with the slot's links already read.
#[inline]
pub(crate) fn unlink_in(lane: &mut [Link], head: &mut Head, slot: u32, link: Link) {
    let Link { prev, next } = link;
    if is_slot(prev) {
        if let Some(prev_link) = lane.get_mut(prev as usize) {
            prev_link.next = next;
        }
    } else {
        head.first = next;
    }
    if is_slot(next) {
        if let Some(next_link) = lane.get_mut(next as usize) {
            next_link.prev = prev;
        }
    } else {
        head.last = prev;
    }
    head.len = head.len.saturating_sub(1);
    if let Some(link) = lane.get_mut(slot as usize) {
        *link = Link::UNTRACKED;
    }
}

/// Writes one element per page of the spare room of `vec` between the elements `from` and
/// `to` (as if its length were that far), so the kernel maps those pages now.
pub(crate) fn touch_spare<E>(vec: &mut Vec<E>, from: usize, to: usize, fill: impl Fn() -> E) {
    const PAGE: usize = 4096;
    let len = vec.len();
    let step = (PAGE / size_of::<E>().max(1)).max(1);
    let spare = vec.spare_capacity_mut();
    let (from, to) = (
        from.saturating_sub(len),
        to.saturating_sub(len).min(spare.len()),
    );
    if let Some(room) = spare.get_mut(from..to) {
        for elem in room.iter_mut().step_by(step) {
            elem.write(fill());
        }
    }
}
