//! `nexthop [show] [id N] [dev DEV]`: the kernel's nexthop objects, like `ip nexthop`.

use netmirror_platform::{self as platform, Nexthop, names};
use serde_json::{Map, Value};

use crate::args::{self, KernelArgs, NexthopArgs};
use crate::kernel::{self, LinkNames};
use crate::render::{Cell, Field, Mode, Printer, TypedCell};

/// Columns of `nexthop`; the JSON keys are those of `ip -j nexthop`.
pub(crate) const NEXTHOP_FIELDS: &[Field] = &[
    Field::common("ID", "id"),
    Field::common("GATEWAY", "gateway"),
    Field::common("DEV", "dev"),
    Field::common("GROUP", "group"),
    Field::common("BLACKHOLE", "blackhole"),
    Field::common("FLAGS", "flags"),
    Field::common("PROTO", "protocol"),
    Field::extra("SCOPE", "scope"),
    Field::extra("FDB", "fdb"),
    Field::extra("TYPE", "type"),
    Field::extra("RESILIENT", "resilient_args"),
    Field::extra("ENCAP", "encap"),
    Field::extra("UNKNOWN", "unknown_attributes"),
];

/// `RTNH_F_*` flags by `ip`'s names.
pub(crate) fn nexthop_flags(flags: u32) -> Vec<String> {
    let mut names: Vec<String> = [
        (1, "dead"),
        (2, "pervasive"),
        (4, "onlink"),
        (8, "offload"),
        (16, "linkdown"),
        (32, "unresolved"),
        (64, "trap"),
    ]
    .into_iter()
    .filter(|(bit, _)| flags & bit != 0)
    .map(|(_, name)| name.to_owned())
    .collect();
    let rest = flags & !0x7f;
    if rest != 0 {
        names.push(format!("{rest:#x}"));
    }
    names
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A nexthop's row.
pub(crate) fn nexthop_row(nh: &Nexthop, names: &LinkNames) -> Vec<Cell> {
    let group = if nh.is_group() {
        let text = nh
            .group()
            .iter()
            .map(|m| match m.weight {
                1 => m.id.to_string(),
                weight => format!("{},{weight}", m.id),
            })
            .collect::<Vec<_>>()
            .join("/");
        let json = nh
            .group()
            .iter()
            .map(|m| {
                let mut member = Map::new();
                member.insert("id".to_owned(), Value::from(m.id));
                if m.weight != 1 {
                    member.insert("weight".to_owned(), Value::from(m.weight));
                }
                Value::Object(member)
            })
            .collect();
        Cell::from(TypedCell {
            text,
            json: Value::Array(json),
        })
    } else {
        Cell::Null
    };
    let resilient = nh.resilient().map_or(Cell::Null, |res| {
        let mut json = Map::new();
        let mut text = Vec::new();
        // The kernel counts the timers in USER_HZ ticks; `ip` prints seconds.
        let fields = [
            ("buckets", res.buckets.map(u64::from), 1),
            ("idle_timer", res.idle_timer.map(u64::from), 100),
            ("unbalanced_timer", res.unbalanced_timer.map(u64::from), 100),
            ("unbalanced_time", res.unbalanced_time, 100),
        ];
        for (key, value, per) in fields {
            if let Some(value) = value {
                json.insert(key.to_owned(), Value::from(value / per));
                text.push(format!("{key} {}", value / per));
            }
        }
        Cell::from(TypedCell {
            text: text.join(" "),
            json: Value::Object(json),
        })
    });
    let group_type = match nh.group_type() {
        Some(0) => Cell::Text("mpath".into()),
        Some(1) => Cell::Text("resilient".into()),
        Some(other) => Cell::Int(other.into()),
        None => Cell::Null,
    };
    vec![
        nh.id().into(),
        Cell::opt_text(nh.gateway()),
        nh.oif().map_or(Cell::Null, |ifindex| names.cell(ifindex)),
        group,
        Cell::Bool(nh.is_blackhole()),
        Cell::List(nexthop_flags(nh.flags())),
        nh.protocol().to_string().into(),
        nh.scope().to_string().into(),
        Cell::Bool(nh.is_fdb()),
        group_type,
        resilient,
        Cell::opt_text(
            nh.encap()
                .map(|(kind, raw)| format!("type {kind} {}", hex(raw))),
        ),
        kernel::unknown_cell(nh.unknown_attributes()),
    ]
}

/// A nexthop as one JSON object with every key of `nexthop --json`, pretty-printed: what
/// `route show -d --json` writes as a route's `nh_info`.
pub(crate) fn nexthop_json(nh: &Nexthop, names: &LinkNames) -> String {
    serde_json::to_string_pretty(&nexthop_value(nh, names)).unwrap_or_default()
}

/// [`nexthop_json`] on one line: what `monitor -d --json` writes as a route's `nh_info`.
pub(crate) fn nexthop_json_line(nh: &Nexthop, names: &LinkNames) -> String {
    serde_json::to_string(&nexthop_value(nh, names)).unwrap_or_default()
}

fn nexthop_value(nh: &Nexthop, names: &LinkNames) -> Value {
    let object: Map<String, Value> = NEXTHOP_FIELDS
        .iter()
        .zip(nexthop_row(nh, names))
        .map(|(field, cell)| (field.key.to_owned(), cell.json()))
        .collect();
    Value::Object(object)
}

/// `nexthop [show] [id N] [dev DEV] [master DEV|vrf NAME] [groups] [fdb] [protocol P]`, with
/// `-4`/`-6` the nexthops of that family; `-d` prints `ip -d nexthop`'s lines.
pub(crate) fn show(
    printer: &mut Printer,
    kernel_args: &KernelArgs,
    args: &NexthopArgs,
) -> anyhow::Result<()> {
    let mut words = args::strip_show(&args.words).iter().map(String::as_str);
    let platform = kernel::open(kernel_args)?;
    let links = kernel::load_links(&platform)?;
    let names = LinkNames::from_links(&links);
    let mut query = platform.nexthops();
    while let Some(word) = words.next() {
        match word {
            "groups" => {
                query = query.groups();
                continue;
            }
            "fdb" => {
                query = query.fdb();
                continue;
            }
            _ => {}
        }
        let value = words
            .next()
            .ok_or_else(|| args::usage_error(format!("`{word}` needs a value")))?;
        query = match word {
            "id" => query.id(value
                .parse::<u32>()
                .map_err(|_| args::usage_error(format!("`{value}` is not a nexthop id")))?),
            "dev" => query.dev(names.index(value)?),
            "master" => query.master(names.index(value)?),
            // As `ip`, a VRF by name, refused when it is another kind of link.
            "vrf" => query.master(kernel::vrf_index(value, &names, &links)?),
            "protocol" | "proto" => query.protocol(platform::Protocol(
                names::parse_protocol(value)
                    .ok_or_else(|| args::usage_error(format!("unknown protocol `{value}`")))?,
            )),
            other => {
                return Err(args::usage_error(format!(
                    "unknown nexthop selector `{other}` (id N, dev DEV, master DEV, vrf NAME, \
                     groups, fdb, protocol P)"
                ))
                .into());
            }
        };
    }
    if let Some(family) = kernel::family(kernel_args) {
        query = query.family(family);
    }
    let progress = crate::progress::Progress::start("loading nexthops");
    if kernel_args.details && printer.mode() == Mode::Human {
        let name = |ifindex: u32| names.name(ifindex);
        let mut stream = printer.lines();
        kernel::visit_with(&mut stream, progress, query, |stream, nh: Nexthop| {
            stream.tabbed_line(&platform::text::nexthop_text(&nh, &name))
        })
        .map_err(|err| kernel::dump_error(err, "dump nexthops"))?;
        return stream.finish();
    }
    let mut stream = printer.rows(NEXTHOP_FIELDS, &[])?;
    kernel::visit_with(&mut stream, progress, query, |stream, nh: Nexthop| {
        stream.row(&nexthop_row(&nh, &names))
    })
    .map_err(|err| kernel::dump_error(err, "dump nexthops"))?;
    stream.finish()
}
