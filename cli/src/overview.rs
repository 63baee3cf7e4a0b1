//! `netmirror` with no subcommand: an overview of this host.
//!
//! Links with their state and addresses, route counts per table and family, the number of
//! nexthop objects, the default routes, and NetworkManager's state and devices when it is on
//! the system bus (when it is not, one line says so; that is not an error). In JSON it is one
//! object: `{"links": [...], "routes": [...], "nexthops": N, "default_routes": [...],
//! "networkmanager": {...} | null}` (`{"error": "..."}` when NetworkManager is there but could
//! not be loaded).

use std::collections::BTreeMap;

use netmirror_platform::names;
use serde_json::{Map, Value};

use crate::args::{KernelArgs, OutputArgs, usage_error};
use crate::kernel::{self, LinkNames};
use crate::nm;
use crate::render::{Cell, Field, Mode, Printer, Table};

/// Columns of the overview's links.
const LINK_FIELDS: &[Field] = &[
    Field::common("INDEX", "ifindex"),
    Field::common("NAME", "ifname"),
    Field::common("STATE", "operstate"),
    Field::common("ADDRESSES", "addresses"),
];

/// Columns of the route counts.
const COUNT_FIELDS: &[Field] = &[
    Field::common("TABLE", "table"),
    Field::common("FAMILY", "family"),
    Field::common("ROUTES", "routes"),
];

/// Prints the overview.
pub(crate) fn run(
    printer: &mut Printer,
    output: &OutputArgs,
    kernel_args: &KernelArgs,
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    if !output.fields.is_empty() {
        return Err(
            usage_error("--fields does not apply to the overview; use a subcommand").into(),
        );
    }
    // NetworkManager answers in tens of milliseconds, mostly the daemon's own time: ask it
    // first, on a thread of its own, and read the kernel meanwhile. A namespace has no
    // NetworkManager of its own: only the host's overview asks the bus.
    let networkmanager = kernel_args
        .netns
        .is_none()
        .then(|| std::thread::spawn(move || nm::overview(timeout)));
    let platform = kernel::open(kernel_args)?;
    let links = kernel::load_links(&platform)?;
    let names = LinkNames::from_links(&links);
    let mut addr_query = platform.addresses();
    let mut route_query = platform.routes();
    if let Some(family) = kernel::family(kernel_args) {
        addr_query = addr_query.family(family);
        route_query = route_query.family(family);
    }
    let addresses = addr_query
        .execute()
        .map_err(|err| kernel::explain(err, "dump addresses"))?
        .items;
    let progress = crate::progress::Progress::start("loading routes");
    let routes = route_query
        .execute()
        .map_err(|err| kernel::explain(err, "dump routes"))?
        .items;
    drop(progress);
    let family = kernel::family(kernel_args);
    let n_nexthops = platform
        .nexthops()
        .execute()
        .map_err(|err| kernel::explain(err, "dump nexthops"))?
        .items
        .iter()
        .filter(|nh| family.is_none() || nh.family().is_none() || nh.family() == family)
        .count();
    let n_on_nexthops = routes
        .iter()
        .filter(|route| route.nh_id().is_some())
        .count();

    let mut link_table = Table::new(LINK_FIELDS);
    for link in &links {
        let addrs: Vec<String> = addresses
            .iter()
            .filter(|addr| addr.ifindex() == link.ifindex())
            .map(|addr| format!("{}/{}", addr.local(), addr.prefix_len()))
            .collect();
        link_table.push(vec![
            link.ifindex().into(),
            link.name().to_owned().into(),
            names::operstate(link.operstate()).into(),
            Cell::List(addrs),
        ]);
    }

    let mut counts: BTreeMap<(u32, &'static str), usize> = BTreeMap::new();
    for route in &routes {
        *counts
            .entry((route.table().into(), kernel::family_name(route.family())))
            .or_default() += 1;
    }
    let mut count_table = Table::new(COUNT_FIELDS);
    for ((table, family), n_routes) in counts {
        count_table.push(vec![
            names::table_name(table).into(),
            family.into(),
            n_routes.into(),
        ]);
    }

    let mut default_table = Table::new(kernel::ROUTE_FIELDS);
    for route in routes.iter().filter(|route| {
        route.dst_len() == 0 && route.kind() == netmirror_platform::RouteType::UNICAST
    }) {
        default_table.push(kernel::route_row(route, &names));
    }

    let networkmanager = networkmanager.map(|thread| {
        thread.join().unwrap_or_else(|_| {
            nm::Overview::Failed("NetworkManager is not available: its reader failed".to_owned())
        })
    });

    if printer.mode() == Mode::Json {
        let mut object = Map::new();
        object.insert("links".to_owned(), printer.table_json(&link_table)?);
        object.insert("routes".to_owned(), printer.table_json(&count_table)?);
        object.insert("nexthops".to_owned(), n_nexthops.into());
        object.insert(
            "default_routes".to_owned(),
            printer.table_json(&default_table)?,
        );
        let nm_value = match &networkmanager {
            Some(nm::Overview::Running { general, devices }) => {
                let mut nm_object = Map::new();
                let general = printer.table_json(general)?;
                nm_object.insert(
                    "general".to_owned(),
                    general.get(0).cloned().unwrap_or(Value::Null),
                );
                nm_object.insert("devices".to_owned(), printer.table_json(devices)?);
                Value::Object(nm_object)
            }
            Some(nm::Overview::Failed(reason)) => {
                let mut nm_object = Map::new();
                nm_object.insert("error".to_owned(), Value::from(reason.as_str()));
                Value::Object(nm_object)
            }
            Some(nm::Overview::Absent(_)) | None => Value::Null,
        };
        object.insert("networkmanager".to_owned(), nm_value);
        return printer.json(&Value::Object(object));
    }

    printer.heading("Links")?;
    printer.table(&link_table)?;
    printer.blank()?;
    printer.heading("Routes per table")?;
    printer.table(&count_table)?;
    if n_nexthops > 0 {
        printer.note(&format!(
            "{n_nexthops} nexthop objects, {n_on_nexthops} routes use one (`netmirror nexthop`)"
        ))?;
    }
    printer.blank()?;
    printer.heading("Default routes")?;
    if default_table.len() == 0 {
        printer.note("no default route")?;
    } else {
        printer.table(&default_table)?;
    }
    match networkmanager {
        Some(nm::Overview::Running { general, devices }) => {
            printer.blank()?;
            printer.heading("NetworkManager")?;
            printer.table(&general)?;
            printer.blank()?;
            printer.table(&devices)?;
        }
        Some(nm::Overview::Absent(reason) | nm::Overview::Failed(reason)) => {
            printer.blank()?;
            printer.heading("NetworkManager")?;
            printer.note(&reason)?;
        }
        None => {}
    }
    Ok(())
}
