//! client-cache's examples, run as a user runs them against a private bus: `any_service` and
//! `blocking` against a small ObjectManager service (client-cache's `ci_bus lights`, no root
//! needed), `nm_devices` against the real NetworkManager daemon sandboxed on a private bus
//! (`ci_bus nm`, root only). Each example's output is checked against what the bus holds, as
//! another client reads it (`busctl`, `nmcli`), and against the changes made while it watches.

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::cmd;

/// The lights service `ci_bus lights` serves.
const LIGHTS: &str = "org.example.Lights";
const MANAGER: &str = "/org/example/Lights";

/// The longest an example or the fixture may take before it is killed and the step fails.
const LIMIT: Duration = Duration::from_secs(120);

/// Runs the examples in `examples` (client-cache's built examples folder); the NetworkManager
/// one only when `privileged`.
pub(crate) fn run(examples: &Path, privileged: bool) -> anyhow::Result<()> {
    let ci_bus = examples.join("ci_bus");
    lights(examples, &ci_bus).context("client-cache's examples against the lights service")?;
    if privileged {
        network_manager(examples, &ci_bus)
            .context("example `nm_devices` against the sandboxed NetworkManager")?;
    } else {
        eprintln!(
            "xtask: example `nm_devices` was built, not run: the NetworkManager daemon needs root"
        );
    }
    Ok(())
}

/// A child whose stdout is read line by line; killed when it outlives [`LIMIT`] or is dropped
/// while running.
pub(crate) struct Running {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Everything it printed so far.
    output: Vec<String>,
    done: Arc<AtomicBool>,
}

