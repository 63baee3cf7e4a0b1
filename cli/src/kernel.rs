//! The kernel subcommands' one-shot views: `link`, `addr`, `rule` and `route show`.
//!
//! Each opens a [`Platform`] in the namespace asked for, runs one query of
//! `netmirror-platform` (whose filters the kernel applies where it can) and renders the answer
//! as a [`Table`]. The columns and JSON keys are those of `ip -j` where `ip` has them.

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::Context;
use netmirror_platform::{
    self as platform, Address, Config, Link, Netns, Platform, Route, Rule, names,
};

use crate::args::{self, Family, KernelArgs, RouteSelector};
use crate::failure::Failure;
use crate::render::{Cell, Field, Printer, Table};

/// Columns of `link`.
pub(crate) const LINK_FIELDS: &[Field] = &[
    Field::common("INDEX", "ifindex"),
    Field::common("NAME", "ifname"),
    Field::common("STATE", "operstate"),
    Field::common("MTU", "mtu"),
    Field::common("TYPE", "link_type"),
    Field::common("KIND", "kind"),
    Field::common("ADDRESS", "address"),
    Field::common("FLAGS", "flags"),
    Field::extra("BROADCAST", "broadcast"),
    Field::extra("MASTER", "master"),
    Field::extra("LINK", "link"),
    Field::extra("TXQLEN", "txqlen"),
    Field::extra("GROUP", "group"),
    Field::extra("CARRIER", "carrier"),
    Field::extra("ALIAS", "ifalias"),
];

/// Columns of `addr`.
pub(crate) const ADDR_FIELDS: &[Field] = &[
    Field::common("INDEX", "ifindex"),
    Field::common("DEV", "ifname"),
    Field::common("FAMILY", "family"),
    Field::common("ADDRESS", "local"),
    Field::common("PREFIXLEN", "prefixlen"),
    Field::common("SCOPE", "scope"),
    Field::common("LABEL", "label"),
    Field::extra("PEER", "address"),
    Field::extra("BROADCAST", "broadcast"),
    Field::extra("FLAGS", "flags"),
    Field::extra("VALID", "valid_life_time"),
    Field::extra("PREFERRED", "preferred_life_time"),
];

/// Columns of `route`.
pub(crate) const ROUTE_FIELDS: &[Field] = &[
    Field::extra("FAMILY", "family"),
    Field::common("TYPE", "type"),
    Field::common("DST", "dst"),
    Field::common("GATEWAY", "gateway"),
    Field::common("DEV", "dev"),
    Field::common("TABLE", "table"),
    Field::common("PROTO", "protocol"),
    Field::common("SCOPE", "scope"),
    Field::common("METRIC", "metric"),
    Field::common("PREFSRC", "prefsrc"),
    Field::extra("SRC", "src"),
    Field::extra("TOS", "tos"),
    Field::extra("NEXTHOPS", "nexthops"),
];

/// Columns of `rule`.
pub(crate) const RULE_FIELDS: &[Field] = &[
    Field::common("PRIORITY", "priority"),
    Field::common("FAMILY", "family"),
    Field::common("SRC", "src"),
    Field::common("DST", "dst"),
    Field::common("IIF", "iif"),
    Field::common("OIF", "oif"),
    Field::common("FWMARK", "fwmark"),
    Field::common("ACTION", "action"),
    Field::common("TABLE", "table"),
    Field::extra("TOS", "tos"),
    Field::extra("PROTO", "protocol"),
    Field::extra("GOTO", "goto"),
];

/// The namespace of `--netns`: a path when it contains `/`, else a name under /run/netns.
pub(crate) fn netns(args: &KernelArgs) -> Option<Netns> {
    args.netns.as_ref().map(|netns| {
        if netns.contains('/') {
            Netns::path(netns)
        } else {
            Netns::name(netns)
        }
    })
}

