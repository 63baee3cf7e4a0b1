//! Tests of the command line: every documented form parses, and mistakes are usage errors.

use clap::{CommandFactory, Parser};

use super::*;

fn parse(line: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("netmirror").chain(line.split_whitespace()))
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn command_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn no_arguments_is_the_overview() {
    let cli = parse("").unwrap();
    assert!(cli.command.is_none());
}

#[test]
fn global_output_flags_go_anywhere() {
    let cli = parse("link show --json -f ifname,mtu").unwrap();
    assert!(cli.output.json);
    assert_eq!(cli.output.fields, ["ifname", "mtu"]);
    let cli = parse("-t nm device").unwrap();
    assert!(cli.output.terse);
}

#[test]
fn json_and_terse_conflict() {
    let err = parse("--json -t link").unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
}

#[test]
fn kernel_options_after_show() {
    let cli = parse("route show table all -6 --netns nmx-a").unwrap();
    let Some(Command::Route(route)) = cli.command else {
        panic!("not a route command");
    };
    assert_eq!(cli.kernel.netns.as_deref(), Some("nmx-a"));
    assert_eq!(cli.kernel.family(), Some(Family::V6));
    let Some(RouteAction::Show { words }) = route.action else {
        panic!("not show")
    };
    assert_eq!(words, ["table", "all"]);
}

#[test]
fn route_without_show_takes_selectors() {
    let cli = parse("route dev eth0 -4").unwrap();
    let Some(Command::Route(route)) = cli.command else {
        panic!("not a route command");
    };
    assert!(route.action.is_none());
    assert_eq!(route.words, ["dev", "eth0"]);
    assert_eq!(cli.kernel.family(), Some(Family::V4));
}

#[test]
fn route_count() {
    let Some(Command::Route(route)) = parse("route count").unwrap().command else {
        panic!("not a route command");
    };
    assert!(matches!(route.action, Some(RouteAction::Count)));
}

#[test]
fn kernel_options_before_the_subcommand() {
    let cli = parse("--netns nmx-a -6 link").unwrap();
    assert_eq!(cli.kernel.netns.as_deref(), Some("nmx-a"));
    assert_eq!(cli.kernel.family(), Some(Family::V6));
}

#[test]
fn four_and_six_conflict() {
    assert!(parse("route -4 -6").is_err());
}

#[test]
fn route_selector() {
    let selector =
        RouteSelector::parse(&words("show table 100 dev eth0 proto static type unicast")).unwrap();
    assert_eq!(
        selector,
        RouteSelector {
            table: Some("100".into()),
            dev: Some("eth0".into()),
            proto: Some("static".into()),
            kind: Some("unicast".into()),
            ..RouteSelector::default()
        }
    );
    // A destination: `[to] [exact|root|match] PREFIX`, a bare one exact, `default` too.
    let dst = |text: &str| RouteSelector::parse(&words(text)).unwrap().dst;
    use netmirror_platform::DstMatch;
    assert_eq!(
        dst("10.0.0.0/8"),
        Some(("10.0.0.0/8".into(), DstMatch::Exact))
    );
    assert_eq!(dst("to root 10/8"), Some(("10/8".into(), DstMatch::Root)));
    assert_eq!(
        dst("table 5 match 2001:db8::1"),
        Some(("2001:db8::1".into(), DstMatch::Match))
    );
    assert_eq!(dst("default"), Some(("default".into(), DstMatch::Exact)));
    let selector = RouteSelector::parse(&words(
        "from root 10/8 via inet6 fe80::1 src 10.0.0.1 scope link tos 8",
    ))
    .unwrap();
    assert_eq!(selector.src, Some(("10/8".into(), DstMatch::Root)));
    assert_eq!(selector.via, Some(("fe80::1".into(), true)));
    assert_eq!(selector.prefsrc.as_deref(), Some("10.0.0.1"));
    assert_eq!(selector.scope.as_deref(), Some("link"));
    assert_eq!(selector.tos.as_deref(), Some("8"));
    let selector = RouteSelector::parse(&words("priority 0x10 iif v0 realm 5/ mark 7")).unwrap();
    assert_eq!(selector.metric.as_deref(), Some("0x10"));
    assert_eq!(selector.iif.as_deref(), Some("v0"));
    assert_eq!(selector.realms.as_deref(), Some("5/"));
    assert_eq!(selector.mark.as_deref(), Some("7"));
    assert!(RouteSelector::parse(&words("metric 1 preference 2")).is_err());
    assert!(RouteSelector::parse(&words("root")).is_err());
    assert!(RouteSelector::parse(&words("10/8 10/9")).is_err());
    assert!(RouteSelector::parse(&words("root 10.0.0.0/33")).is_err());
    assert!(RouteSelector::parse(&words("table")).is_err());
    assert!(RouteSelector::parse(&words("table 1 table 2")).is_err());
    assert!(RouteSelector::parse(&words("via")).is_err());
    assert!(RouteSelector::parse(&words("mark")).is_err());
    assert_eq!(RouteSelector::parse(&[]).unwrap(), RouteSelector::default());
}

