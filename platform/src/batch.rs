//! Batch programming: many route and address changes in one pipelined stream.
//!
//! Requests are packed many per `sendmsg` (the kernel handles each message of a send in
//! turn, inside the call), each asks for an acknowledgement, and acks are matched back to
//! their items by sequence number. A failure names the item and carries the kernel's errno
//! and extended-ack message.

use crate::addr::Address;
use crate::error::{Error, KernelError, Result};
use crate::platform::Platform;
use crate::route::Route;
use crate::wire::{self, Msgs};

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
}

/// One change of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Item {
    /// A route change.
    Route(Op, Route),
    /// An address change.
    Address(Op, Address),
}

/// One item the kernel refused.
#[derive(Debug, Clone, PartialEq, Eq)]
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
pub struct Report {
    /// Items the kernel acknowledged.
    pub n_ok: usize,
    /// Items the kernel refused, in batch order.
    pub failures: Vec<Failure>,
    /// Items never sent because the batch stopped at a failure.
    pub n_skipped: usize,
    /// Number of `sendmsg` calls.
    pub n_sends: usize,
}

impl Report {
    /// True when every item was applied.
    pub fn is_success(&self) -> bool {
        self.failures.is_empty() && self.n_skipped == 0
    }
}

/// A batch of changes: `platform.batch().add_route(r).execute()`.
#[derive(Debug)]
#[must_use = "a batch does nothing until executed"]
pub struct Batch<'a> {
    platform: &'a Platform,
    items: Vec<Item>,
    stop_on_error: bool,
    per_send: usize,
}

impl Platform {
    /// Starts a batch.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            platform: self,
            items: Vec::new(),
            stop_on_error: false,
            per_send: 256,
        }
    }
}

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

    /// Stop at the first failure (default: go on and report every failure).
    ///
    /// The kernel applies every message of one send, so the items packed in the same send
    /// as the failing one are still applied; no further send is made, and the items not
    /// sent are counted in [`Report::n_skipped`]. Use `per_send(1)` for an exact stop.
    pub fn stop_on_error(mut self, stop: bool) -> Self {
        self.stop_on_error = stop;
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
        let mut report = Report::default();
        // Each ack takes about 1 KiB of receive buffer until read: never send more requests
        // at once than the buffer holds acks for.
        let fits = (self.platform.rcvbuf().effective / 1024).max(1);
        let per_send = self.per_send.min(fits);
        let mut sock = self.platform.lock();
        let mut buf = Vec::with_capacity(per_send * 96);
        let mut index = 0;
        while index < self.items.len() {
            let chunk_end = (index + per_send).min(self.items.len());
            let base = sock.next_seq();
            buf.clear();
            for (offset, item) in self.items[index..chunk_end].iter().enumerate() {
                let seq = base.wrapping_add(offset as u32);
                emit_item(item, &mut buf, seq);
            }
            // Keep later sequence numbers clear of this chunk's.
            sock.skip_seq((chunk_end - index) as u32);
            sock.send(&buf)?;
            report.n_sends += 1;
            let mut pending = chunk_end - index;
            let mut failed_here = false;
            while pending > 0 {
                let Some(datagram) = sock.recv(false)? else {
                    return Err(Error::Timeout);
                };
                for msg in Msgs::new(datagram) {
                    let msg = msg?;
                    if msg.kind != wire::NLMSG_ERROR {
                        continue;
                    }
                    let offset = msg.seq.wrapping_sub(base) as usize;
                    if offset >= chunk_end - index {
                        tracing::trace!(seq = msg.seq, "ack of another request");
                        continue;
                    }
                    pending -= 1;
                    match wire::parse_error(&msg)? {
                        None => report.n_ok += 1,
                        Some(error) => {
                            failed_here = true;
                            let item_index = index + offset;
                            tracing::debug!(item_index, %error, "batch item refused");
                            report.failures.push(Failure {
                                index: item_index,
                                item: self.items[item_index].clone(),
                                error,
                            });
                        }
                    }
                }
            }
            index = chunk_end;
            if failed_here && self.stop_on_error {
                report.n_skipped = self.items.len() - index;
                break;
            }
        }
        report.failures.sort_by_key(|failure| failure.index);
        Ok(report)
    }
}

fn emit_item(item: &Item, buf: &mut Vec<u8>, seq: u32) {
    let flags = |op: Op| match op {
        Op::Add => wire::NLM_F_REQUEST | wire::NLM_F_ACK | wire::NLM_F_CREATE | wire::NLM_F_EXCL,
        Op::Replace => {
            wire::NLM_F_REQUEST | wire::NLM_F_ACK | wire::NLM_F_CREATE | wire::NLM_F_REPLACE
        }
        Op::Delete => wire::NLM_F_REQUEST | wire::NLM_F_ACK,
    };
    match item {
        Item::Route(op, route) => {
            let kind = match op {
                Op::Delete => wire::RTM_DELROUTE,
                _ => wire::RTM_NEWROUTE,
            };
            route.emit(buf, kind, flags(*op), seq);
        }
        Item::Address(op, addr) => {
            let kind = match op {
                Op::Delete => wire::RTM_DELADDR,
                _ => wire::RTM_NEWADDR,
            };
            addr.emit(buf, kind, flags(*op), seq);
        }
    }
}
