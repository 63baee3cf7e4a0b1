//! `objects`, `nm` and the overview against a hostile service on a private bus (no root
//! needed): calls never answered, error replies, wrong signatures, invalid names.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use netmirror_client_cache::testing::{Answer, HostileService, Ifaces, PrivateBus, Props};
use zbus::OwnedVariant;

use crate::support::{Monitor, Run, netmirror, run};

const SERVICE: &str = "org.example.Hostile";
const NM: &str = "org.freedesktop.NetworkManager";

fn v<'a>(x: impl Into<zbus::Variant<'a>>) -> OwnedVariant {
    OwnedVariant::try_from(x.into()).expect("no fds")
}

fn hostile(bus: &PrivateBus) -> HostileService {
    let service = HostileService::start(bus.address(), SERVICE, "/").expect("service");
    let mut props = Props::new();
    props.insert("Name".into(), v("a"));
    let mut ifaces = Ifaces::new();
    ifaces.insert("org.example.Node".into(), props);
    service.set_objects([("/a".to_owned(), ifaces)]);
    service
}

/// `netmirror --bus ADDRESS --timeout 1 ARGS...`, with the protocol warnings of a hostile
/// service let through rather than fatal.
fn ours(bus: &PrivateBus, args: &[&str]) -> (Run, Duration) {
    let mut all = vec!["--bus", bus.address(), "--timeout", "1"];
    all.extend_from_slice(args);
    let mut command = netmirror(&all);
    command.env_remove("NETMIRROR_FATAL_WARNINGS");
    let began = Instant::now();
    let run = run(command);
    (run, began.elapsed())
}

#[test]
fn a_service_that_never_answers_fails_within_the_timeout() {
    let bus = PrivateBus::start().expect("bus");
    let service = hostile(&bus);
    service.answer("GetManagedObjects", Answer::Never);
    let (run, took) = ours(&bus, &["objects", "--service", SERVICE]);
    let line = run.fails(1);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(
        line.contains("GetManagedObjects") && line.contains(SERVICE) && line.contains("timed out"),
        "{line}"
    );
}

#[test]
fn a_reply_of_the_wrong_signature_is_an_error() {
    let bus = PrivateBus::start().expect("bus");
    let service = hostile(&bus);
    service.answer("GetManagedObjects", Answer::WrongSignature);
    let (run, _) = ours(&bus, &["objects", "--service", SERVICE]);
    let line = run.fails(1);
    assert!(line.contains("`a{sv}`"), "{line}");
}

#[test]
fn error_replies_are_errors_access_denied_is_permission_denied() {
    let bus = PrivateBus::start().expect("bus");
    let service = hostile(&bus);
    let error = |name: &str| Answer::Error {
        name: name.into(),
        message: "no".into(),
    };
    service.answer(
        "GetManagedObjects",
        error("org.freedesktop.DBus.Error.AccessDenied"),
    );
    let (run, _) = ours(&bus, &["objects", "--service", SERVICE]);
    assert!(run.fails(1).contains("permission denied"), "{run:?}");
    for name in [
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.example.Error.Broken",
    ] {
        service.answer("GetManagedObjects", error(name));
        let (run, _) = ours(&bus, &["objects", "--service", SERVICE]);
        assert!(run.fails(1).contains(name), "{run:?}");
        let (run, _) = ours(&bus, &["--json", "objects", "--service", SERVICE]);
        assert!(run.fails(1).contains(name), "{run:?}");
    }
}

#[test]
fn invalid_paths_and_names_are_usage_errors() {
    let bus = PrivateBus::start().expect("bus");
    let _service = hostile(&bus);
    for args in [
        &["objects", "--service", SERVICE, "--path", "not-a-path"][..],
        &["objects", "--service", SERVICE, "--path", "/obj//0"],
        &["objects", "--service", SERVICE, "--manager", "bad path"],
        &["objects", "--service", "bad name!"],
        &[
            "objects",
            "monitor",
            "--service",
            SERVICE,
            "--path",
            "/obj//0",
        ],
    ] {
        let (run, took) = ours(&bus, args);
        assert!(took < Duration::from_secs(15), "{args:?}: {took:?}");
        assert_eq!(run.code(), 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains("invalid D-Bus"), "{run:?}");
    }
    let (run, _) = ours(&bus, &["--timeout", "0", "objects", "--service", SERVICE]);
    assert_eq!(run.code(), 2, "{run:?}");
}

