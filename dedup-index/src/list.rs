//! Intrusive doubly linked lists over the dense link array.
//!
//! Each slot of the index has one [`Link`] per index type ("lane"), stored at
//! `slot * stride + lane` in one flat `Vec<Link>`. A partition is a [`Head`]: first, last and
//! length. Links are `u32` slot numbers, with [`NIL`] for "no neighbour" and [`UNTRACKED`] for
//! "this lane does not track the slot".

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

/// Where one lane's links live in the flat array.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lane {
    pub(crate) stride: usize,
    pub(crate) lane: usize,
}

impl Lane {
    #[inline]
    pub(crate) fn at(self, slot: u32) -> usize {
        slot as usize * self.stride + self.lane
    }
}

/// Appends `slot` (not linked in this lane) to the list of `head`.
#[inline]
pub(crate) fn push_back(links: &mut [Link], lane: Lane, head: &mut Head, slot: u32) {
    links[lane.at(slot)] = Link {
        prev: head.last,
        next: NIL,
    };
    if head.last == NIL {
        head.first = slot;
    } else {
        links[lane.at(head.last)].next = slot;
    }
    head.last = slot;
    head.len += 1;
}

/// Prepends `slot` (not linked in this lane) to the list of `head`.
#[inline]
pub(crate) fn push_front(links: &mut [Link], lane: Lane, head: &mut Head, slot: u32) {
    links[lane.at(slot)] = Link {
        prev: NIL,
        next: head.first,
    };
    if head.first == NIL {
        head.last = slot;
    } else {
        links[lane.at(head.first)].prev = slot;
    }
    head.first = slot;
    head.len += 1;
}

/// Links `slot` (not linked in this lane) just before `anchor`, which is in `head`'s list.
#[inline]
pub(crate) fn link_before(links: &mut [Link], lane: Lane, head: &mut Head, slot: u32, anchor: u32) {
    let prev = links[lane.at(anchor)].prev;
    links[lane.at(slot)] = Link { prev, next: anchor };
    links[lane.at(anchor)].prev = slot;
    if prev == NIL {
        head.first = slot;
    } else {
        links[lane.at(prev)].next = slot;
    }
    head.len += 1;
}

/// Links `slot` (not linked in this lane) just after `anchor`, which is in `head`'s list.
#[inline]
pub(crate) fn link_after(links: &mut [Link], lane: Lane, head: &mut Head, slot: u32, anchor: u32) {
    let next = links[lane.at(anchor)].next;
    links[lane.at(slot)] = Link { prev: anchor, next };
    links[lane.at(anchor)].next = slot;
    if next == NIL {
        head.last = slot;
    } else {
        links[lane.at(next)].prev = slot;
    }
    head.len += 1;
}

/// Unlinks `slot` from `head`'s list and marks it untracked in this lane.
#[inline]
pub(crate) fn unlink(links: &mut [Link], lane: Lane, head: &mut Head, slot: u32) {
    let Link { prev, next } = links[lane.at(slot)];
    if prev == NIL {
        head.first = next;
    } else {
        links[lane.at(prev)].next = next;
    }
    if next == NIL {
        head.last = prev;
    } else {
        links[lane.at(next)].prev = prev;
    }
    head.len = head.len.saturating_sub(1);
    links[lane.at(slot)] = Link::UNTRACKED;
}
