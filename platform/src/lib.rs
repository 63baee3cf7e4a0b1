//! The kernel's network state (links, addresses, routes, rules) as a live cache kept in sync
//! over rtnetlink: NetworkManager's platform cache in Rust.

mod addr;
mod batch;
mod cache;
mod error;
mod link;
mod netns;
mod platform;
mod query;
mod route;
mod rule;
mod socket;
mod wire;

#[cfg(test)]
mod tests;

pub use addr::{Address, AddressId, LIFETIME_FOREVER};
pub use batch::{Batch, Failure, Item, Op, Report};
pub use cache::{
    AddressesByIfindex, Cache, Change, DefaultRoutes, Event, RoutesByIfindex, RoutesByWeakId,
    Stats, WEAK_ID_BUCKETS,
};
pub use error::{Error, KernelError, Result};
pub use link::{IFF_LOWER_UP, IFF_UP, Link};
pub use netns::Netns;
pub use platform::{Config, DumpReport, Platform};
pub use query::{AddressQuery, Answer, FilterSide, LinkQuery, RouteQuery, RuleQuery};
pub use route::{
    Family, NextHop, RT_SCOPE_HOST, RT_SCOPE_LINK, RT_SCOPE_UNIVERSE, RTN_BLACKHOLE, RTN_LOCAL,
    RTN_UNICAST, RTN_UNREACHABLE, RTPROT_BOOT, RTPROT_RA, RTPROT_STATIC, Route, RouteId,
    RouteWeakId, TABLE_LOCAL, TABLE_MAIN,
};
pub use rule::{FR_ACT_TO_TBL, Rule};
pub use socket::RcvbufOutcome;

/// Test fixtures: throwaway network namespaces (feature `testing`).
#[cfg(feature = "testing")]
pub mod testing;
