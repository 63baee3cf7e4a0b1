//! Filtered queries return exactly what `ip route show table T` / `dev D` returns, with the
//! filter run by the kernel (strict checking) or, when that is off, here.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::Duration;

use netmirror_platform::testing::NetNs;
use netmirror_platform::{Family, FilterSide, Platform, Route};
use serde_json::Value;

use super::support::{config, ip, netns_with_veth};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

/// Destination prefixes that `ip -j` lists for `args`.
fn ip_dsts(ns: &NetNs, args: &[&str]) -> BTreeSet<String> {
    let out = ns.ip(args).unwrap();
    let routes: Value = serde_json::from_str(&out).unwrap();
    routes
        .as_array()
        .unwrap()
        .iter()
        .map(|route| {
            let dst = route["dst"].as_str().unwrap();
            let table = route["table"].as_str().unwrap_or("main");
            let dst = if dst.contains('/') || dst == "default" {
                dst.to_owned()
            } else {
                format!("{dst}/32")
            };
            format!("{table} {dst}")
        })
        .collect()
}

fn dsts(routes: &[Route]) -> BTreeSet<String> {
    routes
        .iter()
        .map(|route| {
            let dst = if route.dst_len() == 0 {
                "default".to_owned()
            } else {
                format!("{}/{}", route.dst(), route.dst_len())
            };
            format!("{} {dst}", route.table())
        })
        .collect()
}

#[test]
fn filtered_queries_equal_ip_route_show() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let platform = Platform::open(config(&ns)).unwrap();
        assert!(platform.strict_check());
        let nmx0 = platform.links().name("nmx0").execute().unwrap().items[0].ifindex();
        let nmx1 = platform.links().name("nmx1").execute().unwrap().items[0].ifindex();
        let gw = "192.0.2.2".parse().unwrap();
        let mut batch = platform.batch();
        for i in 0..1000u32 {
            let dst = Ipv4Addr::from(0x0a00_0000 + (i << 8));
            batch = batch.add_route(
                Route::new(dst.into(), 24)
                    .with_gateway(gw)
                    .with_table(netmirror_platform::Table(100)),
            );
        }
        for i in 0..5000u32 {
            let dst = Ipv4Addr::from(0x0b00_0000 + (i << 8));
            batch = batch.add_route(Route::new(dst.into(), 24).with_gateway(gw));
        }
        for i in 0..50u32 {
            let dst = Ipv4Addr::from(0x0c00_0000 + (i << 8));
            batch = batch.add_route(Route::new(dst.into(), 24).with_oif(nmx1));
        }
        assert!(batch.execute().unwrap().is_success());
        ip(
            &ns,
            "-6 route add 2001:db8:9::/64 via 2001:db8:1::2 table 100",
        );

        for strict in [true, false] {
            let platform = Platform::open(config(&ns).with_strict_check(strict)).unwrap();
            let expected_side = if strict {
                FilterSide::Kernel
            } else {
                FilterSide::Local
            };

            let table = platform
                .routes()
                .family(Family::V4)
                .table(netmirror_platform::Table(100))
                .execute()
                .unwrap();
            assert_eq!(table.filter, expected_side);
            assert_eq!(table.items.len(), 1000);
            assert_eq!(
                dsts(&table.items),
                ip_dsts(&ns, &["-j", "route", "show", "table", "100"])
                    .into_iter()
                    .map(|line| line.replacen("main", "100", 1))
                    .collect()
            );

            let v6 = platform
                .routes()
                .family(Family::V6)
                .table(netmirror_platform::Table(100))
                .execute()
                .unwrap();
            assert_eq!(v6.items.len(), 1);

            let dev = platform
                .routes()
                .family(Family::V4)
                .table(netmirror_platform::Table::MAIN)
                .dev(nmx1)
                .execute()
                .unwrap();
            assert_eq!(dev.filter, expected_side);
            assert_eq!(
                dsts(&dev.items),
                ip_dsts(&ns, &["-j", "route", "show", "dev", "nmx1"])
            );
            // The 50 routes, the prefix route, and the routes whose gateway resolved to nmx1.
            assert!(dev.items.len() >= 51, "{}", dev.items.len());
            assert!(dev.items.iter().all(|route| route.oif() == Some(nmx1)));

            let by_dev0 = platform
                .routes()
                .family(Family::V4)
                .dev(nmx0)
                .execute()
                .unwrap();
            assert!(by_dev0.items.iter().all(|route| route.oif() == Some(nmx0)));

            let addrs = platform.addresses().ifindex(nmx1).execute().unwrap();
            assert_eq!(addrs.filter, expected_side);
            assert!(addrs.items.iter().all(|addr| addr.ifindex() == nmx1));
            assert!(
                addrs
                    .items
                    .iter()
                    .any(|addr| addr.local().to_string() == "192.0.2.2")
            );

            let link = platform.links().ifindex(nmx1).execute().unwrap();
            assert_eq!(link.items.len(), 1);
            assert_eq!(link.items[0].name(), "nmx1");
            assert!(
                platform
                    .links()
                    .ifindex(netmirror_platform::Ifindex(9999))
                    .execute()
                    .unwrap()
                    .items
                    .is_empty()
            );
        }
    });
}

