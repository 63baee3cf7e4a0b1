//! Small typed numbers of the routing protocol: an interface index ([`Ifindex`]), a routing
//! [`Table`], a route [`Protocol`], a [`Scope`] and a [`RouteType`]. Each is as big as the kernel's field, prints itself as `ip`
//! does (names from `rt_tables` and `rt_protos` included, see [`crate::names`]), parses the
//! names `ip` accepts, and converts to and from the raw number and netlink-packet-route's
//! enums.

use std::fmt;
use std::str::FromStr;

use netlink_packet_route::route::{
    RouteProtocol as NprProtocol, RouteScope as NprScope, RouteType as NprType,
};

use crate::error::Error;
use crate::names;

/// An interface index (`ifi_index`, `RTA_OIF`, ...): printed as the number, as `ip` prints
/// `ifindex`; a link's name is the cache's ([`crate::Cache::link`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Ifindex(pub u32);

impl Ifindex {
    /// The kernel's number.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl From<u32> for Ifindex {
    fn from(raw: u32) -> Self {
        Ifindex(raw)
    }
}

impl From<Ifindex> for u32 {
    fn from(value: Ifindex) -> Self {
        value.0
    }
}

impl fmt::Display for Ifindex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Ifindex {
    type Err = Error;

    /// A number (a name needs the links: see [`crate::Cache::link_by_name`]).
    fn from_str(text: &str) -> Result<Self, Error> {
        text.parse::<u32>()
            .ok()
            .filter(|&n| n != 0)
            .map(Ifindex)
            .ok_or_else(|| Error::InvalidArgument(format!("not an interface index `{text}`")))
    }
}

macro_rules! number_type {
    ($(#[$doc:meta])* $name:ident($raw:ty), $what:literal, $display:path, $parse:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $raw);

        impl $name {
            /// The kernel's number.
            pub const fn get(self) -> $raw {
                self.0
            }
        }

        impl From<$raw> for $name {
            fn from(raw: $raw) -> Self {
                $name(raw)
            }
        }

        impl From<$name> for $raw {
            fn from(value: $name) -> Self {
                value.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&$display(self.0))
            }
        }

        impl FromStr for $name {
            type Err = Error;

            /// A name `ip` accepts, or a number.
            fn from_str(text: &str) -> Result<Self, Error> {
                $parse(text)
                    .map($name)
                    .ok_or_else(|| Error::InvalidArgument(format!(concat!("unknown ", $what, " `{}`"), text)))
            }
        }
    };
}

number_type!(
    /// A routing table id (`RTA_TABLE`): printed as `main`, `local`, a name from `rt_tables`,
    /// or the number.
    Table(u32),
    "table",
    names::table_name,
    names::parse_table
);

number_type!(
    /// Who installed a route, rule or nexthop (`rtm_protocol`, `RTPROT_*`): printed as
    /// `kernel`, `boot`, a name from `rt_protos`, or the number.
    Protocol(u8),
    "protocol",
    names::protocol,
    names::parse_protocol
);

number_type!(
    /// A route's or address's scope (`RT_SCOPE_*`): printed as `global`, `link`, `host`, or
    /// the number.
    Scope(u8),
    "scope",
    names::scope,
    names::parse_scope
);

number_type!(
    /// A route's type (`rtm_type`, `RTN_*`): printed as `unicast`, `blackhole`, ... or the
    /// number.
    RouteType(u8),
    "route type",
    names::route_type,
    names::parse_route_type
);

impl Table {
    /// `RT_TABLE_UNSPEC` (0): no table (`table all` in a dump request).
    pub const UNSPEC: Table = Table(0);
    /// `RT_TABLE_COMPAT` (252).
    pub const COMPAT: Table = Table(252);
    /// `RT_TABLE_DEFAULT` (253).
    pub const DEFAULT: Table = Table(253);
    /// `RT_TABLE_MAIN` (254): where `ip route add` puts a route.
    pub const MAIN: Table = Table(254);
    /// `RT_TABLE_LOCAL` (255): local and broadcast routes.
    pub const LOCAL: Table = Table(255);
}

