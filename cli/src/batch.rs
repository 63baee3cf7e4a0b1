//! `batch FILE|-`: `ip -batch`-like lines applied through the platform's pipelined batch.
//!
//! Each line is an `ip` command line (`route add ...`, `addr del ...`), so reading it is the
//! same job as reading the command line: [`parse_line`] turns one into a platform
//! [`Item`], with the names `ip` accepts (tables, protocols, route types) and the scope `ip`
//! would choose. The platform sends the items many per `sendmsg` and reports each refusal.
//!
//! Without `--continue` every line is read first and a malformed one stops everything before
//! anything is sent; then the lines go one per send so that the batch stops exactly at the
//! first line the kernel refuses, as `ip -batch` does. With `--continue` the malformed lines
//! are reported and skipped, and the rest is pipelined (256 per send) with every refusal
//! reported.

use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;
use std::path::Path;

use anyhow::Context;
use netmirror_platform::{self as platform, Address, Item, Op, Route};
use serde_json::{Map, Value};

use crate::args::{BatchArgs, KernelArgs};
use crate::failure::Failure;
use crate::kernel;
use crate::names;
use crate::render::{Mode, Printer};

/// `EPERM`, the kernel's answer to a change without CAP_NET_ADMIN.
const EPERM: i32 = 1;

/// `RT_SCOPE_NOWHERE`: in a delete request, any scope matches.
const RT_SCOPE_NOWHERE: u8 = 255;

/// A line of the batch file that becomes an item.
#[derive(Debug)]
struct Line {
    /// The line number, from 1.
    number: usize,
    /// The line as written.
    text: String,
    /// What it asks for.
    item: Item,
}

/// Runs `batch`.
pub(crate) fn run(
    printer: &mut Printer,
    kernel_args: &KernelArgs,
    args: &BatchArgs,
) -> anyhow::Result<()> {
    let (file_name, text) = read_input(&args.file)?;
    let platform = kernel::open(kernel_args)?;
    let links = platform
        .links()
        .execute()
        .map_err(|err| kernel::explain(err, "dump links"))?;
    let ifindexes: HashMap<String, u32> = links
        .items
        .iter()
        .map(|link| (link.name().to_owned(), link.ifindex()))
        .collect();
    let resolve = |name: &str| ifindexes.get(name).copied();

    let mut lines = Vec::new();
    let mut n_malformed = 0;
    for (idx, raw) in text.lines().enumerate() {
        let number = idx + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match parse_line(trimmed, &resolve) {
            Ok(item) => lines.push(Line {
                number,
                text: trimmed.to_owned(),
                item,
            }),
            Err(reason) if !args.keep_going => {
                return Err(Failure::BatchMalformed {
                    file: file_name,
                    line: number,
                    text: trimmed.to_owned(),
                    reason,
                }
                .into());
            }
            Err(reason) => {
                n_malformed += 1;
                eprintln!(
                    "netmirror: {file_name}:{number}: malformed line `{trimmed}`: {reason}; skipped"
                );
            }
        }
    }

    let mut batch = platform
        .batch()
        .extend(lines.iter().map(|line| line.item.clone()));
    if !args.keep_going {
        batch = batch.stop_on_error(true).per_send(1);
    }
    let progress = crate::progress::Progress::start("applying batch");
    let report = batch
        .execute()
        .map_err(|err| kernel::explain(err, "apply the batch"))?;
    drop(progress);

    let mut failures = Vec::new();
    for failure in &report.failures {
        let Some(line) = lines.get(failure.index) else {
            continue;
        };
        eprintln!(
            "netmirror: {file_name}:{}: `{}`: {}",
            line.number, line.text, failure.error
        );
        let mut object = Map::new();
        object.insert("line".to_owned(), Value::from(line.number));
        object.insert("text".to_owned(), Value::from(line.text.as_str()));
        object.insert("error".to_owned(), Value::from(failure.error.to_string()));
        failures.push(Value::Object(object));
    }
    match printer.mode() {
        Mode::Json => {
            let mut object = Map::new();
            object.insert("applied".to_owned(), Value::from(report.n_ok));
            object.insert("failed".to_owned(), Value::Array(failures));
            object.insert("malformed".to_owned(), Value::from(n_malformed));
            object.insert("skipped".to_owned(), Value::from(report.n_skipped));
            printer.json(&Value::Object(object))?;
        }
        Mode::Human | Mode::Terse => {
            let mut summary = format!(
                "{} of {} lines applied",
                report.n_ok,
                lines.len() + n_malformed
            );
            if report.n_skipped > 0 {
                summary.push_str(&format!(
                    ", {} not sent after the first failure",
                    report.n_skipped
                ));
            }
            printer.note(&summary)?;
        }
    }
    let failed = report.failures.len() + n_malformed;
    let all_refused_for_permission = !report.failures.is_empty()
        && report
            .failures
            .iter()
            .all(|failure| failure.error.errno == EPERM);
    if all_refused_for_permission && report.n_ok == 0 {
        printer.flush()?;
        return Err(Failure::PermissionDenied {
            what: "change routes and addresses".to_owned(),
        }
        .into());
    }
    if failed > 0 {
        printer.flush()?;
        return Err(Failure::BatchFailed {
            failed,
            total: lines.len() + n_malformed,
        }
        .into());
    }
    Ok(())
}

