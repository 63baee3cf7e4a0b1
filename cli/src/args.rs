//! The command line: every subcommand, flag and selector as clap derive types.
//!
//! Parsing is the only thing done here. The `ip`-style selectors (`table 100 dev eth0`) are
//! words after the subcommand; they are turned into typed filters by [`RouteSelector::parse`]
//! and friends so that a mistake is a usage error (exit status 2) like any other.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Examples shown at the end of `netmirror --help`.
const TOP_EXAMPLES: &str = "\
Examples:
  netmirror                          overview of this host
  netmirror link                     links, like `ip link`
  netmirror addr show dev eth0       addresses of one link
  netmirror route show table all -6  every IPv6 route
  netmirror route count              route counts and cache memory per route
  netmirror rule --json              routing rules as JSON
  netmirror monitor route            route changes as they happen
  netmirror batch routes.txt         apply `ip -batch`-like lines
  netmirror nm device                NetworkManager devices, like `nmcli device`
  netmirror -t -f DEVICE,STATE nm device
  netmirror objects --service org.freedesktop.UDisks2
";

/// A fast nmcli- and ip-style view of this host's network state, with JSON and monitors.
#[derive(Debug, Parser)]
#[command(name = "netmirror", version, about, after_help = TOP_EXAMPLES)]
#[command(propagate_version = true, max_term_width = 100)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) output: OutputArgs,
    #[command(flatten)]
    pub(crate) kernel: KernelArgs,
    #[command(flatten)]
    pub(crate) bus: BusArgs,
    /// More log output on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// How results are printed.
#[derive(Debug, Clone, Args)]
pub(crate) struct OutputArgs {
    /// Print JSON: an array of objects for lists, one object per line for monitors.
    #[arg(long, global = true, conflicts_with = "terse")]
    pub(crate) json: bool,
    /// Terse output for scripts, like `nmcli -t`: no header, fields separated by `:`,
    /// with `:` and `\` escaped by `\`.
    #[arg(short, long, global = true)]
    pub(crate) terse: bool,
    /// Comma-separated fields to print (column names, case-insensitive), or `all`.
    #[arg(
        short,
        long,
        global = true,
        value_name = "FIELD,...",
        value_delimiter = ','
    )]
    pub(crate) fields: Vec<String>,
    /// When to colour human output: `auto` (on a terminal, unless `NO_COLOR` is set or
    /// `CLICOLOR=0`; `CLICOLOR_FORCE` other than `0` forces it), `always` or `never`.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: ColorChoice,
}

/// `--color`: when human output is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// On a terminal, following the `NO_COLOR`/`CLICOLOR`/`CLICOLOR_FORCE` conventions.
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Links, like `ip link`.
    #[command(
        visible_alias = "l",
        after_help = "Example:\n  netmirror link show eth0"
    )]
    Link(LinkArgs),
    /// Addresses, like `ip addr`.
    #[command(
        visible_alias = "a",
        alias = "address",
        after_help = "Example:\n  netmirror addr show dev eth0 -4"
    )]
    Addr(AddrArgs),
    /// Routing rules, like `ip rule`.
    #[command(after_help = "Example:\n  netmirror rule -6")]
    Rule(RuleArgs),
    /// Routes, like `ip route`; the kernel applies the filters it can, the rest are checked here.
    #[command(
        visible_alias = "r",
        args_conflicts_with_subcommands = true,
        after_help = "Examples:\n  netmirror route show table all dev eth0 proto static\n  \
                      netmirror route count"
    )]
    Route(RouteArgs),
    /// Nexthop objects, like `ip nexthop`.
    #[command(
        visible_alias = "nh",
        after_help = "Examples:\n  netmirror nexthop\n  netmirror nexthop show id 10\n  \
                      netmirror --json nexthop show dev eth0"
    )]
    Nexthop(NexthopArgs),
    /// Kernel changes as they happen, each with its old and new value.
    #[command(after_help = "Example:\n  netmirror --json monitor route link")]
    Monitor(MonitorArgs),
    /// Apply `ip -batch`-like lines (`route add ...`, `addr del ...`, `rule add ...`).
    #[command(after_help = BATCH_HELP)]
    Batch(BatchArgs),
    /// NetworkManager: general state, devices, profiles, active connections, monitor.
    #[command(after_help = "Examples:\n  netmirror nm device eth0\n  \
                            netmirror --bus session nm general")]
    Nm(NmArgs),
    /// Objects of any D-Bus ObjectManager service (typed where declared, generic otherwise).
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = "Examples:\n  netmirror objects --service org.freedesktop.NetworkManager \
                      --interface org.freedesktop.NetworkManager.Device\n  \
                      netmirror objects monitor --service org.bluez"
    )]
    Objects(ObjectsArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Example:\n  netmirror completions bash > /etc/bash_completion.d/netmirror"
    )]
    Completions {
        /// The shell to generate completions for.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), as installed in `man1/netmirror.1`.
    #[command(hide = true)]
    Man,
}

