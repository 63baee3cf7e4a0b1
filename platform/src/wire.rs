//! Raw netlink framing: splitting a datagram into messages, iterating attributes, decoding
//! `NLMSG_ERROR` with its extended ack, and appending requests to a send buffer.
//!
//! The hot paths (route dumps and events, batch requests) work on bytes directly: building a
//! `Vec` of typed attributes per message costs more than the kernel's dump itself.

use crate::error::{Error, KernelError, Result};

/// Length of `struct nlmsghdr`.
pub(crate) const NLMSG_HDRLEN: usize = 16;
/// Length of `struct nlattr`.
const NLA_HDRLEN: usize = 4;

pub(crate) const NLMSG_NOOP: u16 = 1;
pub(crate) const NLMSG_ERROR: u16 = 2;
pub(crate) const NLMSG_DONE: u16 = 3;
pub(crate) const NLMSG_OVERRUN: u16 = 4;

pub(crate) const NLM_F_REQUEST: u16 = 0x1;
pub(crate) const NLM_F_ACK: u16 = 0x4;
pub(crate) const NLM_F_DUMP_INTR: u16 = 0x10;
pub(crate) const NLM_F_DUMP_FILTERED: u16 = 0x20;
pub(crate) const NLM_F_DUMP: u16 = 0x300;
pub(crate) const NLM_F_REPLACE: u16 = 0x100;
pub(crate) const NLM_F_EXCL: u16 = 0x200;
pub(crate) const NLM_F_CREATE: u16 = 0x400;
pub(crate) const NLM_F_APPEND: u16 = 0x800;
/// In an `NLMSG_ERROR`: the request was not echoed in full.
const NLM_F_CAPPED: u16 = 0x100;
/// In an `NLMSG_ERROR`: extended-ack attributes follow.
const NLM_F_ACK_TLVS: u16 = 0x200;

const NLMSGERR_ATTR_MSG: u16 = 1;
const NLMSGERR_ATTR_OFFS: u16 = 2;

pub(crate) const RTM_NEWLINK: u16 = 16;
pub(crate) const RTM_DELLINK: u16 = 17;
pub(crate) const RTM_GETLINK: u16 = 18;
pub(crate) const RTM_NEWADDR: u16 = 20;
pub(crate) const RTM_DELADDR: u16 = 21;
pub(crate) const RTM_GETADDR: u16 = 22;
pub(crate) const RTM_NEWROUTE: u16 = 24;
pub(crate) const RTM_DELROUTE: u16 = 25;
pub(crate) const RTM_GETROUTE: u16 = 26;
pub(crate) const RTM_NEWRULE: u16 = 32;
pub(crate) const RTM_DELRULE: u16 = 33;
pub(crate) const RTM_GETRULE: u16 = 34;
/// A link's queueing discipline added or changed (`struct tcmsg`, `TCA_*`).
pub(crate) const RTM_NEWQDISC: u16 = 36;
/// A link's queueing discipline deleted.
pub(crate) const RTM_DELQDISC: u16 = 37;
/// A per-link (or `all`) IPv4/IPv6 setting changed (`struct netconfmsg`, `NETCONFA_*`).
pub(crate) const RTM_NEWNETCONF: u16 = 80;
pub(crate) const RTM_NEWNEXTHOP: u16 = 104;
pub(crate) const RTM_DELNEXTHOP: u16 = 105;
pub(crate) const RTM_GETNEXTHOP: u16 = 106;

pub(crate) const AF_UNSPEC: u8 = 0;
pub(crate) const AF_INET: u8 = 2;
/// `AF_BRIDGE`: a bridge port's own `RTM_NEWLINK` messages.
pub(crate) const AF_BRIDGE: u8 = 7;
pub(crate) const AF_INET6: u8 = 10;

/// Rounds `len` up to the netlink alignment of 4 bytes.
pub(crate) const fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// One netlink message: its header fields and its payload (after the 16-byte header).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Msg<'a> {
    pub(crate) kind: u16,
    pub(crate) flags: u16,
    pub(crate) seq: u32,
    pub(crate) port: u32,
    pub(crate) payload: &'a [u8],
}

/// Iterates over the messages of one datagram. Yields an error (once, then stops) for a
/// header whose length does not fit.
pub(crate) struct Msgs<'a> {
    buf: &'a [u8],
}

impl<'a> Msgs<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Msgs { buf }
    }
}

impl<'a> Iterator for Msgs<'a> {
    type Item = Result<Msg<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let buf = self.buf;
        if buf.len() < NLMSG_HDRLEN {
            self.buf = &[];
            return Some(Err(Error::malformed(format!(
                "{} trailing bytes, shorter than a netlink header",
                buf.len()
            ))));
        }
        let len = u32_at(buf, 0) as usize;
        if len < NLMSG_HDRLEN || len > buf.len() {
            self.buf = &[];
            return Some(Err(Error::malformed(format!(
                "message length {len} with {} bytes left",
                buf.len()
            ))));
        }
        let msg = Msg {
            kind: u16_at(buf, 4),
            flags: u16_at(buf, 6),
            seq: u32_at(buf, 8),
            port: u32_at(buf, 12),
            payload: &buf[NLMSG_HDRLEN..len],
        };
        self.buf = buf.get(align(len)..).unwrap_or(&[]);
        Some(Ok(msg))
    }
}

/// Iterates over the attributes (`struct nlattr`) in `buf`. Stops at the first one whose
/// length does not fit; [`Nlas::malformed`] says whether that happened.
pub(crate) struct Nlas<'a> {
    buf: &'a [u8],
    malformed: bool,
}

impl<'a> Nlas<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Nlas {
            buf,
            malformed: false,
        }
    }

    /// True when iteration stopped at a malformed attribute.
    pub(crate) fn malformed(&self) -> bool {
        self.malformed
    }
}