/// Reads the batch file, or stdin for `-`; returns the name to report lines with.
fn read_input(path: &Path) -> anyhow::Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the batch from stdin")?;
        return Ok(("-".to_owned(), text));
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read batch file {}", path.display()))?;
    Ok((path.display().to_string(), text))
}

/// Reads one `ip` command line into a batch item; `ifindex` resolves device names.
pub(crate) fn parse_line(
    line: &str,
    ifindex: &dyn Fn(&str) -> Option<u32>,
) -> Result<Item, String> {
    let mut words: Vec<&str> = line.split_whitespace().collect();
    // `ip -batch` lines may carry a family option; the prefix says the family anyway.
    words.retain(|word| !matches!(*word, "-4" | "-6"));
    let (object, rest) = words.split_first().ok_or("empty line")?;
    let (verb, args) = rest
        .split_first()
        .ok_or("missing command (add, del or replace)")?;
    let op = match *verb {
        "add" => Op::Add,
        "del" | "delete" => Op::Delete,
        "replace" => Op::Replace,
        other => {
            return Err(format!(
                "unknown command `{other}` (expected add, del or replace)"
            ));
        }
    };
    match *object {
        "route" | "r" | "ro" => parse_route(op, args, ifindex).map(|route| Item::Route(op, route)),
        "addr" | "address" | "a" => parse_addr(args, ifindex).map(|addr| Item::Address(op, addr)),
        other => Err(format!("unknown object `{other}` (expected route or addr)")),
    }
}

/// `PREFIX|default [via GW] [dev DEV] [table T] [metric N] [proto P] [scope S] [src A]`, with
/// an optional route type before the prefix. A delete leaves protocol, scope and type as
/// wildcards unless given, as `ip route del` does.
fn parse_route(
    op: Op,
    args: &[&str],
    ifindex: &dyn Fn(&str) -> Option<u32>,
) -> Result<Route, String> {
    let delete = op == Op::Delete;
    let mut words = args.iter().copied().peekable();
    let mut kind = None;
    if let Some(word) = words.peek()
        && let Some(id) = names::parse_route_type(word).filter(|_| word.parse::<u8>().is_err())
    {
        kind = Some(id);
        words.next();
    }
    let prefix = words.next().ok_or("missing the route's prefix")?;
    let mut gateway = None;
    let mut dev = None;
    let mut table = None;
    let mut metric = None;
    let mut proto = None;
    let mut scope = None;
    let mut prefsrc = None;
    while let Some(keyword) = words.next() {
        let value = words
            .next()
            .ok_or_else(|| format!("`{keyword}` needs a value"))?;
        match keyword {
            "via" => gateway = Some(parse_addr_value(value)?),
            "dev" | "oif" => {
                dev = Some(ifindex(value).ok_or_else(|| format!("cannot find device \"{value}\""))?)
            }
            "table" => {
                table = Some(
                    names::parse_table(value).ok_or_else(|| format!("unknown table `{value}`"))?,
                )
            }
            "metric" | "priority" | "preference" => {
                metric = Some(
                    value
                        .parse::<u32>()
                        .map_err(|_| format!("bad metric `{value}`"))?,
                )
            }
            "proto" | "protocol" => {
                proto = Some(
                    names::parse_protocol(value)
                        .ok_or_else(|| format!("unknown protocol `{value}`"))?,
                )
            }
            "scope" => scope = Some(parse_scope(value)?),
            "src" => prefsrc = Some(parse_addr_value(value)?),
            other => return Err(format!("unknown route keyword `{other}`")),
        }
    }
    let is_v6 = prefix.contains(':') || gateway.is_some_and(|gw: IpAddr| gw.is_ipv6());
    let (dst, dst_len) = match prefix {
        "default" | "all" | "any" => (
            if is_v6 {
                IpAddr::from([0u16; 8])
            } else {
                IpAddr::from([0u8; 4])
            },
            0,
        ),
        prefix => parse_prefix(prefix)?,
    };
    let explicit_kind = kind.is_some();
    let kind = kind.unwrap_or(platform::RTN_UNICAST);
    let mut route =
        Route::new(dst, dst_len).with_kind(if delete && !explicit_kind { 0 } else { kind });
    if let Some(gateway) = gateway {
        if gateway.is_ipv6() != dst.is_ipv6() {
            return Err("the gateway's family differs from the prefix's".to_owned());
        }
        route = route.with_gateway(gateway);
    }
    if let Some(dev) = dev {
        route = route.with_oif(dev);
    }
    if let Some(table) = table {
        route = route.with_table(table);
    } else if kind == platform::RTN_LOCAL || kind == 3 {
        // `ip` puts local and broadcast routes in the local table.
        route = route.with_table(platform::TABLE_LOCAL);
    }
    if let Some(metric) = metric {
        route = route.with_priority(metric);
    }
    match proto {
        Some(proto) => route = route.with_protocol(proto),
        None if delete => route = route.with_protocol(0),
        None => {}
    }
    // The scope `ip` chooses: host for local routes, link for broadcast ones and for
    // unicast routes without a gateway, universe otherwise.
    let scope = scope.unwrap_or(match kind {
        _ if delete => RT_SCOPE_NOWHERE,
        platform::RTN_LOCAL => platform::RT_SCOPE_HOST,
        3..=5 => platform::RT_SCOPE_LINK,
        platform::RTN_UNICAST if gateway.is_none() && dev.is_some() => platform::RT_SCOPE_LINK,
        _ => platform::RT_SCOPE_UNIVERSE,
    });
    route = route.with_scope(scope);
    if let Some(prefsrc) = prefsrc {
        route = route.with_prefsrc(prefsrc);
    }
    if !delete && kind == platform::RTN_UNICAST && gateway.is_none() && dev.is_none() {
        return Err("a unicast route needs `via GATEWAY` or `dev DEVICE`".to_owned());
    }
    Ok(route)
}