const BATCH_HELP: &str = "\
Each line is one command, as `ip -batch` takes them:
  route add|del|replace|change|append|prepend [to] PREFIX [via GW] [dev DEV] [table ID]
                        [metric N] [proto P] [type T] [tos T] [nhid ID]
  addr add|del|replace|change PREFIX dev DEV [peer PREFIX] [broadcast A|+|-] [label NAME] [scope S]
                        [metric N] [proto P] [valid_lft S] [preferred_lft S] [FLAG]...
                        (FLAG: home nodad optimistic mngtmpaddr noprefixroute autojoin)
  nexthop add|replace id ID [via GW] [dev DEV] [onlink] | blackhole | group ID[,W]/...
                        [type mpath|resilient] [buckets N] [fdb] [proto P]
  nexthop del id ID
  rule add|del [not] [from PREFIX] [to PREFIX] [tos T] [fwmark M[/MASK]] [iif NAME] [oif NAME]
                        [pref N] [uidrange A-B] [ipproto P] [sport|dport P[-P|/MASK]]
                        [dscp D[/MASK]] [flowlabel L[/MASK]] [tun_id N] [l3mdev]
                        [table T] [proto P] [realms [F/]T] [suppress_prefixlength N]
                        [suppress_ifgroup G] [blackhole|unreachable|prohibit|goto N|nop]
A rule is IPv4 unless its addresses are IPv6 or -6 is given (`netmirror -6 batch` is
`ip -6 -batch`: -4 or -6 applies to every line).
A `#` starts a comment, a line ending in `\\` goes on with the next, and a word in quotes may
hold spaces; empty lines are skipped. Requests are pipelined to the kernel.

Without --continue, the file is checked first: a malformed line applies nothing, and the first
line the kernel refuses stops the batch (lines before it stay applied). With --continue, every
well-formed line is sent and every failing line is reported. Each failure is reported as
`LINE: TEXT: MESSAGE`; the exit status is 1 when any line failed.

Example:
  printf 'route add 10.1.0.0/24 dev eth0\\naddr add 10.2.0.1/24 dev eth0\\n' | netmirror batch -";

/// Options of the kernel subcommands, accepted before or after the subcommand (`ip -n NS`
/// style or after it).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct KernelArgs {
    /// Network namespace: a name under /run/netns or a path such as /proc/PID/ns/net.
    #[arg(long, global = true, value_name = "NAME|PATH")]
    pub(crate) netns: Option<String>,
    /// IPv4 only.
    #[arg(short = '4', global = true, conflicts_with = "ipv6")]
    pub(crate) ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', global = true)]
    pub(crate) ipv6: bool,
    /// Every attribute, as `ip -d` prints it (routes, links, addresses, rules: one `ip`-style
    /// line per object, one `nexthop` line per hop of a multipath route); `monitor` prints each
    /// change as `ip -d monitor` does.
    #[arg(short = 'd', long, global = true)]
    pub(crate) details: bool,
}

