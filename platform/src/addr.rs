//! IPv4 and IPv6 addresses.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use crate::countdown::Countdown;
use crate::error::{Error, Result};
use crate::route::Family;
use crate::types::Ifindex;
use crate::types::Scope;
use crate::wire::{self, AF_INET, AF_INET6, MsgWriter, Nlas, nla_str, nla_u8, nla_u32};

const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_LABEL: u16 = 3;
const IFA_BROADCAST: u16 = 4;
const IFA_CACHEINFO: u16 = 6;
const IFA_FLAGS: u16 = 8;
const IFA_RT_PRIORITY: u16 = 9;
const IFA_PROTO: u16 = 11;

/// Length of `struct ifaddrmsg`.
pub(crate) const IFADDRMSG_LEN: usize = 8;

/// Lifetime value meaning "forever".
pub const LIFETIME_FOREVER: u32 = u32::MAX;

/// An address on an interface.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Address {
    ifindex: u32,
    address: IpAddr,
    local: Option<IpAddr>,
    broadcast: Option<Ipv4Addr>,
    label: Option<Box<str>>,
    flags: u32,
    /// `None` for forever.
    valid: Option<Countdown>,
    /// `None` for forever.
    preferred: Option<Countdown>,
    rt_priority: Option<u32>,
    prefix_len: u8,
    scope: u8,
    proto: Option<u8>,
    /// Attributes this crate does not decode: type and payload.
    other: Vec<(u16, Box<[u8]>)>,
}

/// What identifies an address in the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AddressId {
    ifindex: u32,
    local: IpAddr,
    /// IPv4 only: the kernel keeps `10.0.0.1/24` and `10.0.0.1/16` apart.
    prefix_len: u8,
    /// IPv4 only: the peer address of a point-to-point address.
    peer: Option<IpAddr>,
}

impl Address {
    /// An address to add: `address/prefix_len` on `ifindex`, universe scope, permanent.
    pub fn new(ifindex: Ifindex, address: IpAddr, prefix_len: u8) -> Self {
        let ifindex = ifindex.0;
        Address {
            ifindex,
            address,
            local: matches!(address, IpAddr::V4(_)).then_some(address),
            broadcast: None,
            label: None,
            flags: 0,
            valid: None,
            preferred: None,
            rt_priority: None,
            prefix_len,
            scope: 0,
            proto: None,
            other: Vec::new(),
        }
    }