#[test]
fn device_selectors() {
    let dev = |command: &str, text: &str| DeviceSelector::parse(command, &words(text)).unwrap().dev;
    assert_eq!(dev("link", "show eth0").as_deref(), Some("eth0"));
    assert_eq!(dev("link", "eth0").as_deref(), Some("eth0"));
    assert_eq!(dev("addr", "show dev eth0").as_deref(), Some("eth0"));
    assert_eq!(
        DeviceSelector::parse("addr", &words("show")).unwrap(),
        DeviceSelector::default()
    );
    assert!(DeviceSelector::parse("addr", &words("show dev")).is_err());
    assert!(DeviceSelector::parse("addr", &words("eth0 eth1")).is_err());
    let selector = DeviceSelector::parse(
        "addr",
        &words(
            "up master br0 type bridge_slave group 5 scope link to 10/8 label eth* \
                permanent -tentative !nodad primary",
        ),
    )
    .unwrap();
    assert!(selector.up);
    assert_eq!(selector.master, Some(("br0".into(), false)));
    assert_eq!(selector.kind.as_deref(), Some("bridge_slave"));
    assert_eq!(selector.group.as_deref(), Some("5"));
    assert_eq!(selector.scope.as_deref(), Some("link"));
    assert_eq!(selector.to.as_deref(), Some("10/8"));
    assert_eq!(selector.label.as_deref(), Some("eth*"));
    // Set: permanent; clear: tentative, nodad, secondary.
    assert_eq!(selector.flags, (0x80, 0x40 | 0x02 | 0x01));
    assert_eq!(
        DeviceSelector::parse("addr", &words("vrf blue"))
            .unwrap()
            .master,
        Some(("blue".into(), true))
    );
    // Address words belong to `addr` only.
    assert!(DeviceSelector::parse("link", &words("scope link")).is_err());
    assert!(DeviceSelector::parse("link", &words("-tentative")).is_err());
}

#[test]
fn negated_flags_are_words_for_clap() {
    let args = [
        "netmirror",
        "addr",
        "show",
        "-tentative",
        "-4",
        "-deprecated",
        "-x",
    ]
    .map(std::ffi::OsString::from);
    let got = protect_negated_flags(args.into_iter());
    assert_eq!(
        got,
        [
            "netmirror",
            "addr",
            "show",
            "!tentative",
            "-4",
            "!deprecated",
            "-x"
        ]
        .map(std::ffi::OsString::from)
    );
}

#[test]
fn monitor_objects() {
    let Some(Command::Monitor(monitor)) = parse("monitor route link").unwrap().command else {
        panic!("not monitor");
    };
    assert_eq!(monitor.objects, [MonitorObject::Route, MonitorObject::Link]);
    assert!(parse("monitor routes").is_err());
}

#[test]
fn batch() {
    let Some(Command::Batch(batch)) = parse("batch - --continue").unwrap().command else {
        panic!("not batch");
    };
    assert!(batch.keep_going);
    assert_eq!(batch.file.to_str(), Some("-"));
    assert!(parse("batch").is_err());
}