/// A fake NetworkManager: the manager object, one profile, and `GetSettings` never answered.
fn fake_nm(bus: &PrivateBus, networking: OwnedVariant) -> HostileService {
    let service = HostileService::start(bus.address(), NM, "/org/freedesktop").expect("fake NM");
    service.set_objects(fake_nm_objects(networking));
    service
}

/// The objects of [`fake_nm`].
fn fake_nm_objects(networking: OwnedVariant) -> BTreeMap<String, Ifaces> {
    let mut manager = Props::new();
    manager.insert("NetworkingEnabled".into(), networking);
    manager.insert("State".into(), v(70u32));
    manager.insert("Version".into(), v("1.0-fake"));
    let mut settings = Props::new();
    settings.insert("Unsaved".into(), v(false));
    [
        (
            "/org/freedesktop/NetworkManager".to_owned(),
            Ifaces::from([(NM.to_owned(), manager)]),
        ),
        (
            "/org/freedesktop/NetworkManager/Settings/1".to_owned(),
            Ifaces::from([(format!("{NM}.Settings.Connection"), settings)]),
        ),
    ]
    .into()
}

#[test]
fn a_network_manager_that_never_answers_get_settings_fails_within_the_timeout() {
    let bus = PrivateBus::start().expect("bus");
    let service = fake_nm(&bus, v(true));
    service.answer("GetSettings", Answer::Never);
    let (run, took) = ours(&bus, &["nm", "connection"]);
    let line = run.fails(1);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(
        line.contains("GetSettings") && line.contains("Settings/1") && line.contains("timed out"),
        "{line}"
    );
    // The views that print no profile settings do not ask for them.
    let (run, took) = ours(&bus, &["nm", "device"]);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(run.ok().starts_with("DEVICE"), "{run:?}");
}

#[test]
fn the_overview_shows_the_kernel_when_network_manager_does_not_answer() {
    let bus = PrivateBus::start().expect("bus");
    let service = fake_nm(&bus, v(true));
    service.answer("GetManagedObjects", Answer::Never);
    let mut command = netmirror(&["--timeout", "1"]);
    command
        .env_remove("NETMIRROR_FATAL_WARNINGS")
        .env("DBUS_SYSTEM_BUS_ADDRESS", bus.address());
    let began = Instant::now();
    let run = run(command);
    assert!(began.elapsed() < Duration::from_secs(15), "{run:?}");
    let out = run.ok();
    assert!(out.contains("Links") && out.contains("lo"), "{out}");
    let nm = &out[out.find("NetworkManager").expect("its section")..];
    assert!(
        nm.contains("GetManagedObjects") && nm.contains("timed out"),
        "{out}"
    );
    let mut command = netmirror(&["--timeout", "1", "--json"]);
    command
        .env_remove("NETMIRROR_FATAL_WARNINGS")
        .env("DBUS_SYSTEM_BUS_ADDRESS", bus.address());
    let json = crate::support::run(command).json();
    assert!(
        json["links"].as_array().is_some_and(|l| !l.is_empty()),
        "{json}"
    );
    let error = json["networkmanager"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("timed out"), "{json}");
}

#[test]
fn a_wrong_typed_network_manager_property_is_a_visible_warning() {
    let bus = PrivateBus::start().expect("bus");
    let service = fake_nm(&bus, v("yes"));
    service.set_reply(
        "GetSettings",
        "/org/freedesktop/NetworkManager/Settings/1",
        BTreeMap::new(),
    );
    let (run, _) = ours(&bus, &["nm", "general"]);
    assert_eq!(run.code(), 0, "{run:?}");
    assert!(
        run.stderr.contains("NetworkingEnabled") && run.stderr.contains("wrong type"),
        "{run:?}"
    );
    // Shown as missing, not as a plausible "disabled".
    let (run, _) = ours(&bus, &["--json", "-f", "all", "nm", "general"]);
    let json = run.json();
    assert_eq!(json[0]["networking"], serde_json::Value::Null, "{json}");
    assert_eq!(json[0]["version"], "1.0-fake", "{json}");
}