impl KernelArgs {
    /// The address family asked for, if any.
    pub(crate) fn family(&self) -> Option<Family> {
        match (self.ipv4, self.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        }
    }
}

/// An address family chosen with `-4` or `-6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    V4,
    V6,
}

/// `link [show] [DEV]`.
#[derive(Debug, Args)]
pub(crate) struct LinkArgs {
    /// `show` (optional), then any of `[dev] DEV`, `up`, `master DEV`, `vrf NAME`,
    /// `nomaster`, `type KIND` (`KIND_slave`: the ports of such links), `group G`, as `ip link
    /// show` takes them.
    #[arg(value_name = "show] [SELECTOR")]
    pub(crate) words: Vec<String>,
}

/// `addr [show] [SELECTOR]...`.
#[derive(Debug, Args)]
pub(crate) struct AddrArgs {
    /// `show` (optional), then any of `[dev] DEV`, `up`, `master DEV`, `vrf NAME`,
    /// `nomaster`, `type KIND`, `group G`, `scope S`, `to PREFIX`, `label PATTERN` and address
    /// flags (`permanent`, `dynamic`, `secondary`, `primary`, `tentative`, `-tentative`, ...),
    /// as `ip addr show` takes them.
    #[arg(value_name = "show] [SELECTOR")]
    pub(crate) words: Vec<String>,
}

/// `nexthop [show] [SELECTOR]...`.
#[derive(Debug, Args)]
pub(crate) struct NexthopArgs {
    /// `show` (optional), then any of `id N`, `dev DEV`, `master DEV`, `vrf NAME`, `groups`,
    /// `fdb`, `protocol P`, as `ip nexthop show` takes them.
    #[arg(value_name = "show] [SELECTOR")]
    pub(crate) words: Vec<String>,
}

/// `rule [show] [SELECTOR]...`.
#[derive(Debug, Args)]
pub(crate) struct RuleArgs {
    /// `show` (optional), then `ip rule show`'s selectors: `pref N`, `not`, `from PREFIX`,
    /// `to PREFIX`, `tos T`, `fwmark M[/MASK]`, `iif DEV`, `oif DEV`, `l3mdev`, `uidrange A-B`,
    /// `tun_id N`, `table T`, `protocol P`, `ipproto P`, `sport N[-M]`, `dport N[-M]`.
    #[arg(value_name = "show] [SELECTOR")]
    pub(crate) words: Vec<String>,
}

/// `route [show|count] [SELECTOR]...`.
#[derive(Debug, Args)]
pub(crate) struct RouteArgs {
    #[command(subcommand)]
    pub(crate) action: Option<RouteAction>,
    /// `table ID|NAME|all`, `dev DEV`, `iif DEV`, `proto P`, `type T`, `scope S`, `tos T`,
    /// `metric N`, `realms [FROM/]TO`, `mark N`, `via PREFIX`, `src PREFIX`, `from PREFIX`,
    /// `[to] [exact|root|match] PREFIX`.
    #[arg(value_name = "SELECTOR")]
    pub(crate) words: Vec<String>,
}

/// What `route` does.
#[derive(Debug, Subcommand)]
pub(crate) enum RouteAction {
    /// Print routes (the default).
    #[command(visible_alias = "list", alias = "ls")]
    Show {
        /// `table ID|NAME|all`, `dev DEV`, `iif DEV`, `proto P`, `type T`, `scope S`, `tos T`,
        /// `metric N`, `realms [FROM/]TO`, `mark N`, `via PREFIX`, `src PREFIX`, `from PREFIX`,
        /// `[to] [exact|root|match] PREFIX`.
        #[arg(value_name = "SELECTOR")]
        words: Vec<String>,
    },
    /// Load the whole cache and print route counts per table and family, and memory per route.
    Count,
}