/// Opens the platform in the namespace of `--netns`.
pub(crate) fn open(args: &KernelArgs) -> anyhow::Result<Platform> {
    let mut config = Config::new();
    if let Some(netns) = netns(args) {
        config = config.with_netns(netns);
    }
    Platform::open(config).map_err(|err| explain(err, "open a netlink socket"))
}

/// Turns a platform error into the CLI's message for it when it has one.
pub(crate) fn explain(err: platform::Error, doing: &str) -> anyhow::Error {
    match &err {
        platform::Error::Netns { netns, source }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Failure::NamespaceMissing {
                name: netns.clone(),
            }
            .into()
        }
        platform::Error::Netns { netns, source }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            Failure::NetnsPermissionDenied {
                netns: netns.clone(),
            }
            .into()
        }
        // Its message says it all: `/tmp/x is not a network namespace`.
        platform::Error::NotNetns { .. } => anyhow::Error::new(err),
        _ if crate::failure::is_permission_denied(&err) => Failure::PermissionDenied {
            what: doing.to_owned(),
        }
        .into(),
        _ => anyhow::Error::new(err).context(format!("cannot {doing}")),
    }
}

/// The platform's family for `-4`/`-6`.
pub(crate) fn family(args: &KernelArgs) -> Option<platform::Family> {
    args.family().map(|family| match family {
        Family::V4 => platform::Family::V4,
        Family::V6 => platform::Family::V6,
    })
}

/// The name `ip` prints for a family.
pub(crate) fn family_name(family: platform::Family) -> &'static str {
    match family {
        platform::Family::V4 => "inet",
        platform::Family::V6 => "inet6",
    }
}

/// Interface names by index, to print `dev eth0` instead of an index (shared, so a row naming
/// a link costs no allocation). Kept sorted by index: a binary search is cheaper than hashing
/// for the few links a host has, and route show looks up two per route.
pub(crate) struct LinkNames(Vec<(u32, Arc<str>)>);

impl LinkNames {
    /// Every link's name.
    pub(crate) fn load(platform: &Platform) -> anyhow::Result<LinkNames> {
        let answer = platform
            .links()
            .execute()
            .map_err(|err| explain(err, "dump links"))?;
        Ok(LinkNames::from_links(&answer.items))
    }

    /// Names of these links.
    pub(crate) fn from_links(links: &[Link]) -> LinkNames {
        let mut names = LinkNames(Vec::with_capacity(links.len()));
        for link in links {
            names.insert(link.ifindex(), link.name());
        }
        names
    }

    /// The shared name of `ifindex`, if known.
    fn get(&self, ifindex: u32) -> Option<&Arc<str>> {
        self.0
            .binary_search_by_key(&ifindex, |(index, _)| *index)
            .ok()
            .map(|at| &self.0[at].1)
    }

    /// The name of `ifindex`, or `if<N>` for a link that vanished.
    pub(crate) fn name(&self, ifindex: u32) -> String {
        self.get(ifindex)
            .map_or_else(|| format!("if{ifindex}"), |name| name.to_string())
    }

    /// The name of `ifindex` as a cell (`if<N>` for a link that vanished).
    pub(crate) fn cell(&self, ifindex: u32) -> Cell {
        self.get(ifindex).map_or_else(
            || format!("if{ifindex}").into(),
            |name| Cell::Shared(name.clone()),
        )
    }

    /// The index of the link named `name`; not finding it is an error, as in `ip`.
    pub(crate) fn index(&self, name: &str) -> anyhow::Result<u32> {
        self.0
            .iter()
            .find(|(_, link_name)| &**link_name == name)
            .map(|(ifindex, _)| *ifindex)
            .with_context(|| format!("cannot find device \"{name}\""))
    }

    /// Inserts or renames a link (monitors keep the map current).
    pub(crate) fn insert(&mut self, ifindex: u32, name: &str) {
        match self.0.binary_search_by_key(&ifindex, |(index, _)| *index) {
            Ok(at) if &*self.0[at].1 == name => {}
            Ok(at) => self.0[at].1 = Arc::from(name),
            Err(at) => self.0.insert(at, (ifindex, Arc::from(name))),
        }
    }