/// Issue 16: the library's protocol warnings reach the CLI's log whatever
/// `NETMIRROR_CLIENT_DEBUG` says (it keeps its libnm meaning: louder, never quieter). A
/// wrong-typed value (rejected) is a warning at the default verbosity; a dangling reference
/// (an object that waits for its target) and an interface the API does not declare are
/// logged with `-v`.
#[test]
fn protocol_warnings_reach_the_log_whatever_netmirror_client_debug_says() {
    let bus = PrivateBus::start().expect("bus");
    let service = HostileService::start(bus.address(), NM, "/org/freedesktop").expect("fake NM");
    let mut objects = fake_nm_objects(v("yes"));
    let mut device = Props::new();
    device.insert("Interface".into(), v("eth9"));
    device.insert(
        "ActiveConnection".into(),
        v(zbus::ObjectPath::from_static_str_unchecked(
            "/org/freedesktop/NetworkManager/ActiveConnection/9",
        )),
    );
    // An interface NetworkManager 1.42's API does not have (a newer daemon's).
    let mut future = Props::new();
    future.insert("Speed".into(), v(10u32));
    objects.insert(
        "/org/freedesktop/NetworkManager/Devices/1".to_owned(),
        Ifaces::from([
            (format!("{NM}.Device"), device),
            (format!("{NM}.Device.Future"), future),
        ]),
    );
    service.set_objects(objects);
    service.set_reply(
        "GetSettings",
        "/org/freedesktop/NetworkManager/Settings/1",
        BTreeMap::new(),
    );
    let nm_general = |verbose: bool, debug: Option<&str>| {
        let mut all = vec!["--bus", bus.address(), "--timeout", "1"];
        if verbose {
            all.push("-v");
        }
        all.extend(["nm", "general"]);
        let mut command = netmirror(&all);
        command
            .env_remove("NETMIRROR_FATAL_WARNINGS")
            .env_remove("RUST_LOG");
        match debug {
            Some(value) => command.env("NETMIRROR_CLIENT_DEBUG", value),
            None => command.env_remove("NETMIRROR_CLIENT_DEBUG"),
        };
        let run = run(command);
        assert_eq!(run.code(), 0, "{debug:?}: {run:?}");
        run.stderr
    };
    let wrong_type = |stderr: &str| {
        stderr.lines().any(|line| {
            line.contains("WARN")
                && line.contains("wrong type")
                && line.contains("NetworkingEnabled")
        })
    };
    let dangling = |stderr: &str| {
        stderr.lines().any(|line| {
            line.contains("dangling reference")
                && line.contains("Devices/1 references missing")
                && line.contains("ActiveConnection/9")
        })
    };
    let unknown_interface = |stderr: &str| {
        stderr.lines().any(|line| {
            line.contains("unknown interface")
                && line.contains(
                    "Devices/1 has interface org.freedesktop.NetworkManager.Device.Future",
                )
        })
    };
    // (`error` alone used to send a wrong type down to the debug level.)
    for debug in [
        None,
        Some(""),
        Some("error"),
        Some("trace"),
        Some("warning,error"),
    ] {
        let stderr = nm_general(false, debug);
        assert!(wrong_type(&stderr), "{debug:?}: {stderr}");
        let stderr = nm_general(true, debug);
        assert!(wrong_type(&stderr), "-v, {debug:?}: {stderr}");
        assert!(dangling(&stderr), "-v, {debug:?}: {stderr}");
        assert!(unknown_interface(&stderr), "-v, {debug:?}: {stderr}");
    }
    // Without `-v` a reference that waits for its target is no warning (NetworkManager
    // makes them briefly while it activates), unless NETMIRROR_CLIENT_DEBUG asks for them.
    assert!(!dangling(&nm_general(false, None)));
    assert!(dangling(&nm_general(false, Some("warning"))));
}

