//! The nmcli commands that change NetworkManager: `nm connection up|down|add|modify|delete|
//! reload`, `nm device connect|disconnect|reapply|set`, `nm networking`, `nm radio`,
//! `nm checkpoint`.
//!
//! Each parses its words, calls one action of `netmirror-client-cache`'s `NmClient` (which
//! returns once the cache shows the outcome, within `--wait`) and prints nmcli's message, or
//! with `--json` one object (`{"result": "activated", "active": ..., "device": ...,
//! "state_reason": ...}`). Settings are parsed completely before anything is sent. While an
//! activation or deactivation takes more than a second, a spinner shows on a terminal.

use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use netmirror_client_cache::{
    self as client,
    nm::{Activation, NmClient, Outcome, Persist, Radio, UpdateOptions, settings::Settings},
};
use serde_json::{Value, json};

use crate::args::{Bus, NmAction, NmArgs};
use crate::bus;
use crate::failure::{self, Failure};
use crate::progress::Progress;
use crate::render::{Mode, Printer};

/// `--wait SECONDS`, as nmcli's `-w`.
#[derive(Debug, Clone, Args)]
pub(crate) struct Wait {
    /// How long to wait for the outcome, in seconds (nmcli's default: 90).
    #[arg(
        short = 'w',
        long = "wait",
        value_name = "SECONDS",
        default_value_t = 90
    )]
    pub(crate) seconds: u64,
}

impl Wait {
    fn duration(&self) -> Duration {
        Duration::from_secs(self.seconds)
    }
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

/// `wifi` or `wwan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RadioName {
    /// Wi-Fi.
    Wifi,
    /// Mobile broadband.
    Wwan,
}

/// What `nm connection` changes.
#[derive(Debug, Subcommand)]
pub(crate) enum ConnectionEdit {
    /// Activate a profile, like `nmcli connection up`.
    Up {
        /// The profile's id, UUID or D-Bus path.
        #[arg(value_name = "ID")]
        id: String,
        /// `ifname DEV`: the device to activate it on.
        #[arg(value_name = "ifname DEV", num_args = 0..=2)]
        rest: Vec<String>,
        #[command(flatten)]
        wait: Wait,
    },
    /// Deactivate a profile's active connection, like `nmcli connection down`.
    Down {
        /// The profile's id, UUID, or its active connection's path.
        #[arg(value_name = "ID")]
        id: String,
        #[command(flatten)]
        wait: Wait,
    },
    /// Add a profile: `add type T [ifname DEV] [con-name N] [setting.property VALUE]...`.
    Add {
        /// Keep it in memory only (`AddConnection2` with `in-memory`).
        #[arg(long)]
        temporary: bool,
        /// `type T`, `con-name N`, `ifname DEV` and `setting.property VALUE` words.
        #[arg(value_name = "WORDS", num_args = 1.., allow_hyphen_values = true)]
        words: Vec<String>,
        #[command(flatten)]
        wait: Wait,
    },
    /// Change a profile: `modify ID [+|-]setting.property VALUE...` (`Update2`, reapplied to
    /// its active device).
    Modify {
        /// Only in memory.
        #[arg(long)]
        temporary: bool,
        /// Do not reapply to an active device (`no-reapply`).
        #[arg(long)]
        no_reapply: bool,
        /// Block autoconnect of the profile (`block-autoconnect`).
        #[arg(long)]
        block_autoconnect: bool,
        /// The profile's id, UUID or D-Bus path.
        #[arg(value_name = "ID")]
        id: String,
        /// `[+|-]setting.property VALUE` pairs.
        #[arg(value_name = "PROP VALUE", num_args = 1.., allow_hyphen_values = true)]
        words: Vec<String>,
        #[command(flatten)]
        wait: Wait,
    },
    /// Delete profiles.
    Delete {
        /// Ids, UUIDs or D-Bus paths.
        #[arg(value_name = "ID", required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        wait: Wait,
    },
    /// Reload every profile from disk.
    Reload,
}

