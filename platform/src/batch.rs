//! Batch programming: many route, address, nexthop and rule changes in one pipelined stream.
//!
//! Requests are packed many per `sendmsg`: the kernel handles each message of a send in
//! turn, inside the call, and answers a refused one with an error (errno and extended-ack
//! message) whatever its flags. So the requests ask for no acknowledgement of their own: the
//! send ends with an `NLMSG_NOOP` that does (`NLM_F_ACK`), and when its ack arrives every
//! error of the send has arrived before it, matched back to its item by sequence number; the
//! other items were applied. One read per send instead of one per item, and no ack for the
//! kernel to build per item.
//!
//! The kernel goes on with the next message of a send after a refused one. To stop exactly at
//! the first failure while still packing many requests per send, a batch can undo what the
//! kernel applied after the failing item in the same send ([`Batch::undo_past_failure`]): an
//! added route or nexthop is deleted again, a deleted IPv4 route added back from the bytes the
//! kernel echoed of it (`NLM_F_ECHO`), every attribute included. Items that cannot be undone
//! exactly (replaces, addresses, IPv6 deletes, nexthop deletes, rules) only ever start a send.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::addr::Address;
use crate::error::{Error, KernelError, Result};
use crate::nexthop::Nexthop;
use crate::platform::{DUMP_RCVBUF, Platform};
use crate::route::{Family, RTMSG_LEN, Route};
use crate::rule::Rule;
use crate::socket::NlSocket;
use crate::types::RouteType;
use crate::wire::{self, Msgs};

/// `NLM_F_ECHO`: the kernel also sends the requester its notification of the change.
const NLM_F_ECHO: u16 = 0x8;

/// What to do with an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// Add; fails with EEXIST if it exists (`NLM_F_CREATE | NLM_F_EXCL`).
    Add,
    /// Add or replace (`NLM_F_CREATE | NLM_F_REPLACE`).
    Replace,
    /// Delete; fails (ESRCH / EADDRNOTAVAIL) if it does not exist.
    Delete,
    /// Change what exists; fails if it does not (`NLM_F_REPLACE`; `ip route change`,
    /// `ip addr change`).
    Change,
    /// Add after the routes of the same destination, another route even when one with the
    /// same identity exists, as IPv6 multipath needs (`NLM_F_CREATE | NLM_F_APPEND`;
    /// `ip route append`).
    Append,
    /// Add before the routes of the same destination (`NLM_F_CREATE`; `ip route prepend`).
    Prepend,
}

/// One change of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Item {
    /// A route change.
    Route(Op, Route),
    /// An address change.
    Address(Op, Address),
    /// A nexthop object change (a delete needs only the id).
    Nexthop(Op, Nexthop),
    /// A routing policy rule change: [`Op::Add`] or [`Op::Delete`] (the kernel has no other
    /// rule change; the other ops are sent with their flags, which it ignores: an add).
    Rule(Op, Rule),
}

/// One item the kernel refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// The item's position in the batch (0-based).
    pub index: usize,
    /// The item.
    pub item: Item,
    /// The kernel's error and extended-ack message.
    pub error: KernelError,
}

/// What a batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Items the kernel acknowledged.
    pub n_ok: usize,
    /// Items the kernel refused, in batch order.
    pub failures: Vec<Failure>,
    /// Items not applied because the batch stopped at a failure: never sent, or (with
    /// [`Batch::undo_past_failure`]) applied and then undone.
    pub n_skipped: usize,
    /// Of [`Report::n_skipped`], the items the kernel had applied and that were undone.
    pub n_undone: usize,
    /// Undo requests the kernel refused, with the batch's item: the item stays applied (it
    /// is counted neither in [`Report::n_ok`] nor in [`Report::n_skipped`]).
    pub undo_failures: Vec<Failure>,
    /// Number of `sendmsg` calls (undo sends included).
    pub n_sends: usize,
    /// Items never sent because the batch was cancelled ([`Batch::cancel_on`]): the last
    /// ones, from position `items - n_cancelled` on. Everything before them was sent and is
    /// counted above.
    pub n_cancelled: usize,
}