/// What a monitor printed while its stdout was not read during `flood`, read afterwards: the
/// set of `path_key`s its added/removed lines of `object` lead to (from `initial`), and its
/// overrun and resynced lines.
fn stalled_monitor(
    bus: &PrivateBus,
    args: &[&str],
    flood: impl FnOnce(),
    (object, path_key): (&str, &str),
    initial: &[&str],
) -> (std::collections::BTreeSet<String>, usize, usize) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::sync::mpsc;

    let mut all = vec!["--bus", bus.address(), "--json"];
    all.extend_from_slice(args);
    let mut command = netmirror(&all);
    command
        .env("RUST_LOG", "netmirror=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn the monitor");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let (log_tx, log) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = log_tx.send(line);
        }
    });
    loop {
        let line = log
            .recv_timeout(Duration::from_secs(60))
            .expect("the monitor got ready");
        if line.contains("monitor ready") {
            break;
        }
    }
    // Signals while nobody reads the monitor's stdout.
    flood();
    // Now read it all.
    let (line_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = line_tx.send(line);
        }
    });
    let mut model: std::collections::BTreeSet<String> =
        initial.iter().map(|p| p.to_string()).collect();
    let (mut overruns, mut resynced) = (0, 0);
    let began = Instant::now();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        let json: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        let path = |row: &str| json[row][path_key].as_str().map(str::to_owned);
        match (json["object"].as_str(), json["event"].as_str()) {
            (Some(o), Some("added")) if o == object => {
                assert!(model.insert(path("new").expect("path")), "{line}");
            }
            (Some(o), Some("removed")) if o == object => {
                assert!(model.remove(&path("old").expect("path")), "{line}");
            }
            (Some("cache"), Some("overrun")) => overruns += 1,
            (Some("cache"), Some("resynced")) => resynced += 1,
            _ => {}
        }
        assert!(began.elapsed() < Duration::from_secs(300), "still printing");
    }
    let _ = child.kill();
    let _ = child.wait();
    (model, overruns, resynced)
}

/// 60,000 objects `PREFIX/N` added, then every third removed: 80,000 signals, several times
/// what a monitor queues (16,384 events) and its output pipe hold.
fn flood(service: &HostileService, prefix: &str, ifaces: &Ifaces) {
    service.flood_added(prefix, 60_000, ifaces).expect("flood");
    let gone: Vec<String> = (0..60_000)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("{prefix}/{i}"))
        .collect();
    service.flood_removed(&gone).expect("flood");
}

#[test]
fn a_monitor_whose_output_stalls_reports_the_overrun_and_loses_nothing() {
    let bus = PrivateBus::start().expect("bus");
    let service = hostile(&bus);
    let mut ifaces = Ifaces::new();
    ifaces.insert("org.example.Node".into(), Props::new());
    let (model, overruns, resynced) = stalled_monitor(
        &bus,
        &["objects", "monitor", "--service", SERVICE],
        || flood(&service, "/n", &ifaces),
        ("object", "path"),
        &["/a"],
    );
    let truth: std::collections::BTreeSet<String> = service.objects().into_keys().collect();
    assert_eq!(truth.len(), 40_001);
    assert!(
        model == truth,
        "the printed changes do not lead to the service's state"
    );
    assert!(overruns >= 1, "an overrun line");
    assert_eq!(overruns, resynced, "each overrun ends with a resynced line");
}

#[test]
fn nm_monitor_whose_output_stalls_reports_the_overrun_and_loses_nothing() {
    let bus = PrivateBus::start().expect("bus");
    let service = HostileService::start(bus.address(), NM, "/org/freedesktop").expect("fake NM");
    let mut manager = Props::new();
    manager.insert("Version".into(), v("1.0-fake"));
    service.set_objects([(
        "/org/freedesktop/NetworkManager".to_owned(),
        Ifaces::from([(NM.to_owned(), manager)]),
    )]);
    let mut device = Props::new();
    device.insert("Interface".into(), v("d"));
    let ifaces = Ifaces::from([(format!("{NM}.Device"), device)]);
    let prefix = "/org/freedesktop/NetworkManager/Devices";
    let (model, overruns, resynced) = stalled_monitor(
        &bus,
        &["nm", "monitor"],
        || flood(&service, prefix, &ifaces),
        ("device", "dbus_path"),
        &[],
    );
    let truth: std::collections::BTreeSet<String> = service
        .objects()
        .into_keys()
        .filter(|p| p.starts_with(prefix))
        .collect();
    assert_eq!(truth.len(), 40_000);
    assert!(
        model == truth,
        "the printed changes do not lead to the daemon's state"
    );
    assert!(overruns >= 1, "an overrun line");
    assert_eq!(overruns, resynced, "each overrun ends with a resynced line");
}