/// What `nm device` changes.
#[derive(Debug, Subcommand)]
pub(crate) enum DeviceEdit {
    /// Activate the best profile on a device.
    Connect {
        /// The interface name.
        dev: String,
        #[command(flatten)]
        wait: Wait,
    },
    /// Disconnect a device.
    Disconnect {
        /// The interface name.
        dev: String,
        #[command(flatten)]
        wait: Wait,
    },
    /// Apply the profile's current settings to the device.
    Reapply {
        /// The interface name.
        dev: String,
    },
    /// `set DEV managed yes|no` or `set DEV autoconnect yes|no`.
    Set {
        /// The interface name.
        dev: String,
        /// `managed yes|no` and/or `autoconnect yes|no`.
        #[arg(value_name = "PROP VALUE", num_args = 2..)]
        words: Vec<String>,
        #[command(flatten)]
        wait: Wait,
    },
}

/// `nm checkpoint ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum CheckpointAction {
    /// Create a checkpoint of the devices (all when none is named); prints its path.
    Create {
        /// Roll back by itself after this many seconds (0: never). (Not `--timeout`, which
        /// is every D-Bus call's deadline.)
        #[arg(long = "rollback-after", value_name = "SECONDS", default_value_t = 0)]
        rollback_after: u32,
        /// Interface names.
        devices: Vec<String>,
    },
    /// Roll back to a checkpoint (the newest when none is named).
    Rollback {
        /// The checkpoint's path.
        path: Option<String>,
    },
    /// Destroy a checkpoint without rolling back (the newest when none is named).
    Destroy {
        /// The checkpoint's path.
        path: Option<String>,
    },
}

/// Runs a changing `nm` command; `None` when `args` asks for a view.
pub(crate) fn run(printer: &mut Printer, bus: &Bus, args: &NmArgs) -> Option<anyhow::Result<()>> {
    let wanted = matches!(
        &args.action,
        Some(
            NmAction::Connection { edit: Some(_), .. }
                | NmAction::Device { edit: Some(_), .. }
                | NmAction::Networking { .. }
                | NmAction::Radio { .. }
                | NmAction::Checkpoint { .. }
        )
    );
    if !wanted {
        return None;
    }
    Some(zbus::block_on(async {
        // Parse everything the user wrote before connecting: bad input changes nothing.
        let plan = plan(args)?;
        let conn = bus::connect(bus).await?;
        let mut nm = NmClient::new(&conn)
            .await
            .map_err(|err| bus::explain(err, bus, "NetworkManager"))?;
        if !nm.is_running() {
            return Err(Failure::ServiceAbsent {
                service: "NetworkManager".to_owned(),
                bus: bus.to_string(),
            }
            .into());
        }
        let result = execute(printer, &mut nm, plan).await;
        let result = result.map_err(|err| {
            // NetworkManager's refusal in its own words, without the D-Bus error name.
            match err.downcast::<client::Error>() {
                Ok(client::Error::Call(call)) => match call.cause {
                    client::CallFailure::ErrorReply { message, .. } => anyhow::anyhow!(message),
                    _ => client::Error::Call(call).into(),
                },
                Ok(other) => other.into(),
                Err(err) => err,
            }
        });
        let result = result.and_then(|()| printer.flush());
        // The command is done: the process ends here. Returning would free the cache object
        // by object and end the runtime while the connection lives, which hands the
        // connection's driving to a new thread; together a fifth of a short command's CPU.
        let status = match &result {
            Ok(()) => 0,
            Err(err) => failure::report_status(err),
        };
        std::process::exit(i32::from(status))
    }))
}

/// A command, checked and ready to send.
enum Plan {
    Up(String, Option<String>, Duration),
    Down(String, Duration),
    Add(Box<Settings>, Persist, Duration),
    Modify(String, Vec<String>, UpdateOptions, Duration),
    Delete(Vec<String>, Duration),
    Reload,
    Connect(String, Duration),
    Disconnect(String, Duration),
    Reapply(String),
    Set(String, Option<bool>, Option<bool>, Duration),
    Networking(bool),
    Radio(Radio, bool),
    CheckpointCreate(Vec<String>, u32),
    CheckpointRollback(Option<String>),
    CheckpointDestroy(Option<String>),
}

fn usage(message: String) -> anyhow::Error {
    crate::args::usage_error(message).into()
}