/// `monitor [link|addr|route|rule]...`.
#[derive(Debug, Args)]
pub(crate) struct MonitorArgs {
    /// What to watch; everything when none is given.
    #[arg(value_enum)]
    pub(crate) objects: Vec<MonitorObject>,
    /// Read the links again every SECS seconds (0: never): the kernel announces no change to
    /// a down link's group, alias or kind settings, nor a sysctl write of a link's
    /// addr_gen_mode.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_secs)]
    pub(crate) link_refresh: std::time::Duration,
}

/// A number of seconds (`5`, `0.5`, `0`).
fn parse_secs(text: &str) -> Result<std::time::Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|secs| std::time::Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("`{text}` is not a number of seconds"))
}

/// An object kind `monitor` can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MonitorObject {
    Link,
    #[value(alias = "address")]
    Addr,
    Route,
    Rule,
    #[value(alias = "nh")]
    Nexthop,
}

/// `batch FILE|- [--continue]`.
#[derive(Debug, Args)]
pub(crate) struct BatchArgs {
    /// Apply every well-formed line and report each failure, instead of stopping at the first.
    #[arg(long = "continue", short = 'c')]
    pub(crate) keep_going: bool,
    /// The batch file, or `-` for standard input.
    #[arg(value_name = "FILE|-")]
    pub(crate) file: PathBuf,
}

/// Which D-Bus bus to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bus {
    /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured).
    System,
    /// The session bus.
    Session,
    /// A bus at this address, such as `unix:path=/run/bus`.
    Address(String),
}

impl std::str::FromStr for Bus {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "system" => Ok(Bus::System),
            "session" => Ok(Bus::Session),
            _ if text.contains(':') => Ok(Bus::Address(text.to_owned())),
            _ => Err("expected `system`, `session` or a D-Bus address such as \
                      `unix:path=/run/dbus/system_bus_socket`"
                .to_owned()),
        }
    }
}

impl std::fmt::Display for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bus::System => f.write_str("system bus"),
            Bus::Session => f.write_str("session bus"),
            Bus::Address(address) => write!(f, "bus at {address}"),
        }
    }
}

/// Options of the D-Bus subcommands, accepted before or after the subcommand.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct BusArgs {
    /// `system` (the default; `DBUS_SYSTEM_BUS_ADDRESS` is honoured), `session` or an address.
    #[arg(long = "bus", global = true, value_name = "system|session|ADDRESS")]
    pub(crate) choice: Option<Bus>,
    /// How long each D-Bus call may wait for its reply, in seconds (default 25, as libnm).
    #[arg(long, global = true, value_name = "SECONDS", value_parser = parse_timeout)]
    pub(crate) timeout: Option<std::time::Duration>,
}

impl BusArgs {
    /// The bus asked for: the system bus unless `--bus` says otherwise.
    pub(crate) fn bus(&self) -> Bus {
        self.choice.clone().unwrap_or(Bus::System)
    }

    /// The deadline of each D-Bus call.
    pub(crate) fn timeout(&self) -> std::time::Duration {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT)
    }
}

/// The deadline of a D-Bus call unless `--timeout` says otherwise: libdbus's and libnm's.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(25);