impl Report {
    /// True when every item was applied.
    pub fn is_success(&self) -> bool {
        self.failures.is_empty()
            && self.n_skipped == 0
            && self.undo_failures.is_empty()
            && self.n_cancelled == 0
    }
}

/// A batch of changes: `platform.batch().add_route(r).execute()`.
#[derive(Debug)]
#[must_use = "a batch does nothing until executed"]
pub struct Batch<'a> {
    platform: &'a Platform,
    items: Vec<Item>,
    stop_on_error: bool,
    undo: bool,
    per_send: usize,
    cancel: Option<Arc<AtomicBool>>,
}

impl Platform {
    /// Starts a batch.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            platform: self,
            items: Vec::new(),
            stop_on_error: false,
            undo: false,
            per_send: 256,
            cancel: None,
        }
    }
}

/// The most receive buffer a batch asks for its answers (32 MiB: 32k requests per send, or
/// 16k when undoing); a larger `per_send` is cut to what fits.
const MAX_BATCH_RCVBUF: usize = 32 << 20;

impl Batch<'_> {
    /// Adds one item.
    pub fn push(mut self, item: Item) -> Self {
        self.items.push(item);
        self
    }

    /// Adds many items.
    pub fn extend(mut self, items: impl IntoIterator<Item = Item>) -> Self {
        self.items.extend(items);
        self
    }

    /// Adds a route (fails if it exists).
    pub fn add_route(self, route: Route) -> Self {
        self.push(Item::Route(Op::Add, route))
    }

    /// Adds or replaces a route.
    pub fn replace_route(self, route: Route) -> Self {
        self.push(Item::Route(Op::Replace, route))
    }

    /// Deletes a route.
    pub fn delete_route(self, route: Route) -> Self {
        self.push(Item::Route(Op::Delete, route))
    }

    /// Adds an address (fails if it exists).
    pub fn add_address(self, addr: Address) -> Self {
        self.push(Item::Address(Op::Add, addr))
    }

    /// Adds or replaces an address.
    pub fn replace_address(self, addr: Address) -> Self {
        self.push(Item::Address(Op::Replace, addr))
    }

    /// Deletes an address.
    pub fn delete_address(self, addr: Address) -> Self {
        self.push(Item::Address(Op::Delete, addr))
    }

    /// Adds a nexthop object (fails if its id exists).
    pub fn add_nexthop(self, nexthop: Nexthop) -> Self {
        self.push(Item::Nexthop(Op::Add, nexthop))
    }

    /// Deletes a nexthop object, and with it the routes using it.
    pub fn delete_nexthop(self, id: u32) -> Self {
        self.push(Item::Nexthop(Op::Delete, Nexthop::new(id)))
    }

    /// Adds a routing policy rule (fails if the same rule exists).
    pub fn add_rule(self, rule: Rule) -> Self {
        self.push(Item::Rule(Op::Add, rule))
    }

    /// Deletes the first rule that agrees with everything `rule` sets.
    pub fn delete_rule(self, rule: Rule) -> Self {
        self.push(Item::Rule(Op::Delete, rule))
    }

    /// Stop at the first failure (default: go on and report every failure).
    ///
    /// The kernel applies every message of one send, so the items packed in the same send
    /// as the failing one are still applied; no further send is made, and the items not
    /// sent are counted in [`Report::n_skipped`]. For an exact stop, add
    /// [`Batch::undo_past_failure`] (or send one item per send with `per_send(1)`, slower).
    pub fn stop_on_error(mut self, stop: bool) -> Self {
        self.stop_on_error = stop;
        self
    }

    /// With [`Batch::stop_on_error`]: stop exactly at the first failure, as if every item
    /// had its own send, yet still pack many per send. What the kernel applied after the
    /// failing item in the same send is undone (an added route deleted, a deleted IPv4 route
    /// added back from the kernel's echo of it), in reverse order, and counted in
    /// [`Report::n_undone`]; an undo the kernel refuses is in [`Report::undo_failures`].
    /// Failures after the first one in its send are not reported (those items count as not
    /// applied). Other processes may see the undone changes come and go.
    ///
    /// A deleted route is added back from the bytes of the kernel's echo, so it comes back
    /// with every attribute the kernel reported (on its nexthop object alone when it had
    /// one). Replaces, address changes, IPv6 route deletes, nexthop deletes and rule changes
    /// cannot be undone exactly: each of them starts a new send, so nothing before it in a send can
    /// fail after it was applied.
    pub fn undo_past_failure(mut self, undo: bool) -> Self {
        self.undo = undo;
        self
    }

    /// Stop before the next send once `flag` is set (by a signal handler, say): the send in
    /// flight is finished (its answers read, and with [`Batch::undo_past_failure`] what
    /// followed a failure undone), so the state is that of a batch made of the items sent so
    /// far; the others are counted in [`Report::n_cancelled`].
    pub fn cancel_on(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// How many requests go in one `sendmsg` (default 256; 100 to 1000 is the sweet spot).
    pub fn per_send(mut self, n: usize) -> Self {
        self.per_send = n.max(1);
        self
    }

    /// Sends everything and collects the acknowledgements.
    ///
    /// Errors of the batch as a whole (the socket failed, acks were lost to a receive
    /// buffer overflow, no answer in time) come back as `Err`; refusals of single items are
    /// in the [`Report`].
    #[tracing::instrument(level = "debug", skip(self), fields(n_items = self.items.len()))]
    pub fn execute(self) -> Result<Report> {
        let undo = self.undo && self.stop_on_error;
        // An answer (an error; an echo for an undoable delete, which can also fail) takes
        // about 1 KiB of receive buffer until read: make room for a send's answers, and never
        // send more requests at once than the buffer holds answers for.
        let answer_bytes = if undo { 2048 } else { 1024 };
        let mut sock = self.platform.lock();
        let wanted = self
            .per_send
            .saturating_mul(answer_bytes)
            .min(MAX_BATCH_RCVBUF);
        let rcvbuf = if wanted > DUMP_RCVBUF {
            sock.set_rcvbuf(wanted)
        } else {
            self.platform.rcvbuf()
        };
        let per_send = self.per_send.min((rcvbuf.effective / answer_bytes).max(1));
        let result = self.run(&mut sock, per_send, undo);
        if wanted > DUMP_RCVBUF {
            // Back to the size dumps want (see `DUMP_RCVBUF`).
            sock.set_rcvbuf(DUMP_RCVBUF);
        }
        result
    }

    /// The sends of [`execute`](Self::execute), `per_send` items each.
    fn run(&self, sock: &mut NlSocket, per_send: usize, undo: bool) -> Result<Report> {
        let mut report = Report::default();
        let mut buf = Vec::with_capacity(per_send * 96);
        let mut answers = Vec::with_capacity(per_send);
        let mut ack_buf = vec![0u8; ACK_BUF];
        let mut index = 0;
        while index < self.items.len() {
            if self
                .cancel
                .as_ref()
                .is_some_and(|flag| flag.load(Ordering::Relaxed))
            {
                tracing::debug!(index, "batch cancelled");
                report.n_cancelled = self.items.len() - index;
                break;
            }
            let mut chunk_end = (index + per_send).min(self.items.len());
            if undo {
                // What cannot be undone only starts a send.
                chunk_end = (index + 1..chunk_end)
                    .find(|&i| !undoable(&self.items[i]))
                    .unwrap_or(chunk_end);
            }
            let chunk = &self.items[index..chunk_end];
            let base = sock.next_seq();
            buf.clear();
            for (offset, item) in chunk.iter().enumerate() {
                let seq = base.wrapping_add(offset as u32);
                let echo = undo && matches!(item, Item::Route(Op::Delete, _)) && undoable(item);
                emit_item(item, &mut buf, seq, if echo { NLM_F_ECHO } else { 0 });
            }
            emit_end(&mut buf, base.wrapping_add(chunk.len() as u32));
            // Keep later sequence numbers clear of this chunk's (and its end marker's).
            sock.skip_seq(chunk.len() as u32 + 1);
            sock.send(&buf)?;
            report.n_sends += 1;
            answers.clear();
            answers.resize_with(chunk.len(), Answer::default);
            collect_answers(sock, base, &mut answers, &mut ack_buf)?;

            // The first refused item of the send, when the batch stops there.
            let cut = if self.stop_on_error {
                answers
                    .iter()
                    .position(|a| matches!(a.outcome, Some(Err(_))))
            } else {
                None
            };
            let counted = cut.filter(|_| undo).map_or(chunk.len(), |cut| cut + 1);
            for (offset, answer) in answers.iter_mut().enumerate().take(counted) {
                match answer.outcome.take() {
                    Some(Ok(())) => report.n_ok += 1,
                    Some(Err(error)) => {
                        let item_index = index + offset;
                        tracing::debug!(item_index, %error, "batch item refused");
                        report.failures.push(Failure {
                            index: item_index,
                            item: self.items[item_index].clone(),
                            error,
                        });
                    }
                    None => {}
                }
            }
            if let Some(cut) = cut {
                if undo {
                    self.undo_after(sock, &mut buf, index, cut, &mut answers, &mut report)?;
                    index += cut + 1;
                } else {
                    index = chunk_end;
                }
                // An item whose undo failed stays applied: not skipped.
                report.n_skipped = self.items.len() - index - report.undo_failures.len();
                break;
            }
            index = chunk_end;
        }
        report.failures.sort_by_key(|failure| failure.index);
        Ok(report)
    }

    /// Undoes, in reverse order, what the kernel applied of the send starting at item `index`
    /// after its item `index + cut`.
    fn undo_after(
        &self,
        sock: &mut NlSocket,
        buf: &mut Vec<u8>,
        index: usize,
        cut: usize,
        answers: &mut [Answer],
        report: &mut Report,
    ) -> Result<()> {
        let mut undone = Vec::new();
        buf.clear();
        let base = sock.next_seq();
        for offset in (cut + 1..answers.len()).rev() {
            let answer = &mut answers[offset];
            if !matches!(answer.outcome, Some(Ok(()))) {
                continue;
            }
            let seq = base.wrapping_add(undone.len() as u32);
            match (&self.items[index + offset], answer.echo.take()) {
                (Item::Route(Op::Add, route), _) => {
                    emit_item(&Item::Route(Op::Delete, route.clone()), buf, seq, 0);
                }
                (Item::Route(Op::Delete, _), Some(deleted)) => {
                    emit_restore(&deleted, buf, seq);
                }
                (Item::Nexthop(Op::Add, nexthop), _) => {
                    emit_item(&Item::Nexthop(Op::Delete, nexthop.clone()), buf, seq, 0);
                }
                (item, _) => {
                    // Only undoable items follow another in a send, and a delete's echo
                    // comes before its ack: the kernel broke the protocol.
                    return Err(Error::malformed(format!(
                        "cannot undo batch item {}: {item:?} (no echo of the deleted route)",
                        index + offset
                    )));
                }
            }
            undone.push(index + offset);
        }
        if undone.is_empty() {
            return Ok(());
        }
        tracing::debug!(n = undone.len(), "undoing what followed the failing item");
        emit_end(buf, base.wrapping_add(undone.len() as u32));
        sock.skip_seq(undone.len() as u32 + 1);
        sock.send(buf)?;
        report.n_sends += 1;
        let mut undo_answers = Vec::new();
        undo_answers.resize_with(undone.len(), Answer::default);
        collect_answers(sock, base, &mut undo_answers, &mut vec![0u8; ACK_BUF])?;
        for (answer, item_index) in undo_answers.into_iter().zip(undone) {
            match answer.outcome {
                Some(Err(error)) => {
                    tracing::warn!(item_index, %error, "undo of a batch item refused");
                    report.undo_failures.push(Failure {
                        index: item_index,
                        item: self.items[item_index].clone(),
                        error,
                    });
                }
                _ => report.n_undone += 1,
            }
        }
        report.undo_failures.sort_by_key(|failure| failure.index);
        Ok(())
    }
}