impl Running {
    pub(crate) fn start(name: &str, command: &mut Command) -> anyhow::Result<Self> {
        eprintln!("$ {}", cmd::show(command));
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("no stdout")?;
        // The watchdog: a hung child is killed, which ends every read of its output.
        let done = Arc::new(AtomicBool::new(false));
        let (pid, flag) = (child.id(), Arc::clone(&done));
        std::thread::spawn(move || {
            let step = Duration::from_millis(100);
            let mut waited = Duration::ZERO;
            while waited < LIMIT {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(step);
                waited += step;
            }
            if !flag.load(Ordering::SeqCst) {
                eprintln!("xtask: process {pid} still runs after {LIMIT:?}: killing it");
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        });
        Ok(Running {
            name: name.to_owned(),
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            output: Vec::new(),
            done,
        })
    }

    /// The next line it prints.
    pub(crate) fn line(&mut self) -> anyhow::Result<String> {
        match self.lines.next() {
            Some(line) => {
                let line = line?;
                eprintln!("  {}: {line}", self.name);
                self.output.push(line.clone());
                Ok(line)
            }
            None => bail!(
                "{} ended its output early; it printed:\n{}",
                self.name,
                self.output.join("\n")
            ),
        }
    }

    /// Reads lines up to and including `last`; returns those before it.
    fn until(&mut self, last: &str) -> anyhow::Result<Vec<String>> {
        let mut lines = Vec::new();
        loop {
            let line = self.line()?;
            if line == last {
                return Ok(lines);
            }
            lines.push(line);
        }
    }

    /// Sends a command line (to `ci_bus`) and waits for its `done`.
    pub(crate) fn command(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        let answer = self.line()?;
        if answer != "done" {
            bail!("{} answered `{line}` with {answer:?}", self.name);
        }
        Ok(())
    }

    /// Kills it (when it still runs) and waits for it: the check has read what it needed.
    fn kill(mut self) {
        self.done.store(true, Ordering::SeqCst);
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Reads the rest of its output and waits for it to exit successfully.
    fn finish(mut self) -> anyhow::Result<Vec<String>> {
        let mut rest = Vec::new();
        for line in self.lines.by_ref() {
            let line = line?;
            eprintln!("  {}: {line}", self.name);
            rest.push(line);
        }
        let status = self.child.wait()?;
        self.done.store(true, Ordering::SeqCst);
        if !status.success() {
            bail!("{} exited with {status}", self.name);
        }
        Ok(rest)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Closing stdin ends `ci_bus`; an example still running is killed.
        drop(self.stdin.take());
        if !self.done.swap(true, Ordering::SeqCst) {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `busctl` on the private bus at `address`, printing its standard output.
fn busctl(address: &str, args: &[&str]) -> anyhow::Result<String> {
    cmd::read(
        Command::new("busctl")
            .arg(format!("--address={address}"))
            .args(args),
    )
}

/// The lights' paths as `busctl tree` lists them, and each one's `On` as `busctl
/// get-property` reads it, in the words of client-cache's `Value` display (`yes`/`no`).
fn lights_on_the_bus(address: &str) -> anyhow::Result<Vec<(String, String)>> {
    let tree = busctl(address, &["tree", "--list", LIGHTS])?;
    let mut lights = Vec::new();
    for path in tree
        .lines()
        .map(str::trim)
        .filter(|path| path.starts_with(&format!("{MANAGER}/")))
    {
        let on = busctl(
            address,
            &["get-property", LIGHTS, path, "org.example.Light", "On"],
        )?;
        // `b true`
        let on = match on.trim() {
            "b true" => "yes",
            "b false" => "no",
            other => bail!("busctl read On of {path} as {other:?}"),
        };
        lights.push((path.to_owned(), on.to_owned()));
    }
    if lights.is_empty() {
        bail!("busctl lists no light: {tree}");
    }
    Ok(lights)
}

/// `any_service` and `blocking` against `ci_bus lights`.
fn lights(examples: &Path, ci_bus: &PathBuf) -> anyhow::Result<()> {
    let mut bus = Running::start("ci_bus", Command::new(ci_bus).arg("lights"))?;
    let address = bus.line()?;

    // any_service: every object and property the bus holds, then the changes made meanwhile.
    let truth = lights_on_the_bus(&address)?;
    let mut watcher = Running::start(
        "any_service",
        Command::new(examples.join("any_service"))
            .args([LIGHTS, MANAGER, "--events", "3", "--seconds", "60"])
            .env("DBUS_SYSTEM_BUS_ADDRESS", &address),
    )?;
    let listed = watcher.until("watching")?;
    let objects: Vec<&String> = listed
        .iter()
        .filter(|line| line.starts_with("object "))
        .collect();
    if objects.len() != truth.len() {
        bail!("any_service listed {objects:?}, the bus holds {truth:?}");
    }
    for (path, on) in &truth {
        let at = listed
            .iter()
            .position(|line| *line == format!("object {path}"))
            .with_context(|| format!("any_service did not list {path}"))?;
        let property = format!("  org.example.Light.On = {on}");
        if !listed[at + 1..]
            .iter()
            .take_while(|line| line.starts_with("  "))
            .any(|line| *line == property)
        {
            bail!("any_service did not show `{property}` under {path}");
        }
    }
    changes(
        &mut bus,
        &mut watcher,
        &[
            (
                "toggle kitchen",
                format!("~ {MANAGER}/kitchen org.example.Light.On: yes -> no"),
            ),
            ("add porch", format!("+ {MANAGER}/porch")),
            ("remove hall", format!("- {MANAGER}/hall")),
        ],
    )?;
    let rest = watcher.finish()?;
    if !rest.is_empty() {
        bail!("any_service printed more than the changes made: {rest:?}");
    }
    eprintln!("xtask: example `any_service` ran");

    // blocking: the same, through BlockingCache, on the bus as the changes left it.
    let truth = lights_on_the_bus(&address)?;
    let mut watcher = Running::start(
        "blocking",
        Command::new(examples.join("blocking")).args([
            LIGHTS,
            MANAGER,
            "--address",
            &address,
            "--events",
            "2",
            "--seconds",
            "60",
        ]),
    )?;
    let listed = watcher.until("watching")?;
    let count = format!("{} objects", truth.len());
    if listed.first() != Some(&count) {
        bail!("blocking printed {listed:?}, the bus holds {truth:?}");
    }
    for (path, _) in &truth {
        let line = format!("object {path} (org.example.Light)");
        if !listed.contains(&line) {
            bail!("blocking did not print `{line}`");
        }
    }
    changes(
        &mut bus,
        &mut watcher,
        &[
            (
                "toggle porch",
                format!("~ {MANAGER}/porch org.example.Light.On = yes"),
            ),
            ("add hall", format!("+ {MANAGER}/hall")),
        ],
    )?;
    let rest = watcher.finish()?;
    if !rest.is_empty() {
        bail!("blocking printed more than the changes made: {rest:?}");
    }
    eprintln!("xtask: example `blocking` ran");
    Ok(())
}

/// Makes each change (a `ci_bus` command) and checks that the watcher printed it, one by one
/// (changes made together may come in one batch, whose events are ordered by kind).
fn changes(
    bus: &mut Running,
    watcher: &mut Running,
    made: &[(&str, String)],
) -> anyhow::Result<()> {
    for (command, expected) in made {
        bus.command(command)?;
        let printed = watcher.line()?;
        if printed != *expected {
            bail!(
                "after `{command}`, {} printed {printed:?}, not {expected:?}",
                watcher.name
            );
        }
    }
    Ok(())
}

/// The veth the check adds while `nm_devices` watches.
const VETH: &str = "nmxex0";

/// The state the daemon leaves a new veth in: managed, with no profile to activate
/// (`no-auto-default=*`).
const SETTLED: &str = "disconnected";

/// `nm_devices` against `ci_bus nm`: its list equals `nmcli device`; a veth pair added meanwhile
/// is reported as added, every state change it prints starts where the example last showed the
/// device, and both devices end in the state nmcli then shows.
fn network_manager(examples: &Path, ci_bus: &PathBuf) -> anyhow::Result<()> {
    let mut bus = Running::start("ci_bus", Command::new(ci_bus).arg("nm"))?;
    let address = bus.line()?;
    let mut watcher = Running::start(
        "nm_devices",
        Command::new(examples.join("nm_devices"))
            .args(["--events", "6", "--seconds", "30"])
            .env("DBUS_SYSTEM_BUS_ADDRESS", &address),
    )?;
    let listed = watcher.until("watching")?;
    let nmcli_devices = |fields: &str| {
        cmd::read(
            Command::new("nmcli")
                .args(["-t", "-f", fields, "device"])
                .env("DBUS_SYSTEM_BUS_ADDRESS", &address),
        )
    };
    // nmcli sorts devices its own way: compared as sets.
    let mut truth: Vec<String> = nmcli_devices("DEVICE,TYPE,STATE")?
        .lines()
        .map(|line| format!("device {}", line.replace(':', " ")))
        .collect();
    truth.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    if truth.is_empty() || sorted != truth {
        bail!("nm_devices listed {sorted:?}, nmcli shows {truth:?}");
    }
    let mut shown = DeviceStates::listed(&listed)?;
    bus.command(&format!("veth {VETH}"))?;
    // The pair's devices appear, then change state as the daemon takes them over. Which of the
    // two the daemon announces first is its own business, and so is whether the first changes
    // come before a client sees the device (it is then added in a later state). Read until the
    // example shows both settled, checking each line on the way.
    let peer = format!("{VETH}-peer");
    while shown.state(VETH) != Some(SETTLED) || shown.state(&peer) != Some(SETTLED) {
        let line = watcher.line()?;
        shown
            .apply(&line)
            .with_context(|| format!("nm_devices printed:\n{}", watcher.output.join("\n")))?;
    }
    let nmcli = nmcli_devices("DEVICE,STATE")?;
    for device in [VETH, peer.as_str()] {
        let line = format!("{device}:{SETTLED}");
        if !nmcli.lines().any(|l| l == line) {
            bail!("nm_devices shows {device} {SETTLED}, nmcli shows:\n{nmcli}");
        }
    }
    watcher.kill();
    eprintln!("xtask: example `nm_devices` ran");
    Ok(())
}

/// Each device's state as `nm_devices` last showed it, from its listing and its event lines.
#[derive(Debug, Default)]
struct DeviceStates(std::collections::HashMap<String, String>);

impl DeviceStates {
    /// From the listing's `device NAME TYPE STATE` lines.
    fn listed(lines: &[String]) -> anyhow::Result<Self> {
        let mut states = Self::default();
        for line in lines {
            let mut words = line.splitn(4, ' ');
            let (Some("device"), Some(name), Some(_), Some(state)) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                bail!("nm_devices listed {line:?}");
            };
            // A change line words the state without nmcli's `(externally)`.
            let state = state.strip_suffix(" (externally)").unwrap_or(state);
            states.0.insert(name.to_owned(), state.to_owned());
        }
        Ok(states)
    }

    fn state(&self, device: &str) -> Option<&str> {
        self.0.get(device).map(String::as_str)
    }

    /// Applies an event line: `added NAME STATE` for a device not shown yet, or
    /// `NAME: OLD -> NEW (REASON)` where OLD is the state last shown for NAME.
    fn apply(&mut self, line: &str) -> anyhow::Result<()> {
        if let Some(added) = line.strip_prefix("added ") {
            let (name, state) = added
                .split_once(' ')
                .with_context(|| format!("no state in {line:?}"))?;
            if self.0.insert(name.to_owned(), state.to_owned()).is_some() {
                bail!("{name} was added, but it was shown already");
            }
            return Ok(());
        }
        let (name, change) = line
            .split_once(": ")
            .with_context(|| format!("neither an addition nor a change: {line:?}"))?;
        let (old, new) = change
            .split_once(" -> ")
            .with_context(|| format!("no `OLD -> NEW` in {line:?}"))?;
        let new = new.split_once(" (").map_or(new, |(new, _reason)| new);
        match self.0.get_mut(name) {
            Some(state) if state == old => {
                new.clone_into(state);
                Ok(())
            }
            Some(state) => bail!("{name} changed from {old}, but it was last shown {state}"),
            None => bail!("{name} changed state before it was shown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(lines: &[&str]) -> anyhow::Result<DeviceStates> {
        let listed = vec!["device lo loopback connected (externally)".to_owned()];
        let mut states = DeviceStates::listed(&listed)?;
        for line in lines {
            states.apply(line)?;
        }
        Ok(states)
    }

    #[test]
    fn a_device_added_then_taken_over_or_added_settled_is_followed() {
        // Both orders the daemon was seen to use.
        let taken_over = states(&[
            "added nmxex0-peer unmanaged",
            "nmxex0-peer: unmanaged -> unavailable (Device is now managed)",
            "nmxex0-peer: unavailable -> disconnected (Carrier/link changed)",
            "added nmxex0 disconnected",
        ])
        .unwrap();
        let settled = states(&[
            "added nmxex0-peer disconnected",
            "added nmxex0 disconnected",
        ])
        .unwrap();
        for states in [taken_over, settled] {
            assert_eq!(states.state("nmxex0"), Some(SETTLED));
            assert_eq!(states.state("nmxex0-peer"), Some(SETTLED));
            assert_eq!(states.state("lo"), Some("connected"));
        }
    }

    #[test]
    fn a_lost_change_a_change_before_the_addition_and_a_double_addition_are_refused() {
        let lost = states(&[
            "added nmxex0 unmanaged",
            "nmxex0: unavailable -> disconnected (Carrier/link changed)",
        ]);
        assert!(
            lost.unwrap_err()
                .to_string()
                .contains("last shown unmanaged")
        );
        let early = states(&["nmxex0: unmanaged -> unavailable (Device is now managed)"]);
        assert!(
            early
                .unwrap_err()
                .to_string()
                .contains("before it was shown")
        );
        let twice = states(&["added lo connected"]);
        assert!(twice.unwrap_err().to_string().contains("shown already"));
        assert!(states(&["something else"]).is_err());
    }
}