/// `--timeout`: a positive, finite number of seconds.
fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds <= 86_400.0 * 365.0) {
        return Err(format!(
            "`{text}`: the timeout must be more than 0 seconds, and finite"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

/// `nm ...`.
#[derive(Debug, Args)]
pub(crate) struct NmArgs {
    #[command(subcommand)]
    pub(crate) action: Option<NmAction>,
}

/// What `nm` shows.
#[derive(Debug, Subcommand)]
pub(crate) enum NmAction {
    /// NetworkManager's overall state, like `nmcli general` (the default).
    #[command(alias = "g", after_help = "Example:\n  netmirror nm general")]
    General,
    /// Devices, like `nmcli device`; one device in detail, asked of the server, with IFACE.
    #[command(
        alias = "d",
        alias = "dev",
        after_help = "Example:\n  netmirror nm device eth0"
    )]
    #[command(args_conflicts_with_subcommands = true)]
    Device {
        /// An interface name.
        iface: Option<String>,
        /// With IFACE: also the kernel's addresses and routes on it (from rtnetlink, in the
        /// namespace of `--netns`), each marked where NetworkManager's IP4/IP6 differ.
        #[arg(long, requires = "iface")]
        kernel: bool,
        /// A change: `connect|disconnect|reapply DEV`, `set DEV managed yes|no`.
        #[command(subcommand)]
        edit: Option<crate::nm_actions::DeviceEdit>,
    },
    /// Connection profiles, like `nmcli connection`; one in detail with ID or UUID.
    #[command(
        alias = "c",
        alias = "con",
        after_help = "Example:\n  netmirror nm connection"
    )]
    #[command(args_conflicts_with_subcommands = true)]
    Connection {
        /// A profile's id (name) or UUID.
        #[arg(value_name = "ID|UUID")]
        id: Option<String>,
        /// With ID: the profile's secrets too (asked of the daemon with `GetSecrets`), as
        /// `nmcli --show-secrets connection show ID` prints them.
        #[arg(short = 's', long)]
        show_secrets: bool,
        /// A change: `up|down|add|modify|delete|reload`.
        #[command(subcommand)]
        edit: Option<crate::nm_actions::ConnectionEdit>,
    },
    /// Active connections, like `nmcli connection show --active`.
    #[command(alias = "a", after_help = "Example:\n  netmirror nm active")]
    Active,
    /// Turn networking on or off, like `nmcli networking on|off`.
    #[command(after_help = "Example:\n  netmirror nm networking off")]
    Networking {
        /// `on` or `off`.
        state: crate::nm_actions::OnOff,
    },
    /// Switch a radio on or off, like `nmcli radio wifi|wwan on|off`.
    #[command(after_help = "Example:\n  netmirror nm radio wifi off")]
    Radio {
        /// `wifi` or `wwan`.
        radio: crate::nm_actions::RadioName,
        /// `on` or `off`.
        state: crate::nm_actions::OnOff,
    },
    /// Checkpoints: create one, roll back to it, or destroy it.
    #[command(after_help = "Example:\n  netmirror nm checkpoint create --rollback-after 60 eth0")]
    Checkpoint {
        /// What to do.
        #[command(subcommand)]
        action: crate::nm_actions::CheckpointAction,
    },
    /// Changes to devices, profiles and active connections as they happen.
    #[command(alias = "m", after_help = "Example:\n  netmirror --json nm monitor")]
    Monitor,
}

/// `objects --service NAME [--path P] [--interface I]` and `objects monitor`.
#[derive(Debug, Args)]
pub(crate) struct ObjectsArgs {
    #[command(flatten)]
    pub(crate) target: ObjectsTarget,
    #[command(subcommand)]
    pub(crate) action: Option<ObjectsAction>,
}

/// Which service's objects.
#[derive(Debug, Clone, Args)]
pub(crate) struct ObjectsTarget {
    /// The service's well-known bus name, such as `org.freedesktop.NetworkManager`.
    #[arg(long, short = 's', value_name = "NAME")]
    pub(crate) service: Option<String>,
    /// Only this object (asked of the server with one GetAll).
    #[arg(long, short = 'p', value_name = "OBJECT_PATH")]
    pub(crate) path: Option<String>,
    /// Only objects that have this interface, and only its properties.
    #[arg(long, short = 'i', value_name = "INTERFACE")]
    pub(crate) interface: Option<String>,
    /// The path of the service's ObjectManager (default `/`; NetworkManager's is found by
    /// itself).
    #[arg(long, short = 'm', value_name = "OBJECT_PATH")]
    pub(crate) manager: Option<String>,
    /// Record the cache's conversation with the service to FILE (replay it with --replay).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub(crate) record: Option<std::path::PathBuf>,
    /// List the objects of a recording made with --record, replayed without a bus.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["service", "path", "manager"])]
    pub(crate) replay: Option<std::path::PathBuf>,
}