    /// The interface index.
    pub fn ifindex(&self) -> Ifindex {
        Ifindex(self.ifindex)
    }
    /// The address family.
    pub fn family(&self) -> Family {
        Family::of(self.address)
    }
    /// The local address (`IFA_LOCAL`, or `IFA_ADDRESS` when there is no local one).
    pub fn local(&self) -> IpAddr {
        self.local.unwrap_or(self.address)
    }
    /// `IFA_ADDRESS`: the peer for point-to-point addresses, else the local address.
    pub fn address(&self) -> IpAddr {
        self.address
    }
    /// The peer address, when it differs from the local one.
    pub fn peer(&self) -> Option<IpAddr> {
        self.local
            .filter(|local| *local != self.address)
            .map(|_| self.address)
    }
    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }
    /// The IPv4 broadcast address, if any.
    pub fn broadcast(&self) -> Option<Ipv4Addr> {
        self.broadcast
    }
    /// The IPv4 label, if any.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }
    /// The `IFA_F_*` flags.
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// The scope (`RT_SCOPE_*`).
    pub fn scope(&self) -> Scope {
        Scope(self.scope)
    }
    /// Valid and preferred lifetimes in seconds ([`LIFETIME_FOREVER`] when permanent): what
    /// is left of them now, as `ip addr` would print it now. The kernel reports what is left
    /// when it writes a message; the cache keeps the instant each lifetime runs out, so that
    /// an address held for an hour does not show the count it had when it was read (to
    /// within a second: the kernel counts whole seconds). Lifetimes set with
    /// [`with_lifetimes`](Self::with_lifetimes) stand still.
    pub fn lifetimes(&self) -> (u32, u32) {
        match (self.valid, self.preferred) {
            (None | Some(Countdown::Left(_)), None | Some(Countdown::Left(_))) => {
                (left(self.valid, None), left(self.preferred, None))
            }
            _ => self.lifetimes_at(Instant::now()),
        }
    }
    /// The valid and preferred lifetimes left at `at` (see [`lifetimes`](Self::lifetimes)).
    pub fn lifetimes_at(&self, at: Instant) -> (u32, u32) {
        (left(self.valid, Some(at)), left(self.preferred, Some(at)))
    }
    /// The metric of the prefix route (`IFA_RT_PRIORITY`), if set.
    pub fn rt_priority(&self) -> Option<u32> {
        self.rt_priority
    }
    /// The protocol that added the address (`IFA_PROTO`), if set.
    pub fn proto(&self) -> Option<u8> {
        self.proto
    }
    /// The flags as `ip addr` prints them (`dynamic`, `noprefixroute`, `temporary`, ...).
    pub fn flag_names(&self) -> Vec<String> {
        crate::names::address_flags(self.flags, self.family() == Family::V6)
    }
    /// Attributes this crate does not decode, as the kernel sent them: type and payload.
    pub fn unknown_attributes(&self) -> &[(u16, Box<[u8]>)] {
        &self.other
    }

    /// Sets `IFA_F_*` flags (`noprefixroute`, `nodad`, ... ; see
    /// [`crate::names::parse_address_flag`]).
    pub fn with_flags(mut self, flags: u32) -> Self {
        self.flags |= flags;
        self
    }

    /// Sets the valid and preferred lifetimes in seconds ([`LIFETIME_FOREVER`] for
    /// forever); they stand still until the kernel has them.
    pub fn with_lifetimes(mut self, valid: u32, preferred: u32) -> Self {
        let set =
            |secs: u32| (secs != LIFETIME_FOREVER).then_some(Countdown::Left(i64::from(secs)));
        self.valid = set(valid);
        self.preferred = set(preferred);
        self
    }

    /// Sets the IPv4 broadcast address.
    pub fn with_broadcast(mut self, broadcast: Ipv4Addr) -> Self {
        self.broadcast = Some(broadcast);
        self
    }

    /// Makes this a point-to-point address: the address given to [`new`](Self::new) stays the
    /// local one (`IFA_LOCAL`), `peer` becomes `IFA_ADDRESS` (as `ip addr add LOCAL peer PEER`).
    pub fn with_peer(mut self, peer: IpAddr) -> Self {
        self.local = Some(self.local());
        self.address = peer;
        self
    }

    /// Sets the IPv4 label (`IFA_LABEL`; the kernel wants the device's name, or it followed by
    /// a colon and more).
    pub fn with_label(mut self, label: &str) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the scope.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = scope.0;
        self
    }

    /// Sets the metric of the prefix route (`IFA_RT_PRIORITY`).
    pub fn with_rt_priority(mut self, priority: u32) -> Self {
        self.rt_priority = Some(priority);
        self
    }

    /// Sets the protocol that adds the address (`IFA_PROTO`).
    pub fn with_proto(mut self, proto: u8) -> Self {
        self.proto = Some(proto);
        self
    }

    /// The kernel's identity of this address.
    pub fn id(&self) -> AddressId {
        match self.family() {
            Family::V4 => AddressId {
                ifindex: self.ifindex,
                local: self.local(),
                prefix_len: self.prefix_len,
                peer: self.peer().map(|peer| mask(peer, self.prefix_len)),
            },
            Family::V6 => AddressId {
                ifindex: self.ifindex,
                local: self.local(),
                prefix_len: 0,
                peer: None,
            },
        }
    }

    /// Parses an `RTM_NEWADDR`/`RTM_DELADDR` payload; `Ok(None)` for other families.
    pub fn parse(payload: &[u8]) -> Result<Option<Self>> {
        let Some(hdr) = payload.get(..IFADDRMSG_LEN) else {
            return Err(Error::malformed("address message shorter than ifaddrmsg"));
        };
        let v6 = match hdr[0] {
            AF_INET => false,
            AF_INET6 => true,
            _ => return Ok(None),
        };
        let ip = |value: &[u8]| -> Result<IpAddr> {
            match (v6, value.len()) {
                (false, 4) => Ok(IpAddr::from(<[u8; 4]>::try_from(value).unwrap_or_default())),
                (true, 16) => Ok(IpAddr::from(
                    <[u8; 16]>::try_from(value).unwrap_or_default(),
                )),
                _ => Err(Error::malformed("address attribute of wrong size")),
            }
        };
        let mut address = None;
        let mut local = None;
        let mut addr = Address {
            ifindex: wire::u32_at(hdr, 4),
            address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            local: None,
            broadcast: None,
            label: None,
            flags: u32::from(hdr[2]),
            valid: None,
            preferred: None,
            rt_priority: None,
            prefix_len: hdr[1],
            scope: hdr[3],
            proto: None,
            other: Vec::new(),
        };
        let mut nlas = Nlas::new(&payload[IFADDRMSG_LEN..]);
        for (kind, value) in &mut nlas {
            match kind {
                IFA_ADDRESS => address = Some(ip(value)?),
                IFA_LOCAL => local = Some(ip(value)?),
                IFA_LABEL => addr.label = Some(nla_str(value).into()),
                IFA_BROADCAST => {
                    if let Ok(octets) = <[u8; 4]>::try_from(value) {
                        addr.broadcast = Some(Ipv4Addr::from(octets));
                    }
                }
                IFA_FLAGS => addr.flags = nla_u32(value).unwrap_or(addr.flags),
                IFA_CACHEINFO if value.len() >= 8 => {
                    let now = Instant::now();
                    addr.preferred = read_lifetime(wire::u32_at(value, 0), now);
                    addr.valid = read_lifetime(wire::u32_at(value, 4), now);
                }
                IFA_RT_PRIORITY => addr.rt_priority = nla_u32(value),
                IFA_PROTO => addr.proto = nla_u8(value),
                // Lifetimes only: the rest are timestamps.
                IFA_CACHEINFO => {}
                _ => addr.other.push((kind, value.into())),
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed("address attribute overruns its message"));
        }
        let Some(address) = address.or(local) else {
            return Err(Error::malformed("address message without an address"));
        };
        addr.address = address;
        addr.local = local;
        Ok(Some(addr))
    }

    /// Appends this address as a request of type `kind` (`RTM_NEWADDR` / `RTM_DELADDR`).
    pub(crate) fn emit(&self, buf: &mut Vec<u8>, kind: u16, flags: u16, seq: u32) {
        let mut msg = MsgWriter::new(buf, kind, flags, seq);
        let mut hdr = [0u8; IFADDRMSG_LEN];
        hdr[0] = self.family().af();
        hdr[1] = self.prefix_len;
        hdr[2] = (self.flags & 0xff) as u8;
        hdr[3] = self.scope;
        hdr[4..8].copy_from_slice(&self.ifindex.to_ne_bytes());
        msg.raw(&hdr);
        let octets = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => v6.octets().to_vec(),
        };
        msg.attr(IFA_ADDRESS, &octets(self.address));
        if let Some(local) = self.local {
            msg.attr(IFA_LOCAL, &octets(local));
        }
        if let Some(broadcast) = self.broadcast {
            msg.attr(IFA_BROADCAST, &broadcast.octets());
        }
        if let Some(label) = &self.label {
            let mut bytes = label.as_bytes().to_vec();
            bytes.push(0);
            msg.attr(IFA_LABEL, &bytes);
        }
        if self.flags > 0xff {
            msg.attr_u32(IFA_FLAGS, self.flags);
        }
        if let Some(priority) = self.rt_priority {
            msg.attr_u32(IFA_RT_PRIORITY, priority);
        }
        if let Some(proto) = self.proto {
            msg.attr(IFA_PROTO, &[proto]);
        }
        if self.valid.is_some() || self.preferred.is_some() {
            let (valid, preferred) = self.lifetimes();
            let mut info = [0u8; 16];
            info[0..4].copy_from_slice(&preferred.to_ne_bytes());
            info[4..8].copy_from_slice(&valid.to_ne_bytes());
            msg.attr(IFA_CACHEINFO, &info);
        }
        msg.finish();
    }
}

/// A lifetime the kernel reported (`secs` left) at `now`: `None` for forever. One that has
/// run out (0) keeps one fixed end, so that two readings of it compare equal.
fn read_lifetime(secs: u32, now: Instant) -> Option<Countdown> {
    match secs {
        LIFETIME_FOREVER => None,
        0 => Some(Countdown::Until(i64::MIN)),
        secs => Some(Countdown::read(i64::from(secs), now)),
    }
}

/// What is left of `lifetime` at `at` (now when `None`), as the kernel counts it: 0 once run
/// out, [`LIFETIME_FOREVER`] for forever.
fn left(lifetime: Option<Countdown>, at: Option<Instant>) -> u32 {
    let Some(countdown) = lifetime else {
        return LIFETIME_FOREVER;
    };
    let secs = match at {
        Some(at) => countdown.left_at(at),
        None => countdown.left(),
    };
    u32::try_from(secs.clamp(0, i64::from(LIFETIME_FOREVER - 1))).unwrap_or(0)
}

fn mask(addr: IpAddr, prefix_len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let keep = if prefix_len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(prefix_len.min(32)))
            };
            IpAddr::V4(Ipv4Addr::from(bits & keep))
        }
        IpAddr::V6(_) => addr,
    }
}