fn plan(args: &NmArgs) -> anyhow::Result<Plan> {
    Ok(match &args.action {
        Some(NmAction::Connection {
            edit: Some(edit), ..
        }) => match edit {
            ConnectionEdit::Up { id, rest, wait } => {
                let dev = match rest.as_slice() {
                    [] => None,
                    [word, dev] if word == "ifname" => Some(dev.clone()),
                    _ => return Err(usage("expected `ifname DEV` after the profile".into())),
                };
                Plan::Up(id.clone(), dev, wait.duration())
            }
            ConnectionEdit::Down { id, wait } => Plan::Down(id.clone(), wait.duration()),
            ConnectionEdit::Add {
                temporary,
                words,
                wait,
            } => {
                let settings = add_settings(words)?;
                let persist = if *temporary {
                    Persist::Memory
                } else {
                    Persist::Disk
                };
                Plan::Add(Box::new(settings), persist, wait.duration())
            }
            ConnectionEdit::Modify {
                temporary,
                no_reapply,
                block_autoconnect,
                id,
                words,
                wait,
            } => {
                // Check the words now, on an empty profile: the real one is read later.
                Settings::new().set_words(words)?;
                let options = UpdateOptions {
                    persist: if *temporary {
                        Persist::Memory
                    } else {
                        Persist::Disk
                    },
                    no_reapply: *no_reapply,
                    block_autoconnect: *block_autoconnect,
                };
                Plan::Modify(id.clone(), words.clone(), options, wait.duration())
            }
            ConnectionEdit::Delete { ids, wait } => Plan::Delete(ids.clone(), wait.duration()),
            ConnectionEdit::Reload => Plan::Reload,
        },
        Some(NmAction::Device {
            edit: Some(edit), ..
        }) => match edit {
            DeviceEdit::Connect { dev, wait } => Plan::Connect(dev.clone(), wait.duration()),
            DeviceEdit::Disconnect { dev, wait } => Plan::Disconnect(dev.clone(), wait.duration()),
            DeviceEdit::Reapply { dev } => Plan::Reapply(dev.clone()),
            DeviceEdit::Set { dev, words, wait } => {
                let (mut managed, mut autoconnect) = (None, None);
                for pair in words.chunks(2) {
                    let [key, value] = pair else {
                        return Err(usage(format!("value for '{}' is missing", pair[0])));
                    };
                    let value = client::nm::settings::parse_bool(value).ok_or_else(|| {
                        usage(format!(
                            "invalid value '{value}' for '{key}': expected yes or no"
                        ))
                    })?;
                    match key.as_str() {
                        "managed" => managed = Some(value),
                        "autoconnect" => autoconnect = Some(value),
                        _ => {
                            return Err(usage(format!(
                                "invalid property '{key}': expected managed or autoconnect"
                            )));
                        }
                    }
                }
                Plan::Set(dev.clone(), managed, autoconnect, wait.duration())
            }
        },
        Some(NmAction::Networking { state }) => Plan::Networking(*state == OnOff::On),
        Some(NmAction::Radio { radio, state }) => Plan::Radio(
            match radio {
                RadioName::Wifi => Radio::Wifi,
                RadioName::Wwan => Radio::Wwan,
            },
            *state == OnOff::On,
        ),
        Some(NmAction::Checkpoint { action }) => match action {
            CheckpointAction::Create {
                rollback_after,
                devices,
            } => Plan::CheckpointCreate(devices.clone(), *rollback_after),
            CheckpointAction::Rollback { path } => Plan::CheckpointRollback(path.clone()),
            CheckpointAction::Destroy { path } => Plan::CheckpointDestroy(path.clone()),
        },
        _ => return Err(usage("not a changing command".into())),
    })
}