impl Protocol {
    /// `RTPROT_UNSPEC`.
    pub const UNSPEC: Protocol = Protocol(0);
    /// `RTPROT_REDIRECT`: an ICMP redirect.
    pub const REDIRECT: Protocol = Protocol(1);
    /// `RTPROT_KERNEL`: made by the kernel (a prefix route, a local route).
    pub const KERNEL: Protocol = Protocol(2);
    /// `RTPROT_BOOT`: what `ip route add` uses.
    pub const BOOT: Protocol = Protocol(3);
    /// `RTPROT_STATIC`: set by an administrator.
    pub const STATIC: Protocol = Protocol(4);
    /// `RTPROT_RA`: learned from router advertisements.
    pub const RA: Protocol = Protocol(9);
    /// `RTPROT_DHCP`.
    pub const DHCP: Protocol = Protocol(16);
    /// `RTPROT_BGP`.
    pub const BGP: Protocol = Protocol(186);
    /// `RTPROT_OSPF`.
    pub const OSPF: Protocol = Protocol(188);
}

impl Scope {
    /// `RT_SCOPE_UNIVERSE` (0, printed `global`).
    pub const UNIVERSE: Scope = Scope(0);
    /// `RT_SCOPE_SITE` (200).
    pub const SITE: Scope = Scope(200);
    /// `RT_SCOPE_LINK` (253).
    pub const LINK: Scope = Scope(253);
    /// `RT_SCOPE_HOST` (254).
    pub const HOST: Scope = Scope(254);
    /// `RT_SCOPE_NOWHERE` (255).
    pub const NOWHERE: Scope = Scope(255);
}

impl RouteType {
    /// `RTN_UNSPEC`.
    pub const UNSPEC: RouteType = RouteType(0);
    /// `RTN_UNICAST`: a gateway or a directly connected route.
    pub const UNICAST: RouteType = RouteType(1);
    /// `RTN_LOCAL`: accept locally.
    pub const LOCAL: RouteType = RouteType(2);
    /// `RTN_BROADCAST`.
    pub const BROADCAST: RouteType = RouteType(3);
    /// `RTN_ANYCAST`.
    pub const ANYCAST: RouteType = RouteType(4);
    /// `RTN_MULTICAST`.
    pub const MULTICAST: RouteType = RouteType(5);
    /// `RTN_BLACKHOLE`: drop.
    pub const BLACKHOLE: RouteType = RouteType(6);
    /// `RTN_UNREACHABLE`.
    pub const UNREACHABLE: RouteType = RouteType(7);
    /// `RTN_PROHIBIT`.
    pub const PROHIBIT: RouteType = RouteType(8);
    /// `RTN_THROW`.
    pub const THROW: RouteType = RouteType(9);
    /// `RTN_NAT`.
    pub const NAT: RouteType = RouteType(10);
    /// `RTN_XRESOLVE`.
    pub const XRESOLVE: RouteType = RouteType(11);
}

impl From<NprProtocol> for Protocol {
    fn from(value: NprProtocol) -> Self {
        Protocol(value.into())
    }
}

impl From<Protocol> for NprProtocol {
    fn from(value: Protocol) -> Self {
        NprProtocol::from(value.0)
    }
}

impl From<NprScope> for Scope {
    fn from(value: NprScope) -> Self {
        Scope(value.into())
    }
}

impl From<Scope> for NprScope {
    fn from(value: Scope) -> Self {
        NprScope::from(value.0)
    }
}

impl From<NprType> for RouteType {
    fn from(value: NprType) -> Self {
        RouteType(value.into())
    }
}

impl From<RouteType> for NprType {
    fn from(value: RouteType) -> Self {
        NprType::from(value.0)
    }
}

#[cfg(test)]
mod tests;