/// The kernel's answers to one request of a send.
#[derive(Debug, Default)]
struct Answer {
    /// The ack: `None` until it arrives.
    outcome: Option<std::result::Result<(), KernelError>>,
    /// The payload of the kernel's echo of a deleted route, when a delete asked for one.
    echo: Option<Vec<u8>>,
}

/// The buffer acks and echoes are read into: each is a datagram of its own, of a few hundred
/// bytes (acks are capped, `NETLINK_CAP_ACK`), so one read each is enough, without the peek
/// for the size that general receives make ([`NlSocket::recv`]); a larger datagram is
/// detected (`MSG_TRUNC`) and fails the batch.
const ACK_BUF: usize = 32 * 1024;

/// Reads the answers to the send whose first sequence number is `base` (errors, echoes) up
/// to the ack of its end marker (sequence number `base + answers.len()`); then every request
/// without an error was applied.
fn collect_answers(
    sock: &mut NlSocket,
    base: u32,
    answers: &mut [Answer],
    buf: &mut [u8],
) -> Result<()> {
    let end = answers.len();
    loop {
        let len = sock.recv_answer(buf)?;
        for msg in Msgs::new(&buf[..len]) {
            let msg = msg?;
            let offset = msg.seq.wrapping_sub(base) as usize;
            if offset == end && msg.kind == wire::NLMSG_ERROR {
                if let Some(error) = wire::parse_error(&msg)? {
                    // A NOOP cannot fail: the kernel did not take the send as built.
                    return Err(Error::Kernel(error));
                }
                for answer in answers.iter_mut() {
                    answer.outcome.get_or_insert(Ok(()));
                }
                return Ok(());
            }
            let Some(answer) = answers.get_mut(offset) else {
                tracing::trace!(seq = msg.seq, "answer to another request");
                continue;
            };
            match msg.kind {
                wire::NLMSG_ERROR => {
                    answer.outcome = Some(match wire::parse_error(&msg)? {
                        None => Ok(()),
                        Some(error) => Err(error),
                    });
                }
                wire::RTM_DELROUTE => answer.echo = Some(msg.payload.to_vec()),
                _ => {}
            }
        }
    }
}

