//! Entry points for the cargo-fuzz targets in `platform/fuzz` (feature `fuzzing`): the
//! receive path fed with arbitrary bytes. Not part of the API: hidden from the docs, and
//! free to change with the fuzz targets.
#![cfg(feature = "fuzzing")]
#![doc(hidden)]

use crate::wire::{self, Msgs};
use crate::{Address, Cache, Config, Event, Link, Nexthop, Result, Route, Rule};

/// Splits `datagram` into netlink messages as the receive path does, parses every message as
/// each kind of object and as an error, and checks that a parsed route, address or nexthop
/// survives a round trip through the encoder with the same identity. Panics only on a broken invariant.
pub fn parse_datagram(datagram: &[u8]) {
    for msg in Msgs::new(datagram) {
        let Ok(msg) = msg else { break };
        if let Ok(Some(route)) = Route::parse(msg.payload) {
            let _ = (route.weak_id(), route.metrics(), route.ifindexes().count());
            round_trip(
                "",
                &route,
                Route::emit,
                wire::RTM_NEWROUTE,
                Route::parse,
                Route::id,
            );
        }
        if let Ok(Some(addr)) = Address::parse(msg.payload) {
            round_trip(
                "",
                &addr,
                Address::emit,
                wire::RTM_NEWADDR,
                Address::parse,
                Address::id,
            );
        }
        if let Ok(Some(nh)) = Nexthop::parse(msg.payload) {
            let key = |nh: &Nexthop| {
                (
                    nh.id(),
                    nh.gateway(),
                    nh.is_blackhole(),
                    nh.group().to_vec(),
                    nh.is_fdb(),
                )
            };
            round_trip(
                "",
                &nh,
                Nexthop::emit,
                wire::RTM_NEWNEXTHOP,
                Nexthop::parse,
                key,
            );
        }
        let _ = Rule::parse(msg.payload);
        let _ = Link::parse(msg.payload);
        crate::text::decode_all(msg.payload);
        let _ = wire::parse_error(&msg);
    }
}

/// Reads `text` as an `ip -batch` file (device names resolve to made-up indexes), and checks
/// that every item a line becomes is encoded as the batch sends it and parses back with the
/// same identity. Panics only on a broken invariant.
pub fn parse_batch(text: &str) {
    let ifindex = |name: &str| {
        let n = name
            .bytes()
            .fold(0u32, |n, b| n.wrapping_mul(31).wrapping_add(b.into()));
        (!name.starts_with('x')).then_some(crate::Ifindex(n % 4096 + 1))
    };
    for line in crate::ipbatch::parse(text, &ifindex) {
        let Ok(item) = line.item else { continue };
        match item {
            crate::Item::Route(_, route) => round_trip(
                &line.text,
                &route,
                Route::emit,
                wire::RTM_NEWROUTE,
                Route::parse,
                Route::id,
            ),
            crate::Item::Address(_, addr) => round_trip(
                &line.text,
                &addr,
                Address::emit,
                wire::RTM_NEWADDR,
                Address::parse,
                Address::id,
            ),
            crate::Item::Nexthop(_, nh) => round_trip(
                &line.text,
                &nh,
                Nexthop::emit,
                wire::RTM_NEWNEXTHOP,
                Nexthop::parse,
                Nexthop::id,
            ),
            crate::Item::Rule(_, rule) => round_trip(
                &line.text,
                &rule,
                Rule::emit,
                wire::RTM_NEWRULE,
                Rule::parse,
                Rule::id,
            ),
        }
    }
}

/// Encodes `obj` as a request of type `kind`, parses it back and checks that the identity
/// `id` survived; `line` names the input in the panic (when there is a line).
fn round_trip<T: std::fmt::Debug, I: PartialEq + std::fmt::Debug>(
    line: &str,
    obj: &T,
    emit: fn(&T, &mut Vec<u8>, u16, u16, u32),
    kind: u16,
    parse: fn(&[u8]) -> Result<Option<T>>,
    id: fn(&T) -> I,
) {
    let mut buf = Vec::new();
    emit(obj, &mut buf, kind, 0, 1);
    let again = reparse(&buf, parse);
    assert_eq!(
        again.as_ref().map(id),
        Some(id(obj)),
        "{line:?}: {obj:?} encoded as {again:?}"
    );
}

/// The one message in `buf` (written by an encoder), parsed by `parse`.
fn reparse<T>(buf: &[u8], parse: fn(&[u8]) -> Result<Option<T>>) -> Option<T> {
    let msg = Msgs::new(buf).next()?.ok()?;
    parse(msg.payload).ok().flatten()
}

/// A real [`Cache`] opened in the caller's namespace (read-only: it subscribes and dumps,
/// changes nothing), into which datagrams are applied as if the event socket had read them.
#[derive(Debug)]
pub struct Receiver {
    cache: Cache,
    events: Vec<Event>,
}

impl Receiver {
    /// Opens the cache with a small receive buffer (nothing is ever read from its socket).
    pub fn open() -> Result<Self> {
        let cache = Cache::open(Config::new().with_rcvbuf(64 << 10))?;
        Ok(Receiver {
            cache,
            events: Vec::new(),
        })
    }

    /// Applies `datagram` to the cache's indexes as the event socket's receive path does and
    /// returns the number of events it made; then resyncs, so each input starts from the
    /// namespace's real state and a crash reproduces from its input alone.
    pub fn receive(&mut self, datagram: &[u8]) -> Result<usize> {
        self.events.clear();
        self.cache.apply_datagram(datagram, &mut self.events);
        let n = self.events.len();
        self.events.clear();
        self.cache.resync(&mut self.events)?;
        self.events.clear();
        Ok(n)
    }
}