/// A visitor that collects, forgetting an interrupted dump's routes; `stop_after` makes it
/// fail at that route.
struct Collect {
    routes: Vec<Route>,
    mark: usize,
    stop_after: Option<usize>,
}

impl netmirror_platform::Visitor<Route> for Collect {
    type Error = netmirror_platform::Error;

    fn begin(&mut self) -> netmirror_platform::Result<()> {
        self.mark = self.routes.len();
        Ok(())
    }

    fn item(&mut self, route: Route) -> netmirror_platform::Result<()> {
        if self.stop_after == Some(self.routes.len()) {
            return Err(netmirror_platform::Error::InvalidArgument("enough".into()));
        }
        self.routes.push(route);
        Ok(())
    }

    fn interrupted(&mut self) -> netmirror_platform::Result<bool> {
        self.routes.truncate(self.mark);
        Ok(true)
    }
}

/// `visit` hands over what `execute` collects, in the same order, filtered or not; a
/// visitor's error stops the visit and leaves the platform usable.
#[test]
fn visits_hand_over_what_execute_collects() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut batch = String::new();
        for i in 0..3000u32 {
            let [_, b, c, _] = (0x0a00_0000u32 + (i << 8)).to_be_bytes();
            batch.push_str(&format!(
                "route add 10.{b}.{c}.0/24 via 192.0.2.2 table 100\n"
            ));
            batch.push_str(&format!("route add 2001:db8:{i:x}::/48 dev nmx0\n"));
        }
        let path = std::env::temp_dir().join(format!("nmx-visit-{}.batch", std::process::id()));
        std::fs::write(&path, batch).unwrap();
        let added = ns.ip(&["-batch", path.to_str().unwrap()]);
        let _ = std::fs::remove_file(&path);
        added.unwrap();
        let platform = Platform::open(config(&ns)).unwrap();
        // Every route, table 100's (a kernel filter), IPv6 only.
        fn query(platform: &Platform, n: usize) -> netmirror_platform::RouteQuery<'_> {
            match n {
                0 => platform.routes(),
                1 => platform.routes().table(netmirror_platform::Table(100)),
                _ => platform.routes().family(Family::V6),
            }
        }
        for n in 0..3 {
            let collected = query(&platform, n).execute().unwrap().items;
            assert!(collected.len() >= 3000, "{}", collected.len());
            let mut visitor = Collect {
                routes: Vec::new(),
                mark: 0,
                stop_after: None,
            };
            query(&platform, n).visit(&mut visitor).unwrap();
            assert_eq!(visitor.routes, collected, "query {n}");
            let mut stopping = Collect {
                routes: Vec::new(),
                mark: 0,
                stop_after: Some(10),
            };
            let err = query(&platform, n).visit(&mut stopping).unwrap_err();
            assert!(err.to_string().contains("enough"), "{err}");
            assert_eq!(stopping.routes[..], collected[..10]);
            // The rest of the stopped dump was read: the next query gets its own answer.
            assert_eq!(query(&platform, n).execute().unwrap().items, collected);
        }
    });
}