/// Ends a send with an `NLMSG_NOOP` asking for an ack: the kernel handles a send's messages
/// in order, so its ack comes after every answer to the requests before it.
fn emit_end(buf: &mut Vec<u8>, seq: u32) {
    wire::MsgWriter::new(
        buf,
        wire::NLMSG_NOOP,
        wire::NLM_F_REQUEST | wire::NLM_F_ACK,
        seq,
    )
    .finish();
}

/// Whether an applied item can be undone exactly: an exclusive route add (the route did not
/// exist, so deleting the same route removes exactly it), an IPv4 route delete (added back
/// from the kernel's echo; IPv6 may echo a multipath delete hop by hop) and an exclusive
/// nexthop add (nothing used it before). Not a rule add: a rule added without a priority gets
/// one from the kernel, and a delete without it could find another rule of the same
/// selectors.
fn undoable(item: &Item) -> bool {
    match item {
        Item::Route(Op::Add, _) | Item::Nexthop(Op::Add, _) => true,
        Item::Route(Op::Delete, route) => route.family() == Family::V4,
        _ => false,
    }
}

fn emit_item(item: &Item, buf: &mut Vec<u8>, seq: u32, extra_flags: u16) {
    let flags = |op: Op| match op {
        Op::Add => wire::NLM_F_REQUEST | wire::NLM_F_CREATE | wire::NLM_F_EXCL,
        Op::Replace => wire::NLM_F_REQUEST | wire::NLM_F_CREATE | wire::NLM_F_REPLACE,
        Op::Delete => wire::NLM_F_REQUEST,
        Op::Change => wire::NLM_F_REQUEST | wire::NLM_F_REPLACE,
        Op::Append => wire::NLM_F_REQUEST | wire::NLM_F_CREATE | wire::NLM_F_APPEND,
        Op::Prepend => wire::NLM_F_REQUEST | wire::NLM_F_CREATE,
    };
    match item {
        Item::Route(op, route) => {
            let kind = match op {
                Op::Delete => wire::RTM_DELROUTE,
                _ => wire::RTM_NEWROUTE,
            };
            route.emit(buf, kind, flags(*op) | extra_flags, seq);
        }
        Item::Address(op, addr) => {
            let kind = match op {
                Op::Delete => wire::RTM_DELADDR,
                _ => wire::RTM_NEWADDR,
            };
            addr.emit(buf, kind, flags(*op) | extra_flags, seq);
        }
        Item::Nexthop(op, nexthop) => {
            let kind = match op {
                Op::Delete => wire::RTM_DELNEXTHOP,
                _ => wire::RTM_NEWNEXTHOP,
            };
            nexthop.emit(buf, kind, flags(*op) | extra_flags, seq);
        }
        Item::Rule(op, rule) => {
            let kind = match op {
                Op::Delete => wire::RTM_DELRULE,
                _ => wire::RTM_NEWRULE,
            };
            rule.emit(buf, kind, flags(*op) | extra_flags, seq);
        }
    }
}