/// What `objects` does besides listing.
#[derive(Debug, Subcommand)]
pub(crate) enum ObjectsAction {
    /// Print objects as they are added, changed and removed.
    #[command(
        after_help = "Example:\n  netmirror objects monitor --service org.freedesktop.NetworkManager"
    )]
    Monitor {
        #[command(flatten)]
        target: ObjectsTarget,
    },
}

/// A usage error found after clap's parsing (a selector word clap cannot check).
pub(crate) fn usage_error(message: impl std::fmt::Display) -> clap::Error {
    use clap::CommandFactory;
    Cli::command().error(clap::error::ErrorKind::InvalidValue, message)
}

/// Drops a leading `show`/`list`/`ls` word, as `ip` allows.
pub(crate) fn strip_show(words: &[String]) -> &[String] {
    match words.first().map(String::as_str) {
        Some("show" | "list" | "ls" | "lst") => &words[1..],
        _ => words,
    }
}

/// The selector words of `link show` and `addr show`, as `ip link show` and `ip addr show`
/// take them: one device (`[dev] DEV`), `up`, `master DEV`, `vrf NAME`, `nomaster`, `type
/// KIND` (`KIND_slave` for the ports of such links), `group G`; and for addresses, `scope S`,
/// `to PREFIX`, `label PATTERN` and flags (`permanent`, `dynamic`, `secondary`, `primary`,
/// `tentative`, `-tentative`, ...).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct DeviceSelector {
    pub(crate) dev: Option<String>,
    pub(crate) up: bool,
    /// `master DEV` or `vrf NAME` (the second: `true`, the device must be a VRF).
    pub(crate) master: Option<(String, bool)>,
    pub(crate) nomaster: bool,
    pub(crate) kind: Option<String>,
    pub(crate) group: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) label: Option<String>,
    /// Address flags that must be set, and that must be clear.
    pub(crate) flags: (u32, u32),
}

impl DeviceSelector {
    /// Reads the words of `command` (`link` or `addr`; only `addr` takes the address words).
    pub(crate) fn parse(command: &str, words: &[String]) -> Result<Self, clap::Error> {
        let addr = command == "addr";
        let mut selector = DeviceSelector::default();
        let mut words = strip_show(words).iter().map(String::as_str);
        let value = |keyword: &str, words: &mut dyn Iterator<Item = &str>| {
            words
                .next()
                .map(str::to_owned)
                .ok_or_else(|| usage_error(format!("`{keyword}` needs a value")))
        };
        while let Some(word) = words.next() {
            match word {
                "dev" => {
                    let dev = value(word, &mut words)?;
                    set_once(&mut selector.dev, dev, "a device")?;
                }
                "up" => selector.up = true,
                "master" | "vrf" => {
                    let dev = value(word, &mut words)?;
                    set_once(&mut selector.master, (dev, word == "vrf"), "a master")?;
                }
                "nomaster" => selector.nomaster = true,
                "type" => {
                    let kind = value(word, &mut words)?;
                    set_once(&mut selector.kind, kind, "a type")?;
                }
                "group" => {
                    let group = value(word, &mut words)?;
                    set_once(&mut selector.group, group, "a group")?;
                }
                "scope" if addr => {
                    let scope = value(word, &mut words)?;
                    set_once(&mut selector.scope, scope, "a scope")?;
                }
                "to" if addr => {
                    let to = value(word, &mut words)?;
                    set_once(&mut selector.to, to, "a prefix")?;
                }
                "label" if addr => {
                    let label = value(word, &mut words)?;
                    set_once(&mut selector.label, label, "a label")?;
                }
                word if let Some((bits, set)) = address_flag(word).filter(|_| addr) => {
                    if set {
                        selector.flags.0 |= bits;
                    } else {
                        selector.flags.1 |= bits;
                    }
                }
                dev if !dev.starts_with(['-', '!']) && selector.dev.is_none() => {
                    selector.dev = Some(dev.to_owned());
                }
                other => {
                    return Err(usage_error(format!(
                        "unknown {command} selector `{other}` (expected [dev] DEV, up, master \
                         DEV, vrf NAME, nomaster, type KIND, group G{})",
                        if addr {
                            ", scope S, to PREFIX, label PATTERN or a flag"
                        } else {
                            ""
                        }
                    )));
                }
            }
        }
        Ok(selector)
    }
}