    /// Forgets a link that is gone (monitors prune the map, so it never outgrows the links).
    pub(crate) fn remove(&mut self, ifindex: u32) {
        if let Ok(at) = self.0.binary_search_by_key(&ifindex, |(index, _)| *index) {
            self.0.remove(at);
        }
    }

    /// The number of links known.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// A link's row.
pub(crate) fn link_row(link: &Link, names: &LinkNames) -> Vec<Cell> {
    vec![
        link.ifindex().into(),
        link.name().to_owned().into(),
        names::operstate(link.operstate()).into(),
        link.mtu().into(),
        names::link_type(link.link_type()).into(),
        Cell::opt_text(link.kind()),
        Cell::opt_text(names::hw_address(link.address())),
        Cell::List(names::link_flags(link.flags())),
        Cell::opt_text(names::hw_address(link.broadcast())),
        Cell::opt_text(link.controller().map(|ifindex| names.name(ifindex))),
        Cell::opt_text(link.parent().map(|ifindex| names.name(ifindex))),
        link.txqlen().into(),
        link.group().into(),
        link.carrier().map_or(Cell::Null, Cell::Bool),
        Cell::opt_text(link.alias()),
    ]
}

/// An address's row.
pub(crate) fn addr_row(addr: &Address, names: &LinkNames) -> Vec<Cell> {
    let (valid, preferred) = addr.lifetimes();
    vec![
        addr.ifindex().into(),
        names.name(addr.ifindex()).into(),
        family_name(addr.family()).into(),
        addr.local().to_string().into(),
        addr.prefix_len().into(),
        names::scope(addr.scope()).into(),
        Cell::opt_text(addr.label()),
        Cell::opt_text(addr.peer()),
        Cell::opt_text(addr.broadcast()),
        Cell::Int(addr.flags().into()),
        valid.into(),
        preferred.into(),
    ]
}

/// A route's row.
pub(crate) fn route_row(route: &Route, names: &LinkNames) -> Vec<Cell> {
    let mut row = Vec::with_capacity(ROUTE_FIELDS.len());
    route_cells(route, names, &mut row);
    row
}

/// Pushes a route's cells (those of [`route_row`]) into `row`.
pub(crate) fn route_cells(route: &Route, names: &LinkNames, row: &mut Vec<Cell>) {
    let nexthops: Vec<String> = route
        .multipath()
        .iter()
        .map(|hop| match hop.gateway {
            Some(gateway) => format!("via {gateway} dev {}", names.name(hop.ifindex)),
            None => format!("dev {}", names.name(hop.ifindex)),
        })
        .collect();
    // One push per cell: a cell is written in place, where extending from an array would
    // build the row on the stack first and copy it.
    row.push(family_name(route.family()).into());
    row.push(names::route_type(route.kind()).into());
    row.push(names::route_prefix(route.dst(), route.dst_len()).into());
    row.push(
        route
            .gateway()
            .map_or(Cell::Null, |gateway| address(gateway).into()),
    );
    row.push(
        route
            .oif()
            .map_or(Cell::Null, |ifindex| names.cell(ifindex)),
    );
    row.push(names::table_name(route.table()).into());
    row.push(names::protocol(route.protocol()).into());
    row.push(names::scope(route.scope()).into());
    row.push(route.priority().into());
    row.push(
        route
            .prefsrc()
            .map_or(Cell::Null, |prefsrc| address(prefsrc).into()),
    );
    row.push(Cell::opt_text(
        route.src().map(|(addr, len)| format!("{addr}/{len}")),
    ));
    row.push(route.tos().into());
    row.push(Cell::List(nexthops));
}

/// An address as `ip` prints it: a prefix of full length prints as the bare address.
fn address(addr: IpAddr) -> String {
    let full = if addr.is_ipv4() { 32 } else { 128 };
    names::route_prefix(addr, full)
}

/// A rule's row.
pub(crate) fn rule_row(rule: &Rule) -> Vec<Cell> {
    let looks_up = rule.action() == platform::FR_ACT_TO_TBL;
    vec![
        rule.priority().into(),
        family_name(rule.family()).into(),
        names::rule_prefix(rule.src()).into(),
        names::rule_prefix(rule.dst()).into(),
        Cell::opt_text(rule.iifname()),
        Cell::opt_text(rule.oifname()),
        Cell::opt_text(rule.fwmark().map(|(mark, mask)| match mask {
            Some(mask) if mask != u32::MAX => format!("{mark:#x}/{mask:#x}"),
            _ => format!("{mark:#x}"),
        })),
        names::rule_action(rule.action()).into(),
        if looks_up {
            names::table_name(rule.table()).into()
        } else {
            Cell::Null
        },
        rule.tos().into(),
        names::protocol(rule.protocol()).into(),
        Cell::opt_int(rule.goto()),
    ]
}

/// `link [show] [DEV]`.
pub(crate) fn link(
    printer: &mut Printer,
    kernel: &KernelArgs,
    args: &args::LinkArgs,
) -> anyhow::Result<()> {
    let dev = args::parse_dev_words("link", &args.words)?;
    let platform = open(kernel)?;
    let all = platform
        .links()
        .execute()
        .map_err(|err| explain(err, "dump links"))?;
    let names = LinkNames::from_links(&all.items);
    let mut table = Table::new(LINK_FIELDS);
    let links: Vec<&Link> = match &dev {
        Some(dev) => {
            let ifindex = names.index(dev)?;
            all.items
                .iter()
                .filter(|link| link.ifindex() == ifindex)
                .collect()
        }
        None => all.items.iter().collect(),
    };
    for link in links {
        table.push(link_row(link, &names));
    }
    printer.table(&table)
}

/// `addr [show] [dev DEV]`.
pub(crate) fn addr(
    printer: &mut Printer,
    kernel: &KernelArgs,
    args: &args::AddrArgs,
) -> anyhow::Result<()> {
    let dev = args::parse_dev_words("addr", &args.words)?;
    let platform = open(kernel)?;
    let names = LinkNames::load(&platform)?;
    let mut query = platform.addresses();
    if let Some(dev) = &dev {
        query = query.ifindex(names.index(dev)?);
    }
    if let Some(family) = family(kernel) {
        query = query.family(family);
    }
    let answer = query
        .execute()
        .map_err(|err| explain(err, "dump addresses"))?;
    let mut table = Table::new(ADDR_FIELDS);
    for addr in &answer.items {
        table.push(addr_row(addr, &names));
    }
    printer.table(&table)
}

/// `rule [show]`.
pub(crate) fn rule(
    printer: &mut Printer,
    kernel: &KernelArgs,
    args: &args::RuleArgs,
) -> anyhow::Result<()> {
    args::parse_rule_words(&args.words)?;
    let platform = open(kernel)?;
    let mut query = platform.rules();
    if let Some(family) = family(kernel) {
        query = query.family(family);
    }
    let answer = query.execute().map_err(|err| explain(err, "dump rules"))?;
    let mut table = Table::new(RULE_FIELDS);
    for rule in &answer.items {
        table.push(rule_row(rule));
    }
    printer.table(&table)
}

/// `route [show] [table ID|NAME|all] [dev DEV] [proto P] [type T]`: the main table unless
/// `table` says otherwise, both families unless `-4`/`-6`; the platform pushes the filters into
/// the kernel.
pub(crate) fn route_show(
    printer: &mut Printer,
    kernel: &KernelArgs,
    words: &[String],
) -> anyhow::Result<()> {
    let selector = RouteSelector::parse(words)?;
    let platform = open(kernel)?;
    let names = LinkNames::load(&platform)?;
    let mut query = platform.routes();
    match selector.table.as_deref() {
        Some("all") => {}
        Some(table) => {
            let id = names::parse_table(table).ok_or_else(|| {
                args::usage_error(format!(
                    "unknown table `{table}` (a number, main, local, default or all)"
                ))
            })?;
            query = query.table(id);
        }
        None => query = query.table(platform::TABLE_MAIN),
    }
    if let Some(dev) = &selector.dev {
        query = query.dev(names.index(dev)?);
    }
    if let Some(proto) = &selector.proto {
        let id = names::parse_protocol(proto)
            .ok_or_else(|| args::usage_error(format!("unknown protocol `{proto}`")))?;
        query = query.protocol(id);
    }
    if let Some(kind) = &selector.kind {
        let id = names::parse_route_type(kind)
            .ok_or_else(|| args::usage_error(format!("unknown route type `{kind}`")))?;
        query = query.kind(id);
    }
    if let Some(family) = family(kernel) {
        query = query.family(family);
    }
    let progress = crate::progress::Progress::start("loading routes");
    let answer = query.execute().map_err(|err| explain(err, "dump routes"))?;
    drop(progress);
    tracing::debug!(n_routes = answer.items.len(), filter = ?answer.filter, "routes dumped");
    printer.stream(ROUTE_FIELDS, &answer.items, |route, row| {
        route_cells(route, &names, row);
    })
}

/// Columns of `route count`.
const COUNT_FIELDS: &[Field] = &[
    Field::common("TABLE", "table"),
    Field::common("FAMILY", "family"),
    Field::common("ROUTES", "routes"),
];

/// `route count`: loads the whole cache (every table, both families, links, addresses and
/// rules, as a program keeping it in sync would), then prints the routes per table and
/// family, and the heap the cache holds, per route. The heap is measured by the binary's
/// counting allocator: bytes allocated and not freed while the cache loaded.
pub(crate) fn route_count(printer: &mut Printer, kernel: &KernelArgs) -> anyhow::Result<()> {
    let mut config = Config::new();
    if let Some(netns) = netns(kernel) {
        config = config.with_netns(netns);
    }
    let progress = crate::progress::Progress::start("loading the cache");
    let before = crate::heap::held();
    let cache =
        platform::Cache::open(config).map_err(|err| explain(err, "load the kernel cache"))?;
    let heap = crate::heap::held().saturating_sub(before);
    drop(progress);

    let mut counts: std::collections::BTreeMap<(u32, &'static str), usize> = Default::default();
    let only = family(kernel);
    for route in cache.routes() {
        if only.is_none_or(|family| route.family() == family) {
            *counts
                .entry((route.table(), family_name(route.family())))
                .or_default() += 1;
        }
    }
    let mut table = Table::new(COUNT_FIELDS);
    for ((id, family), n_routes) in &counts {
        table.push(vec![
            names::table_name(*id).into(),
            (*family).into(),
            (*n_routes).into(),
        ]);
    }
    let (n_links, n_addresses, n_routes, n_rules) = cache.len();
    let per_route = if n_routes == 0 {
        None
    } else {
        Some(heap as f64 / n_routes as f64)
    };
    if printer.mode() == crate::render::Mode::Json {
        let mut object = serde_json::Map::new();
        object.insert("tables".to_owned(), printer.table_json(&table)?);
        object.insert("routes".to_owned(), n_routes.into());
        object.insert("links".to_owned(), n_links.into());
        object.insert("addresses".to_owned(), n_addresses.into());
        object.insert("rules".to_owned(), n_rules.into());
        object.insert("cache_heap_bytes".to_owned(), heap.into());
        object.insert(
            "heap_bytes_per_route".to_owned(),
            per_route.map_or(serde_json::Value::Null, |bytes| {
                ((bytes * 10.0).round() / 10.0).into()
            }),
        );
        return printer.json(&serde_json::Value::Object(object));
    }
    printer.table(&table)?;
    printer.blank()?;
    let per_route = per_route.map_or_else(|| "--".to_owned(), |bytes| format!("{bytes:.1}"));
    printer.note(&format!(
        "{n_routes} routes, {n_links} links, {n_addresses} addresses, {n_rules} rules; \
         cache heap {} ({per_route} bytes per route, everything included)",
        crate::heap::human(heap)
    ))?;
    Ok(())
}