/// Starts `netmirror --bus ADDRESS ARGS...` as a monitor, waits for it to be ready, sends it
/// `signal` (`INT` or `TERM`) and returns its exit status and its last line of output.
fn signalled_monitor(
    bus: &PrivateBus,
    args: &[&str],
    signal: &str,
) -> (std::process::ExitStatus, String) {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;

    let mut all = vec!["--bus", bus.address()];
    all.extend_from_slice(args);
    let mut command = netmirror(&all);
    command
        .env("RUST_LOG", "netmirror=debug")
        .env_remove("NETMIRROR_FATAL_WARNINGS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn the monitor");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, log) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    loop {
        let line = log
            .recv_timeout(Duration::from_secs(60))
            .expect("the monitor got ready");
        if line.contains("monitor ready") {
            break;
        }
    }
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the monitor did not end on SIG{signal}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let last = stdout.lines().last().unwrap_or_default().to_owned();
    if !status.success() {
        // What it said before it died, for the assertion's message.
        std::thread::sleep(Duration::from_millis(200));
        let said: Vec<String> = log.try_iter().collect();
        return (status, format!("{last} / stderr: {said:#?}"));
    }
    (status, last)
}

/// Issue 15: the D-Bus monitors, like the kernel's, end on SIGINT/SIGTERM with a last line
/// and status 0 (they used to die of the signal).
#[test]
fn d_bus_monitors_end_on_signals_with_a_last_line() {
    let bus = PrivateBus::start().expect("bus");
    let _service = hostile(&bus);
    let (status, last) = signalled_monitor(
        &bus,
        &["objects", "monitor", "--service", SERVICE, "--manager", "/"],
        "INT",
    );
    assert_eq!(status.code(), Some(0), "{status:?} {last:?}");
    assert_eq!(last, "[MONITOR] stopped by SIGINT");

    let _nm = fake_nm(&bus, v(true));
    let (status, last) = signalled_monitor(&bus, &["--json", "nm", "monitor"], "TERM");
    assert_eq!(status.code(), Some(0), "{status:?} {last:?}");
    let value: serde_json::Value = serde_json::from_str(&last).expect("JSON");
    assert_eq!(
        value,
        serde_json::json!({"object": "monitor", "event": "stopped", "signal": "SIGTERM"})
    );
}

#[test]
fn objects_monitor_shows_the_properties_of_an_interface_added_to_an_object() {
    let bus = PrivateBus::start().expect("bus");
    let service = hostile(&bus);
    let start = |json: bool| {
        let mut args = vec!["--bus", bus.address()];
        if json {
            args.push("--json");
        }
        args.extend(["objects", "monitor", "--service", SERVICE, "--manager", "/"]);
        let mut command = netmirror(&args);
        command.env("RUST_LOG", "netmirror::objects=debug");
        Monitor::start(command, "monitor ready")
    };
    let (mut json, mut text) = (start(true), start(false));
    // `/a` gains an interface, as a udisks2 block device gains `Filesystem`.
    let mut props = Props::new();
    props.insert("Label".into(), v("data"));
    props.insert("Size".into(), v(4096_u64));
    props.insert("MountPoints".into(), v(vec!["/mnt", "/srv"]));
    let ifaces = Ifaces::from([("org.example.Filesystem".to_owned(), props)]);
    service
        .add_interfaces("/a", &ifaces)
        .expect("InterfacesAdded");
    let line = json.expect_line(Duration::from_secs(30), |line| {
        line.contains("\"object\":\"interface\"")
    });
    let event: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(event["event"], "added", "{line}");
    assert_eq!(event["new"]["path"], "/a", "{line}");
    assert_eq!(
        event["new"]["interface"],
        serde_json::json!(["org.example.Filesystem"]),
        "{line}"
    );
    // What the signal carried, and only the new interface's.
    assert_eq!(
        event["new"]["value"],
        serde_json::json!({"org.example.Filesystem": {
            "Label": "data", "MountPoints": ["/mnt", "/srv"], "Size": 4096,
        }}),
        "{line}"
    );
    let line = text.expect_line(Duration::from_secs(30), |line| line.contains("/a"));
    assert!(
        line.contains("Filesystem.Label=data")
            && line.contains("Filesystem.MountPoints=/mnt,/srv")
            && line.contains("Filesystem.Size=4096")
            && !line.contains("Node.Name"),
        "{line}"
    );
}