impl<'a> Nlas<'a> {
    /// Like `next`, but also returns the whole attribute (header included).
    pub(crate) fn next_full(&mut self) -> Option<(u16, &'a [u8], &'a [u8])> {
        let buf = self.buf;
        if buf.len() < NLA_HDRLEN {
            if !buf.is_empty() {
                self.malformed = true;
                self.buf = &[];
            }
            return None;
        }
        let len = u16_at(buf, 0) as usize;
        if len < NLA_HDRLEN || len > buf.len() {
            self.malformed = true;
            self.buf = &[];
            return None;
        }
        let kind = u16_at(buf, 2) & 0x3fff;
        self.buf = buf.get(align(len)..).unwrap_or(&[]);
        Some((kind, &buf[NLA_HDRLEN..len], &buf[..len]))
    }
}

impl<'a> Iterator for Nlas<'a> {
    /// The attribute type (without the nested / byte-order bits) and its payload.
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_full().map(|(kind, payload, _)| (kind, payload))
    }
}

pub(crate) fn u16_at(buf: &[u8], at: usize) -> u16 {
    match buf.get(at..at + 2) {
        Some(b) => u16::from_ne_bytes([b[0], b[1]]),
        None => 0,
    }
}

pub(crate) fn u32_at(buf: &[u8], at: usize) -> u32 {
    match buf.get(at..at + 4) {
        Some(b) => u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Reads a `u32` attribute payload; `None` when it has the wrong size.
pub(crate) fn nla_u32(payload: &[u8]) -> Option<u32> {
    (payload.len() == 4).then(|| u32_at(payload, 0))
}

/// Reads a `u8` attribute payload; `None` when it is empty.
pub(crate) fn nla_u8(payload: &[u8]) -> Option<u8> {
    payload.first().copied()
}

/// Reads a NUL-terminated string attribute.
pub(crate) fn nla_str(payload: &[u8]) -> String {
    let end = payload
        .iter()
        .position(|b| *b == 0)
        .unwrap_or(payload.len());
    String::from_utf8_lossy(&payload[..end]).into_owned()
}

/// The outcome carried by an `NLMSG_ERROR` message: an ack (errno 0) or an error.
pub(crate) fn parse_error(msg: &Msg<'_>) -> Result<Option<KernelError>> {
    let payload = msg.payload;
    if payload.len() < 4 {
        return Err(Error::malformed("NLMSG_ERROR shorter than its error code"));
    }
    let code = u32_at(payload, 0) as i32;
    if code == 0 {
        return Ok(None);
    }
    let mut err = KernelError {
        errno: code.checked_neg().unwrap_or(i32::MAX),
        message: None,
        bad_attr_offset: None,
    };
    if msg.flags & NLM_F_ACK_TLVS != 0 {
        // After the code: the original request's header, then its payload unless capped,
        // then the extended-ack attributes.
        let orig = &payload[4..];
        let skip = if msg.flags & NLM_F_CAPPED != 0 {
            NLMSG_HDRLEN
        } else {
            align(u32_at(orig, 0) as usize)
        };
        if let Some(tlvs) = orig.get(skip..) {
            for (kind, value) in Nlas::new(tlvs) {
                match kind {
                    NLMSGERR_ATTR_MSG => err.message = Some(nla_str(value)),
                    NLMSGERR_ATTR_OFFS => err.bad_attr_offset = nla_u32(value),
                    _ => {}
                }
            }
        }
    }
    Ok(Some(err))
}

/// Appends netlink messages to a buffer: a header, a fixed family header, then attributes.
pub(crate) struct MsgWriter<'a> {
    buf: &'a mut Vec<u8>,
    start: usize,
}

impl<'a> MsgWriter<'a> {
    /// Starts a message of type `kind` at the end of `buf`.
    pub(crate) fn new(buf: &'a mut Vec<u8>, kind: u16, flags: u16, seq: u32) -> Self {
        let start = buf.len();
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        MsgWriter { buf, start }
    }

    /// Appends raw bytes (the family header), padded to 4 bytes.
    pub(crate) fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(bytes);
        self.pad();
        self
    }

    /// Appends one attribute.
    pub(crate) fn attr(&mut self, kind: u16, value: &[u8]) -> &mut Self {
        let len = (NLA_HDRLEN + value.len()) as u16;
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(value);
        self.pad();
        self
    }

    pub(crate) fn attr_u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.attr(kind, &value.to_ne_bytes())
    }

    /// Starts a nested attribute; close it with [`MsgWriter::end_nest`].
    pub(crate) fn begin_nest(&mut self, kind: u16) -> usize {
        let at = self.buf.len();
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        at
    }

    pub(crate) fn end_nest(&mut self, at: usize) {
        let len = (self.buf.len() - at) as u16;
        self.buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
    }

    /// Appends raw bytes inside a nest (e.g. an `rtnexthop`), padded.
    pub(crate) fn nested_raw(&mut self, bytes: &[u8]) -> usize {
        let at = self.buf.len();
        self.buf.extend_from_slice(bytes);
        at
    }

    /// Patches a `u16` length at `at` to cover everything written since.
    pub(crate) fn patch_len16(&mut self, at: usize) {
        let len = (self.buf.len() - at) as u16;
        self.buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
    }

    fn pad(&mut self) {
        let len = self.buf.len();
        self.buf.resize(self.start + align(len - self.start), 0);
    }

    /// Writes the total length into the header.
    pub(crate) fn finish(self) {
        let len = (self.buf.len() - self.start) as u32;
        self.buf[self.start..self.start + 4].copy_from_slice(&len.to_ne_bytes());
    }
}