/// `[exact|root|match] PREFIX` after `keyword` (its first word `first` when already read):
/// the prefix as written, and how to compare (`exact` when not said).
fn qualified_prefix<'a>(
    keyword: &str,
    first: Option<&'a str>,
    words: &mut impl Iterator<Item = &'a String>,
) -> Result<(String, netmirror_platform::DstMatch), clap::Error> {
    use netmirror_platform::DstMatch;
    let mut next = || {
        words
            .next()
            .map(String::as_str)
            .ok_or_else(|| usage_error(format!("`{keyword}` needs a prefix")))
    };
    let mut word = match first {
        Some(word) => word,
        None => next()?,
    };
    let how = match word {
        "root" => DstMatch::Root,
        "match" => DstMatch::Match,
        _ => DstMatch::Exact,
    };
    if matches!(word, "root" | "match" | "exact") {
        word = next()?;
    }
    Ok((word.to_owned(), how))
}

/// Stores a selector's value, refusing a second one.
fn set_once<T>(slot: &mut Option<T>, value: T, what: &str) -> Result<(), clap::Error> {
    if slot.replace(value).is_some() {
        return Err(usage_error(format!("{what} given twice")));
    }
    Ok(())
}

/// The address flags `ip addr show` takes (asking them set), each also with a `-` before it
/// (asking it clear); `primary` and `dynamic` besides.
const NEGATABLE_FLAGS: &[&str] = &[
    "tentative",
    "deprecated",
    "dadfailed",
    "home",
    "nodad",
    "optimistic",
    "mngtmpaddr",
    "noprefixroute",
    "autojoin",
    "secondary",
    "temporary",
    "permanent",
];

/// The command line with each `-FLAG` of [`NEGATABLE_FLAGS`] written `!FLAG`, so that clap
/// takes it as a word rather than as short options (`-t -e -n ...`); no option of netmirror
/// is spelled so.
pub(crate) fn protect_negated_flags(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    args.map(|arg| match arg.to_str().and_then(|a| a.strip_prefix('-')) {
        Some(flag) if NEGATABLE_FLAGS.contains(&flag) => format!("!{flag}").into(),
        _ => arg,
    })
    .collect()
}

/// An address flag word of `ip addr show`: its bits, and whether they must be set (`-` before
/// a flag, written `!` once the command line is read, and `primary` and `dynamic` ask them
/// clear).
fn address_flag(word: &str) -> Option<(u32, bool)> {
    let (name, set) = match word.strip_prefix(['-', '!']) {
        Some(name) => (name, false),
        None => (word, true),
    };
    let (flag, set) = match name {
        // `primary` and `dynamic` ask `secondary` and `permanent` clear.
        "primary" if set => ("secondary", false),
        "dynamic" if set => ("permanent", false),
        "temporary" => ("secondary", set),
        name if NEGATABLE_FLAGS.contains(&name) => (name, set),
        _ => return None,
    };
    Some((netmirror_platform::names::address_flag_bit(flag)?, set))
}