const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_MULTIPATH: u16 = 9;
const RTA_FLOW: u16 = 11;
const RTA_CACHEINFO: u16 = 12;
const RTA_VIA: u16 = 18;
const RTA_ENCAP_TYPE: u16 = 21;
const RTA_ENCAP: u16 = 22;
const RTA_EXPIRES: u16 = 23;
const RTA_NH_ID: u16 = 30;
/// `RTNH_F_ONLINK`: the only next-hop flag a request may carry (the kernel refuses `dead`
/// and `linkdown`, and sets the others itself).
const RTNH_F_ONLINK: u8 = 4;

/// Appends the request that adds back an IPv4 route the kernel echoed as deleted: the echo's
/// own header and attributes (metrics, realms, encap, every hop with its weight and flags,
/// and whatever this crate does not decode), without what the kernel reports but refuses in
/// a request: the route's counters, state flags (`dead`, `linkdown`, offload) and, for a
/// route on a nexthop object, the next hops and type it reports from that nexthop.
pub(crate) fn emit_restore(echo: &[u8], buf: &mut Vec<u8>, seq: u32) {
    let flags = wire::NLM_F_REQUEST | wire::NLM_F_CREATE | wire::NLM_F_EXCL;
    let mut msg = wire::MsgWriter::new(buf, wire::RTM_NEWROUTE, flags, seq);
    let Some(hdr) = echo.get(..RTMSG_LEN) else {
        // Not a route: a request the kernel will refuse, reported as an undo failure.
        msg.finish();
        return;
    };
    let attrs = &echo[RTMSG_LEN..];
    let on_nexthop = wire::Nlas::new(attrs).any(|(kind, _)| kind == RTA_NH_ID);
    let mut hdr: [u8; RTMSG_LEN] = hdr.try_into().unwrap_or([0; RTMSG_LEN]);
    let rtm_flags = wire::u32_at(&hdr, 8);
    let keep = if on_nexthop {
        0
    } else {
        rtm_flags & u32::from(RTNH_F_ONLINK)
    };
    hdr[8..12].copy_from_slice(&keep.to_ne_bytes());
    if on_nexthop && hdr[7] == RouteType::BLACKHOLE.0 {
        // Lent by a blackhole nexthop; the route itself is unicast.
        hdr[7] = RouteType::UNICAST.0;
    }
    msg.raw(&hdr);
    let mut nlas = wire::Nlas::new(attrs);
    while let Some((kind, value, whole)) = nlas.next_full() {
        match kind {
            RTA_CACHEINFO | RTA_EXPIRES => {}
            RTA_OIF | RTA_GATEWAY | RTA_MULTIPATH | RTA_FLOW | RTA_VIA | RTA_ENCAP_TYPE
            | RTA_ENCAP
                if on_nexthop => {}
            RTA_MULTIPATH => {
                // Each rtnexthop's flags byte, cleared of what a request may not carry.
                let mut hops = value.to_vec();
                let mut at = 0;
                while at + 8 <= hops.len() {
                    let len = usize::from(wire::u16_at(&hops, at));
                    if len < 8 {
                        break;
                    }
                    hops[at + 2] &= RTNH_F_ONLINK;
                    at += wire::align(len);
                }
                msg.attr(wire::u16_at(whole, 2), &hops);
            }
            // The type with its nested and byte-order bits, as the kernel sent it.
            _ => drop(msg.attr(wire::u16_at(whole, 2), value)),
        }
    }
    msg.finish();
}

#[cfg(test)]
mod tests;