/// `PREFIX dev DEV [broadcast ADDR]`.
fn parse_addr(args: &[&str], ifindex: &dyn Fn(&str) -> Option<u32>) -> Result<Address, String> {
    let mut words = args.iter().copied();
    let prefix = words.next().ok_or("missing the address")?;
    let (addr, prefix_len) = parse_prefix(prefix)?;
    let mut dev = None;
    let mut broadcast = None;
    while let Some(keyword) = words.next() {
        let value = words
            .next()
            .ok_or_else(|| format!("`{keyword}` needs a value"))?;
        match keyword {
            "dev" => {
                dev = Some(ifindex(value).ok_or_else(|| format!("cannot find device \"{value}\""))?)
            }
            "broadcast" | "brd" => match parse_addr_value(value)? {
                IpAddr::V4(v4) => broadcast = Some(v4),
                IpAddr::V6(_) => return Err("broadcast is IPv4 only".to_owned()),
            },
            other => return Err(format!("unknown address keyword `{other}`")),
        }
    }
    let dev = dev.ok_or("an address needs `dev DEVICE`")?;
    let mut address = Address::new(dev, addr, prefix_len);
    if let Some(broadcast) = broadcast {
        address = address.with_broadcast(broadcast);
    }
    Ok(address)
}

/// `ADDR/LEN`, or a bare address (a host prefix).
fn parse_prefix(text: &str) -> Result<(IpAddr, u8), String> {
    let (addr, len) = match text.split_once('/') {
        Some((addr, len)) => (addr, Some(len)),
        None => (text, None),
    };
    let addr = parse_addr_value(addr)?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = match len {
        Some(len) => len
            .parse::<u8>()
            .ok()
            .filter(|len| *len <= max)
            .ok_or_else(|| format!("bad prefix length in `{text}`"))?,
        None => max,
    };
    Ok((addr, len))
}

fn parse_addr_value(text: &str) -> Result<IpAddr, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not an IP address"))
}

fn parse_scope(text: &str) -> Result<u8, String> {
    match text {
        "global" | "universe" => Ok(platform::RT_SCOPE_UNIVERSE),
        "site" => Ok(200),
        "link" => Ok(platform::RT_SCOPE_LINK),
        "host" => Ok(platform::RT_SCOPE_HOST),
        "nowhere" => Ok(RT_SCOPE_NOWHERE),
        number => number
            .parse()
            .map_err(|_| format!("unknown scope `{text}`")),
    }
}

#[cfg(test)]
mod tests;