/// The selector words of `route show`, as written; the platform crate gives them meaning.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RouteSelector {
    /// `table ID|NAME|all`.
    pub(crate) table: Option<String>,
    /// `dev DEV`.
    pub(crate) dev: Option<String>,
    /// `proto P`.
    pub(crate) proto: Option<String>,
    /// `type T`.
    pub(crate) kind: Option<String>,
    /// `[to] [exact|root|match] PREFIX` (`default` for the zero-length prefix): the prefix as
    /// written, and how to compare.
    pub(crate) dst: Option<(String, netmirror_platform::DstMatch)>,
    /// `from [exact|root|match] PREFIX`: the source prefix, and how to compare.
    pub(crate) src: Option<(String, netmirror_platform::DstMatch)>,
    /// `via [inet|inet6] PREFIX`, and whether the family was named.
    pub(crate) via: Option<(String, bool)>,
    /// `src PREFIX` (the preferred source).
    pub(crate) prefsrc: Option<String>,
    /// `scope S`.
    pub(crate) scope: Option<String>,
    /// `tos T` (`dsfield T`).
    pub(crate) tos: Option<String>,
    /// `metric N` (`priority N`, `preference N`).
    pub(crate) metric: Option<String>,
    /// `iif DEV`.
    pub(crate) iif: Option<String>,
    /// `realms [FROM/]TO` (`realm`).
    pub(crate) realms: Option<String>,
    /// `mark N`.
    pub(crate) mark: Option<String>,
}

impl RouteSelector {
    /// Reads `KEYWORD VALUE` pairs; a repeated or unknown keyword is a usage error.
    pub(crate) fn parse(words: &[String]) -> Result<Self, clap::Error> {
        let mut selector = RouteSelector::default();
        let mut words = strip_show(words).iter();
        while let Some(keyword) = words.next() {
            let slot = match keyword.as_str() {
                "table" => &mut selector.table,
                "dev" | "oif" => &mut selector.dev,
                "proto" | "protocol" => &mut selector.proto,
                "type" => &mut selector.kind,
                "src" => &mut selector.prefsrc,
                "scope" => &mut selector.scope,
                "tos" | "dsfield" => &mut selector.tos,
                "metric" | "priority" | "preference" => &mut selector.metric,
                "iif" => &mut selector.iif,
                "realms" | "realm" => &mut selector.realms,
                "mark" => &mut selector.mark,
                "via" => {
                    // As `ip`: the family may be named first.
                    let mut value = words.next().map(String::as_str);
                    let named = matches!(value, Some("inet" | "inet6"));
                    if named {
                        value = words.next().map(String::as_str);
                    }
                    let value =
                        value.ok_or_else(|| usage_error("`via` needs an address or prefix"))?;
                    set_once(&mut selector.via, (value.to_owned(), named), "`via`")?;
                    continue;
                }
                "from" => {
                    let src = qualified_prefix(keyword, None, &mut words)?;
                    set_once(&mut selector.src, src, "`from`")?;
                    continue;
                }
                // As `ip`: `to` may lead the destination; a bare prefix is one.
                word => {
                    let first = (word != "to").then_some(word);
                    let dst = qualified_prefix(keyword, first, &mut words)?;
                    if dst.0 != "default"
                        && netmirror_platform::names::parse_prefix(&dst.0).is_none()
                    {
                        return Err(usage_error(format!(
                            "unknown route selector `{}` (expected table, dev, iif, proto, \
                             type, src, scope, tos, metric, realms, mark, via, from or [to] \
                             [exact|root|match] PREFIX)",
                            dst.0
                        )));
                    }
                    set_once(&mut selector.dst, dst, "a destination")?;
                    continue;
                }
            };
            let Some(value) = words.next() else {
                return Err(usage_error(format!("`{keyword}` needs a value")));
            };
            if slot.replace(value.clone()).is_some() {
                return Err(usage_error(format!("`{keyword}` given twice")));
            }
        }
        Ok(selector)
    }
}

#[cfg(test)]
mod tests;