#[test]
fn bus() {
    let cli = parse("nm --bus unix:path=/tmp/x device eth0").unwrap();
    assert_eq!(cli.bus.bus(), Bus::Address("unix:path=/tmp/x".into()));
    let Some(Command::Nm(nm)) = cli.command else {
        panic!("not nm")
    };
    assert!(
        matches!(nm.action, Some(NmAction::Device { iface: Some(ref iface), kernel: false, .. }) if iface == "eth0")
    );
    let cli = parse("nm device eth0 --kernel").unwrap();
    let Some(Command::Nm(nm)) = cli.command else {
        panic!("not nm")
    };
    assert!(matches!(
        nm.action,
        Some(NmAction::Device { kernel: true, .. })
    ));
    // --kernel is about one device.
    assert!(parse("nm device --kernel").is_err());
    let cli = parse("--bus session nm").unwrap();
    assert_eq!(cli.bus.bus(), Bus::Session);
    let cli = parse("nm").unwrap();
    assert_eq!(cli.bus.bus(), Bus::System);
    let Some(Command::Nm(nm)) = cli.command else {
        panic!("not nm")
    };
    assert!(nm.action.is_none());
    assert!(parse("nm --bus nowhere general").is_err());
}

#[test]
fn objects() {
    let cli = parse("objects --service org.bluez --interface org.bluez.Adapter1").unwrap();
    let Some(Command::Objects(objects)) = cli.command else {
        panic!("not objects")
    };
    assert_eq!(objects.target.service.as_deref(), Some("org.bluez"));
    assert!(objects.action.is_none());
    let cli = parse("objects monitor --service org.bluez --bus session").unwrap();
    assert_eq!(cli.bus.bus(), Bus::Session);
    let Some(Command::Objects(objects)) = cli.command else {
        panic!("not objects")
    };
    let Some(ObjectsAction::Monitor { target }) = objects.action else {
        panic!("not monitor")
    };
    assert_eq!(target.service.as_deref(), Some("org.bluez"));
}

#[test]
fn completions_are_listed_and_the_man_page_is_not() {
    let help = Cli::command().render_help().to_string();
    assert!(help.contains("completions"), "{help}");
    assert!(!help.contains("\n  man "), "{help}");
    assert!(parse("completions bash").is_ok());
    assert!(parse("man").is_ok());
}

#[test]
fn nm_changes_are_subcommands_and_views_keep_their_words() {
    use crate::nm_actions::{ConnectionEdit, DeviceEdit};
    let nm = |line: &str| match parse(line).unwrap().command {
        Some(Command::Nm(nm)) => nm.action,
        other => panic!("not nm: {other:?}"),
    };
    let Some(NmAction::Connection {
        edit: Some(ConnectionEdit::Up { id, rest, wait }),
        ..
    }) = nm("nm connection up s1 ifname va0 -w 5")
    else {
        panic!("not up");
    };
    assert_eq!(
        (id.as_str(), rest.as_slice(), wait.seconds),
        ("s1", &["ifname".to_owned(), "va0".to_owned()][..], 5)
    );
    assert!(matches!(
        nm("nm connection s1"),
        Some(NmAction::Connection { id: Some(ref id), edit: None, .. }) if id == "s1"
    ));
    assert!(matches!(
        nm("nm connection -s s1"),
        Some(NmAction::Connection { id: Some(ref id), show_secrets: true, .. }) if id == "s1"
    ));
    assert!(matches!(
        nm("nm connection s1"),
        Some(NmAction::Connection {
            show_secrets: false,
            ..
        })
    ));
    let Some(NmAction::Connection {
        edit: Some(ConnectionEdit::Modify { words, .. }),
        ..
    }) = nm("nm con modify s1 -ipv4.addresses 192.0.2.1/24")
    else {
        panic!("not modify");
    };
    assert_eq!(words, ["-ipv4.addresses", "192.0.2.1/24"]);
    assert!(matches!(
        nm("nm device set vb0 managed no"),
        Some(NmAction::Device {
            edit: Some(DeviceEdit::Set { .. }),
            ..
        })
    ));
    assert!(matches!(
        nm("nm networking off"),
        Some(NmAction::Networking { .. })
    ));
    assert!(parse("nm radio bluetooth on").is_err());
    assert!(parse("nm connection up").is_err());
}

#[test]
fn the_global_timeout_and_a_checkpoints_rollback_do_not_collide() {
    // Both were `timeout` (a Duration and a u32): clap panicked on reading the arguments.
    let cli = parse("--timeout 5 nm checkpoint create --rollback-after 60 eth0").unwrap();
    assert_eq!(cli.bus.timeout(), std::time::Duration::from_secs(5));
    let cli = parse("nm checkpoint create").unwrap();
    assert_eq!(cli.bus.timeout(), std::time::Duration::from_secs(25));
}