/// `type T [con-name N] [ifname DEV] [prop value]...` as a new profile, named as nmcli names
/// one (`TYPE-IFNAME`, or the type alone).
fn add_settings(words: &[String]) -> anyhow::Result<Settings> {
    let mut kind = None;
    let mut name = None;
    let mut ifname = None;
    let mut it = words.chunks(2);
    for pair in &mut it {
        let [key, value] = pair else {
            return Err(client::Error::InvalidSetting(format!(
                "value for '{}' is missing",
                pair[0]
            ))
            .into());
        };
        match client::nm::settings::lookup(key.trim_start_matches(['+', '-'])) {
            Ok(spec) if spec.setting == "connection" && spec.name == "type" => {
                kind = Some(value.clone());
            }
            Ok(spec) if spec.setting == "connection" && spec.name == "id" => {
                name = Some(value.clone());
            }
            Ok(spec) if spec.setting == "connection" && spec.name == "interface-name" => {
                ifname = Some(value.clone());
            }
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let kind = kind.ok_or_else(|| {
        client::Error::InvalidSetting("'type' is required (type ethernet|bridge|...)".into())
    })?;
    let short = match kind.as_str() {
        "802-3-ethernet" => "ethernet",
        other => other,
    };
    let id = name.unwrap_or_else(|| match &ifname {
        Some(dev) => format!("{short}-{dev}"),
        None => short.to_owned(),
    });
    let mut settings = Settings::profile(&kind, &id)?;
    settings.set_words(words)?;
    Ok(settings)
}

async fn execute(printer: &mut Printer, nm: &mut NmClient, plan: Plan) -> anyhow::Result<()> {
    let json = printer.mode() == Mode::Json;
    match plan {
        Plan::Up(id, dev, wait) => {
            let progress = Progress::start(&format!("activating '{id}'"));
            let activation = nm
                .activate(&id, dev.as_deref(), wait)
                .await
                .map_err(activation_failed)?;
            drop(progress);
            report_activation(printer, &activation, json)
        }
        Plan::Connect(dev, wait) => {
            let progress = Progress::start(&format!("connecting '{dev}'"));
            let activation = nm
                .connect_device(&dev, wait)
                .await
                .map_err(activation_failed)?;
            drop(progress);
            report_activation(printer, &activation, json)
        }
        Plan::Down(id, wait) => {
            let progress = Progress::start(&format!("deactivating '{id}'"));
            let activation = nm.deactivate(&id, wait).await?;
            drop(progress);
            if json {
                printer.json(&activation_json(&activation))
            } else {
                printer.line(&format!(
                    "Connection '{id}' successfully deactivated (D-Bus active path: {})",
                    activation.active
                ))
            }
        }
        Plan::Add(settings, persist, wait) => {
            let path = nm.add_profile(settings.map(), persist, wait).await?;
            let (id, uuid) = profile_names(nm, &path);
            if json {
                printer.json(&json!({"result": "added", "path": path, "id": id, "uuid": uuid}))
            } else {
                printer.line(&format!("Connection '{id}' ({uuid}) successfully added."))
            }
        }
        Plan::Modify(id, words, options, wait) => {
            let mut settings = Settings::from_map(nm.profile_settings(&id).await?);
            settings.set_words(&words)?;
            nm.update_profile(&id, settings.map(), options, wait)
                .await?;
            if json {
                let path = nm.profile_path(&id)?;
                printer.json(&json!({"result": "modified", "path": path}))
            } else {
                Ok(())
            }
        }
        Plan::Delete(ids, wait) => {
            // Every name must be known before the first is deleted.
            let mut found = Vec::new();
            for id in &ids {
                let path = nm.profile_path(id)?;
                found.push((path.clone(), profile_names(nm, &path)));
            }
            let mut out = Vec::new();
            for (path, (id, uuid)) in found {
                nm.delete_profile(&path, wait).await?;
                if json {
                    out.push(json!({"result": "deleted", "path": path, "id": id, "uuid": uuid}));
                } else {
                    printer.line(&format!("Connection '{id}' ({uuid}) successfully deleted."))?;
                }
            }
            if json {
                printer.json(&Value::Array(out))?;
            }
            Ok(())
        }
        Plan::Reload => {
            nm.reload_profiles().await?;
            done(printer, json, json!({"result": "reloaded"}))
        }
        Plan::Disconnect(dev, wait) => {
            let progress = Progress::start(&format!("disconnecting '{dev}'"));
            nm.disconnect_device(&dev, wait).await?;
            drop(progress);
            if json {
                printer.json(&json!({"result": "disconnected", "device": dev}))
            } else {
                printer.line(&format!("Device '{dev}' successfully disconnected."))
            }
        }
        Plan::Reapply(dev) => {
            nm.reapply_device(&dev).await?;
            if json {
                printer.json(&json!({"result": "reapplied", "device": dev}))
            } else {
                printer.line(&format!(
                    "Connection successfully reapplied to device '{dev}'."
                ))
            }
        }
        Plan::Set(dev, managed, autoconnect, wait) => {
            if let Some(managed) = managed {
                nm.set_managed(&dev, managed, wait).await?;
            }
            if let Some(autoconnect) = autoconnect {
                nm.set_autoconnect(&dev, autoconnect, wait).await?;
            }
            done(printer, json, json!({"result": "set", "device": dev}))
        }
        Plan::Networking(on) => {
            nm.set_networking(on, Duration::from_secs(30)).await?;
            done(printer, json, json!({"result": "set", "networking": on}))
        }
        Plan::Radio(radio, on) => {
            nm.set_radio(radio, on, Duration::from_secs(30)).await?;
            done(printer, json, json!({"result": "set", "enabled": on}))
        }
        Plan::CheckpointCreate(devices, timeout) => {
            let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
            let path = nm.checkpoint_create(&devices, timeout).await?;
            if json {
                printer.json(&json!({"result": "created", "checkpoint": path}))
            } else {
                printer.line(&path)
            }
        }
        Plan::CheckpointRollback(path) => {
            let path = checkpoint(nm, path)?;
            let results = nm.checkpoint_rollback(&path).await?;
            if json {
                let devices: serde_json::Map<String, Value> = results
                    .iter()
                    .map(|(dev, code)| (dev.clone(), json!(rollback_word(*code))))
                    .collect();
                printer
                    .json(&json!({"result": "rolled-back", "checkpoint": path, "devices": devices}))
            } else {
                for (dev, code) in &results {
                    printer.line(&format!("{dev}: {}", rollback_word(*code)))?;
                }
                Ok(())
            }
        }
        Plan::CheckpointDestroy(path) => {
            let path = checkpoint(nm, path)?;
            nm.checkpoint_destroy(&path).await?;
            done(
                printer,
                json,
                json!({"result": "destroyed", "checkpoint": path}),
            )
        }
    }
}

/// NetworkManager refusing an activation, in nmcli's words.
fn activation_failed(err: client::Error) -> anyhow::Error {
    match err {
        client::Error::Call(call) => match call.cause {
            client::CallFailure::ErrorReply { message, .. } => {
                anyhow::anyhow!("Connection activation failed: {message}")
            }
            _ => client::Error::Call(call).into(),
        },
        other => other.into(),
    }
}

fn done(printer: &mut Printer, json: bool, value: Value) -> anyhow::Result<()> {
    if json { printer.json(&value) } else { Ok(()) }
}

fn checkpoint(nm: &NmClient, path: Option<String>) -> anyhow::Result<String> {
    match path {
        Some(path) => Ok(path),
        None => nm
            .checkpoints()
            .last()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("NetworkManager holds no checkpoint")),
    }
}

fn rollback_word(code: u32) -> &'static str {
    match code {
        0 => "succeeded",
        1 => "device gone",
        2 => "device unmanaged",
        _ => "failed",
    }
}

fn profile_names(nm: &NmClient, path: &str) -> (String, String) {
    nm.connections()
        .iter()
        .find(|p| p.path() == path)
        .map(|p| (p.id().to_owned(), p.uuid().to_owned()))
        .unwrap_or_default()
}

fn activation_json(a: &Activation) -> Value {
    json!({
        "result": a.outcome.as_str(),
        "active": a.active,
        "device": a.device,
        "state_reason": a.state_reason.map(|r| r.to_string()),
        "device_state_reason": a.device_reason.map(|r| r.to_string()),
    })
}

fn report_activation(printer: &mut Printer, a: &Activation, json: bool) -> anyhow::Result<()> {
    if json {
        printer.json(&activation_json(a))?;
    }
    match a.outcome {
        Outcome::Activated => {
            if !json {
                printer.line(&format!(
                    "Connection successfully activated (D-Bus active path: {})",
                    a.active
                ))?;
            }
            Ok(())
        }
        _ => {
            printer.flush()?;
            Err(anyhow::anyhow!(
                "Connection activation failed: {}",
                a.reason()
            ))
        }
    }
}
