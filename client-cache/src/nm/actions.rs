//! The write side of the NetworkManager layer: actions on [`NmClient`] that return once the
//! cache shows their outcome.
//!
//! Each action calls NetworkManager on the cache's own connection while the cache keeps
//! handling messages ([`ObjectCache::drive`](crate::ObjectCache::drive)), then waits, within
//! the caller's timeout, until the cache holds the state the action produced (a profile's
//! settings fetched, an active connection `activated` or gone, a property at its new value).
//! Events stay queued for the caller. NetworkManager's refusals (`PermissionDenied`, polkit) are
//! [`Error::NotAuthorized`]; its other errors are [`Error::Call`] with its name and message.
//!
//! ```no_run
//! # zbus::block_on(async {
//! use std::time::Duration;
//! use netmirror_client_cache::nm::{settings::Settings, NmClient, Outcome, Persist};
//!
//! let conn = zbus::Connection::system().await?;
//! let mut nm = NmClient::new(&conn).await?;
//! let mut profile = Settings::profile("ethernet", "lab")?;
//! profile.set_words(&["ifname", "eth1", "ip4", "192.0.2.1/24", "autoconnect", "no"])?;
//! nm.add_profile(profile.map(), Persist::Disk, Duration::from_secs(10)).await?;
//! let up = nm.activate("lab", None, Duration::from_secs(30)).await?;
//! if up.outcome != Outcome::Activated {
//!     eprintln!("activation failed: {}", up.reason());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # });
//! ```

use std::{collections::HashMap, num::NonZeroUsize, time::Duration};

use futures_util::{FutureExt, StreamExt};
use netmirror_dbus_meta::nm::{
    ActiveConnectionState, ActiveConnectionStateReason, DeviceStateReason,
};
use serde::Serialize;
use zbus::{Message, MessageStream, OwnedObjectPath, OwnedVariant, Variant};

use super::{NM_PATH, NmClient, SERVICE, SETTINGS_PATH, iface, settings::SettingsMap};
use crate::{CallError, CallFailure, Error, Event, Result, Value};

/// How an activation (or deactivation) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The connection is active.
    Activated,
    /// The activation failed: see the reasons.
    Failed,
    /// The connection was deactivated (as asked).
    Deactivated,
}

impl Outcome {
    /// `activated`, `failed` or `deactivated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Activated => "activated",
            Outcome::Failed => "failed",
            Outcome::Deactivated => "deactivated",
        }
    }
}

/// The result of [`NmClient::activate`] or [`NmClient::deactivate`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Activation {
    /// How it ended.
    pub outcome: Outcome,
    /// The active connection's path.
    pub active: String,
    /// The device's interface name, when one was known.
    pub device: Option<String>,
    /// The active connection's last state reason (from its `StateChanged` signal; `None` when
    /// the cache showed the outcome before the signal came).
    pub state_reason: Option<ActiveConnectionStateReason>,
    /// The device's state reason at the end, when there is a device.
    pub device_reason: Option<DeviceStateReason>,
}

impl Activation {
    /// The reason as nmcli words it: the device's reason where the active connection only says
    /// that its device was disconnected, the active connection's otherwise.
    pub fn reason(&self) -> String {
        match (self.state_reason, self.device_reason) {
            (Some(ActiveConnectionStateReason::DeviceDisconnected) | None, Some(dev)) => {
                dev.to_string()
            }
            (Some(ac), _) => ac.to_string(),
            (None, None) => ActiveConnectionStateReason::Unknown(0).to_string(),
        }
    }
}

/// Where [`NmClient::add_profile`] and [`NmClient::update_profile`] keep a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Persist {
    /// On disk (the default).
    #[default]
    Disk,
    /// In memory only.
    Memory,
}

/// Options of [`NmClient::update_profile`].
#[derive(Debug, Clone, Copy, Default)]
pub struct UpdateOptions {
    /// Where to keep the profile.
    pub persist: Persist,
    /// Do not reapply the change to an active device (`no-reapply`).
    pub no_reapply: bool,
    /// Block autoconnect of the profile (`block-autoconnect`).
    pub block_autoconnect: bool,
}

/// Which radio [`NmClient::set_radio`] switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Radio {
    /// Wi-Fi (`WirelessEnabled`).
    Wifi,
    /// Mobile broadband (`WwanEnabled`).
    Wwan,
}

/// The result of a checkpoint rollback: each device path with NetworkManager's result code
/// (0 success, 1 device gone, 2 device unmanaged, 3 failed).
pub type RollbackResult = Vec<(String, u32)>;

impl NmClient {
    /// Call `method` of NetworkManager while the cache keeps going; `action` words a refusal.
    async fn call<B>(
        &mut self,
        path: &str,
        interface: &str,
        method: &str,
        body: &B,
        action: &str,
    ) -> Result<Message>
    where
        B: Serialize + zbus::DynamicType,
    {
        let conn = self.cache().connection().clone();
        let call = conn.call_method(Some(SERVICE), path, Some(interface), method, body);
        let res = self.cache_mut().drive(deadline(call)).await??;
        res.map_err(|e| remote(e, action))
    }

    async fn set_property(
        &mut self,
        path: &str,
        interface: &str,
        property: &str,
        value: Variant<'_>,
        action: &str,
    ) -> Result<()> {
        self.call(
            path,
            "org.freedesktop.DBus.Properties",
            "Set",
            &(interface, property, value),
            action,
        )
        .await
        .map(drop)
    }

    /// The path of the profile with this id, UUID or path.
    pub fn profile_path(&self, id: &str) -> Result<String> {
        let profiles = self.connections();
        profiles
            .iter()
            .find(|p| p.path() == id || p.uuid() == id)
            .or_else(|| profiles.iter().find(|p| p.id() == id))
            .map(|p| p.path().to_owned())
            .ok_or_else(|| Error::NotFound {
                kind: "profile",
                name: id.to_owned(),
            })
    }

    /// The path of the device named `ifname` (or with this path).
    pub fn device_path(&self, ifname: &str) -> Result<String> {
        self.all_devices()
            .iter()
            .find(|d| d.interface() == Some(ifname) || d.path() == ifname)
            .map(|d| d.path().to_owned())
            .ok_or_else(|| Error::NotFound {
                kind: "device",
                name: ifname.to_owned(),
            })
    }

    /// Activate profile `profile` (id, UUID or path) on device `device` (an interface name;
    /// `None`: the profile's own interface, chosen by NetworkManager), and wait up to `timeout`
    /// until it is activated or has failed. A profile NetworkManager cannot activate at all
    /// (no suitable device) is an error naming its reason.
    pub async fn activate(
        &mut self,
        profile: &str,
        device: Option<&str>,
        timeout: Duration,
    ) -> Result<Activation> {
        let profile_path = self.profile_path(profile)?;
        let device_path = match device {
            Some(d) => self.device_path(d)?,
            None => "/".to_owned(),
        };
        let action = format!("activate profile {profile:?}");
        self.activate_paths(&profile_path, &device_path, &action, timeout)
            .await
    }

    /// Activate the best available profile on device `ifname` (NetworkManager chooses, as
    /// `nmcli device connect`), and wait as [`NmClient::activate`] does.
    pub async fn connect_device(&mut self, ifname: &str, timeout: Duration) -> Result<Activation> {
        let device_path = self.device_path(ifname)?;
        let action = format!("connect device {ifname:?}");
        self.activate_paths("/", &device_path, &action, timeout)
            .await
    }

    async fn activate_paths(
        &mut self,
        profile_path: &str,
        device_path: &str,
        action: &str,
        timeout: Duration,
    ) -> Result<Activation> {
        let body = (path(profile_path)?, path(device_path)?, path("/")?);
        let reply = self
            .activation_call("ActivateConnection", &body, action)
            .await?;
        let active: OwnedObjectPath = reply
            .0
            .body()
            .deserialize()
            .map_err(|e| malformed(e, action))?;
        self.wait_active(active.as_str(), reply.1, reply.2, reply.3, false, timeout)
            .await
    }

    /// Add a profile (in memory, as NetworkManager does for this call) and activate it on
    /// device `device` (an interface name; `None`: NetworkManager chooses), in one call
    /// (`AddAndActivateConnection`); waits as [`NmClient::activate`] does.
    pub async fn add_and_activate(
        &mut self,
        settings: &SettingsMap,
        device: Option<&str>,
        timeout: Duration,
    ) -> Result<Activation> {
        let device_path = match device {
            Some(d) => self.device_path(d)?,
            None => "/".to_owned(),
        };
        let body = (settings, path(&device_path)?, path("/")?);
        let action = "add and activate a profile";
        let reply = self
            .activation_call("AddAndActivateConnection", &body, action)
            .await?;
        let (profile, active): (OwnedObjectPath, OwnedObjectPath) = reply
            .0
            .body()
            .deserialize()
            .map_err(|e| malformed(e, action))?;
        let started = std::time::Instant::now();
        let activation = self
            .wait_active(active.as_str(), reply.1, reply.2, reply.3, false, timeout)
            .await?;
        // The new profile, with its settings, is in the cache too.
        let left = timeout.saturating_sub(started.elapsed());
        let held = self
            .cache_mut()
            .wait_until(
                |c| c.object(&profile).is_some_and(|o| o.fetched().is_some()),
                left,
            )
            .await?;
        if !held {
            return Err(Error::Timeout(timeout));
        }
        Ok(activation)
    }

    /// Call an activating method with the active connections' `StateChanged` signals
    /// subscribed first (an activation can end before the reply); the reply, the signals
    /// received meanwhile and the stream.
    async fn activation_call<B>(
        &mut self,
        method: &str,
        body: &B,
        action: &str,
    ) -> Result<(Message, Vec<Message>, MessageStream, usize)>
    where
        B: Serialize + zbus::DynamicType,
    {
        let mut signals = self.state_signals().await?;
        let mark = self.cache().queued_events();
        let conn = self.cache().connection().clone();
        let mut early = Vec::new();
        let reply = {
            let call = conn.call_method(Some(SERVICE), NM_PATH, Some(iface::NM), method, body);
            let drain = async {
                while let Some(Ok(m)) = signals.next().await {
                    early.push(m);
                }
                std::future::pending::<std::convert::Infallible>().await
            };
            let both = async {
                futures_util::pin_mut!(call);
                futures_util::pin_mut!(drain);
                match futures_util::future::select(call, drain).await {
                    futures_util::future::Either::Left((res, _)) => res,
                    futures_util::future::Either::Right((never, _)) => match never {},
                }
            };
            self.cache_mut().drive(deadline(both)).await??
        };
        let reply = reply.map_err(|e| remote(e, action))?;
        Ok((reply, early, signals, mark))
    }

    /// Deactivate the active connection of profile `profile` (id, UUID, profile path or active
    /// connection path), and wait up to `timeout` until it is gone.
    pub async fn deactivate(&mut self, profile: &str, timeout: Duration) -> Result<Activation> {
        let active = self
            .active_connections()
            .iter()
            .find(|a| {
                a.path() == profile
                    || a.connection().is_some_and(|p| {
                        p.id() == profile || p.uuid() == profile || p.path() == profile
                    })
            })
            .map(|a| a.path().to_owned())
            .ok_or_else(|| Error::NotFound {
                kind: "active connection",
                name: profile.to_owned(),
            })?;
        let signals = self.state_signals().await?;
        let mark = self.cache().queued_events();
        self.call(
            NM_PATH,
            iface::NM,
            "DeactivateConnection",
            &(path(&active)?,),
            &format!("deactivate {profile:?}"),
        )
        .await?;
        self.wait_active(&active, Vec::new(), signals, mark, true, timeout)
            .await
    }

    /// A stream of active connections' `StateChanged` signals (they carry the reason, which no
    /// property has).
    async fn state_signals(&mut self) -> Result<MessageStream> {
        let mut rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(iface::ACTIVE)
            .member("StateChanged");
        if let Some(owner) = self.cache().owner() {
            rule = rule.sender(owner.to_owned());
        }
        let rule = rule.build()?;
        let conn = self.cache().connection().clone();
        let stream = MessageStream::for_match_rule(rule, &conn, NonZeroUsize::new(1024));
        Ok(self.cache_mut().drive(deadline(stream)).await???)
    }

    async fn wait_active(
        &mut self,
        active: &str,
        early: Vec<Message>,
        mut signals: MessageStream,
        mark: usize,
        deactivating: bool,
        timeout: Duration,
    ) -> Result<Activation> {
        let mut last: Option<(ActiveConnectionState, ActiveConnectionStateReason)> = None;
        for m in &early {
            note(&mut last, active, m);
        }
        let mut device = self.active_device(active);
        let done = self
            .cache_mut()
            .wait_until(
                |cache| {
                    while let Some(Some(Ok(m))) = signals.next().now_or_never() {
                        note(&mut last, active, &m);
                    }
                    let cached = cache
                        .object_any(active)
                        .and_then(|o| o.prop(iface::ACTIVE, "State").and_then(Value::as_u32))
                        .map(ActiveConnectionState::from);
                    let gone = cache.object_any(active).is_none();
                    if deactivating {
                        // Done when NetworkManager has dropped the active connection.
                        return gone;
                    }
                    // Activated: visible in the cache (its device, profile and IP configs
                    // there too). Failed: deactivated as the signal says, or gone.
                    let visible = cache.object(active).is_some();
                    let failed = matches!(last, Some((ActiveConnectionState::Deactivated, _)));
                    (cached == Some(ActiveConnectionState::Activated) && visible)
                        || (failed && (gone || cached == Some(ActiveConnectionState::Deactivated)))
                        || (gone && removed(cache.pending_events(), active))
                },
                timeout,
            )
            .await?;
        if !done {
            return Err(Error::Timeout(timeout));
        }
        if device.is_none() {
            device = self.active_device(active);
        }
        let (state, state_reason) = match last {
            Some((state, reason)) => (state, Some(reason)),
            None => {
                let state = self
                    .cache()
                    .object_any(active)
                    .and_then(|o| o.prop(iface::ACTIVE, "State").and_then(Value::as_u32))
                    .map_or(
                        ActiveConnectionState::Deactivated,
                        ActiveConnectionState::from,
                    );
                (state, None)
            }
        };
        let device_reason = device.as_ref().and_then(|(path, _)| {
            // The reason the device gave when it failed, from the property changes queued
            // since the call (it moves on to `disconnected`, reason none, right after);
            // otherwise its reason now.
            let failed = self
                .cache()
                .pending_events()
                .skip(mark)
                .filter_map(|e| match e {
                    Event::PropertyChanged {
                        path: p,
                        property,
                        new,
                        ..
                    } if **p == **path && &**property == "StateReason" => device_state_reason(new),
                    _ => None,
                })
                .filter(|(state, _)| *state == DEVICE_STATE_FAILED)
                .last();
            if let Some((_, reason)) = failed {
                return Some(reason);
            }
            let o = self.cache().object_any(path)?;
            device_state_reason(o.prop(iface::DEVICE, "StateReason")?).map(|(_, reason)| reason)
        });
        let outcome = match state {
            ActiveConnectionState::Activated if !deactivating => Outcome::Activated,
            _ if deactivating => Outcome::Deactivated,
            _ => Outcome::Failed,
        };
        Ok(Activation {
            outcome,
            active: active.to_owned(),
            device: device.map(|(_, name)| name),
            state_reason,
            device_reason,
        })
    }

    /// The device (path, interface) of an active connection, from the cache.
    fn active_device(&self, active: &str) -> Option<(String, String)> {
        let o = self.cache().object_any(active)?;
        let first = o
            .prop(iface::ACTIVE, "Devices")?
            .as_strs()?
            .first()?
            .to_string();
        let name = self
            .cache()
            .object_any(&first)?
            .prop(iface::DEVICE, "Interface")?
            .as_str()?
            .to_owned();
        Some((first, name))
    }

    /// Add a profile (`AddConnection2`) and wait until the cache holds it with its settings;
    /// its path.
    pub async fn add_profile(
        &mut self,
        settings: &SettingsMap,
        persist: Persist,
        timeout: Duration,
    ) -> Result<String> {
        let flags: u32 = match persist {
            Persist::Disk => 0x1,
            Persist::Memory => 0x2,
        };
        let args: HashMap<&str, Variant<'_>> = HashMap::new();
        let id = settings
            .get("connection")
            .and_then(|c| c.get("id"))
            .map(|v| v.to_string())
            .unwrap_or_default();
        let reply = self
            .call(
                SETTINGS_PATH,
                iface::SETTINGS,
                "AddConnection2",
                &(settings, flags, args),
                &format!("add profile {id}"),
            )
            .await?;
        let (new, _result): (OwnedObjectPath, HashMap<String, OwnedVariant>) = reply
            .body()
            .deserialize()
            .map_err(|e| malformed(e, "add"))?;
        let new = new.as_str().to_owned();
        let held = self
            .cache_mut()
            .wait_until(
                |c| c.object(&new).is_some_and(|o| o.fetched().is_some()),
                timeout,
            )
            .await?;
        if !held {
            return Err(Error::Timeout(timeout));
        }
        Ok(new)
    }

    /// The settings of profile `profile` as the daemon has them now (`GetSettings`), to change
    /// and send back with [`NmClient::update_profile`].
    pub async fn profile_settings(&mut self, profile: &str) -> Result<SettingsMap> {
        let path = self.profile_path(profile)?;
        self.get_settings(&path, &format!("read profile {profile:?}"))
            .await
    }

    /// The settings of the profile at `path` as the daemon has them now (`GetSettings`),
    /// whether or not the cache holds them (a cache built with
    /// [`NmClient::builder_without_settings`] does not) or shows the profile; nothing is kept.
    pub async fn settings_at(&mut self, path: &str) -> Result<SettingsMap> {
        self.get_settings(path, &format!("read the settings of {path}"))
            .await
    }

    /// The secrets of setting `setting` of the profile at `path` (`GetSecrets`, as
    /// `nmcli --show-secrets` asks them), as the daemon hands them to this caller: a refusal
    /// is [`Error::NotAuthorized`]; nothing is kept.
    pub async fn secrets_at(&mut self, path: &str, setting: &str) -> Result<SettingsMap> {
        let reply = self
            .call(
                path,
                iface::CONNECTION,
                "GetSecrets",
                &(setting,),
                &format!("read the {setting} secrets of {path}"),
            )
            .await?;
        reply.body().deserialize().map_err(|e| malformed(e, "read"))
    }

    /// `GetSettings` on the profile at `path`; `what` words the call in an error.
    async fn get_settings(&mut self, path: &str, what: &str) -> Result<SettingsMap> {
        let reply = self
            .call(path, iface::CONNECTION, "GetSettings", &(), what)
            .await?;
        reply.body().deserialize().map_err(|e| malformed(e, "read"))
    }

    /// Replace profile `profile`'s settings (`Update2`) and wait until the cache has fetched
    /// them again. An active device keeps what it applied (except `connection.zone` and
    /// `connection.metered`, unless [`UpdateOptions::no_reapply`]) until
    /// [`NmClient::reapply_device`] or a new activation, as with nmcli.
    pub async fn update_profile(
        &mut self,
        profile: &str,
        settings: &SettingsMap,
        options: UpdateOptions,
        timeout: Duration,
    ) -> Result<()> {
        let path = self.profile_path(profile)?;
        let mut flags: u32 = match options.persist {
            Persist::Disk => 0x1,
            Persist::Memory => 0x2,
        };
        if options.block_autoconnect {
            flags |= 0x20;
        }
        if options.no_reapply {
            flags |= 0x40;
        }
        let mark = self.cache().queued_events();
        let args: HashMap<&str, Variant<'_>> = HashMap::new();
        self.call(
            &path,
            iface::CONNECTION,
            "Update2",
            &(settings, flags, args),
            &format!("modify profile {profile:?}"),
        )
        .await?;
        let held = self
            .cache_mut()
            .wait_until(
                |c| {
                    c.pending_events()
                        .skip(mark)
                        .any(|e| matches!(e, Event::Refetched { path: p, .. } if **p == *path))
                },
                timeout,
            )
            .await?;
        if !held {
            return Err(Error::Timeout(timeout));
        }
        Ok(())
    }

    /// Delete profile `profile` and wait until it has left the cache.
    pub async fn delete_profile(&mut self, profile: &str, timeout: Duration) -> Result<()> {
        let path = self.profile_path(profile)?;
        self.call(
            &path,
            iface::CONNECTION,
            "Delete",
            &(),
            &format!("delete profile {profile:?}"),
        )
        .await?;
        let gone = self
            .cache_mut()
            .wait_until(|c| c.object_any(&path).is_none(), timeout)
            .await?;
        if !gone {
            return Err(Error::Timeout(timeout));
        }
        Ok(())
    }

    /// Reload every profile from disk (`ReloadConnections`); the cache holds the result when
    /// this returns.
    pub async fn reload_profiles(&mut self) -> Result<()> {
        self.call(
            SETTINGS_PATH,
            iface::SETTINGS,
            "ReloadConnections",
            &(),
            "reload profiles",
        )
        .await
        .map(drop)
    }

    /// Disconnect device `ifname` and wait until it is disconnected (or lower).
    pub async fn disconnect_device(&mut self, ifname: &str, timeout: Duration) -> Result<()> {
        let path = self.device_path(ifname)?;
        self.call(
            &path,
            iface::DEVICE,
            "Disconnect",
            &(),
            &format!("disconnect device {ifname:?}"),
        )
        .await?;
        let done = self
            .cache_mut()
            .wait_until(
                |c| {
                    c.object_any(&path)
                        .and_then(|o| o.prop(iface::DEVICE, "State").and_then(Value::as_u32))
                        .is_none_or(|s| s <= 30)
                },
                timeout,
            )
            .await?;
        if !done {
            return Err(Error::Timeout(timeout));
        }
        Ok(())
    }

    /// Reapply the device's applied profile from the profile's current settings (`Reapply`).
    pub async fn reapply_device(&mut self, ifname: &str) -> Result<()> {
        let path = self.device_path(ifname)?;
        let empty: HashMap<&str, HashMap<&str, Variant<'_>>> = HashMap::new();
        self.call(
            &path,
            iface::DEVICE,
            "Reapply",
            &(empty, 0u64, 0u32),
            &format!("reapply device {ifname:?}"),
        )
        .await
        .map(drop)
    }

    /// Set device `ifname`'s `Managed` and wait until the cache shows it.
    pub async fn set_managed(
        &mut self,
        ifname: &str,
        managed: bool,
        timeout: Duration,
    ) -> Result<()> {
        self.set_device_bool(ifname, "Managed", managed, "set managed", timeout)
            .await
    }

    /// Set device `ifname`'s `Autoconnect` and wait until the cache shows it.
    pub async fn set_autoconnect(
        &mut self,
        ifname: &str,
        autoconnect: bool,
        timeout: Duration,
    ) -> Result<()> {
        self.set_device_bool(
            ifname,
            "Autoconnect",
            autoconnect,
            "set autoconnect",
            timeout,
        )
        .await
    }

    async fn set_device_bool(
        &mut self,
        ifname: &str,
        property: &str,
        value: bool,
        words: &str,
        timeout: Duration,
    ) -> Result<()> {
        let path = self.device_path(ifname)?;
        self.set_property(
            &path,
            iface::DEVICE,
            property,
            Variant::from(value),
            &format!("{words} of device {ifname:?}"),
        )
        .await?;
        self.wait_prop(&path, iface::DEVICE, property, value, timeout)
            .await
    }

    async fn wait_prop(
        &mut self,
        path: &str,
        interface: &str,
        property: &str,
        value: bool,
        timeout: Duration,
    ) -> Result<()> {
        let done = self
            .cache_mut()
            .wait_until(
                |c| {
                    c.object_any(path)
                        .and_then(|o| o.prop(interface, property).and_then(Value::as_bool))
                        == Some(value)
                },
                timeout,
            )
            .await?;
        if !done {
            return Err(Error::Timeout(timeout));
        }
        Ok(())
    }

    /// Turn networking on or off (`Enable`) and wait until `NetworkingEnabled` says so.
    pub async fn set_networking(&mut self, on: bool, timeout: Duration) -> Result<()> {
        let words = if on {
            "enable networking"
        } else {
            "disable networking"
        };
        self.call(NM_PATH, iface::NM, "Enable", &(on,), words)
            .await?;
        self.wait_prop(NM_PATH, iface::NM, "NetworkingEnabled", on, timeout)
            .await
    }

    /// Switch a radio on or off and wait until the cache shows it.
    pub async fn set_radio(&mut self, radio: Radio, on: bool, timeout: Duration) -> Result<()> {
        let (property, words) = match radio {
            Radio::Wifi => ("WirelessEnabled", "switch the Wi-Fi radio"),
            Radio::Wwan => ("WwanEnabled", "switch the WWAN radio"),
        };
        self.set_property(NM_PATH, iface::NM, property, Variant::from(on), words)
            .await?;
        self.wait_prop(NM_PATH, iface::NM, property, on, timeout)
            .await
    }

    /// Create a checkpoint of `devices` (interface names; none: all devices) that rolls back
    /// by itself after `rollback_timeout` seconds (0: never); its path.
    pub async fn checkpoint_create(
        &mut self,
        devices: &[&str],
        rollback_timeout: u32,
    ) -> Result<String> {
        let mut found = Vec::new();
        for d in devices {
            found.push(self.device_path(d)?);
        }
        let paths = found.iter().map(|p| path(p)).collect::<Result<Vec<_>>>()?;
        let reply = self
            .call(
                NM_PATH,
                iface::NM,
                "CheckpointCreate",
                &(paths, rollback_timeout, 0u32),
                "create a checkpoint",
            )
            .await?;
        let cp: OwnedObjectPath = reply
            .body()
            .deserialize()
            .map_err(|e| malformed(e, "checkpoint"))?;
        Ok(cp.as_str().to_owned())
    }

    /// Roll back to checkpoint `checkpoint` (its path); each device's result. The cache holds
    /// what NetworkManager announced before its reply when this returns.
    pub async fn checkpoint_rollback(&mut self, checkpoint: &str) -> Result<RollbackResult> {
        let reply = self
            .call(
                NM_PATH,
                iface::NM,
                "CheckpointRollback",
                &(path(checkpoint)?,),
                "roll back a checkpoint",
            )
            .await?;
        let results: HashMap<String, u32> = reply
            .body()
            .deserialize()
            .map_err(|e| malformed(e, "rollback"))?;
        let mut v: RollbackResult = results.into_iter().collect();
        v.sort();
        Ok(v)
    }

    /// Destroy checkpoint `checkpoint` (its path) without rolling back.
    pub async fn checkpoint_destroy(&mut self, checkpoint: &str) -> Result<()> {
        self.call(
            NM_PATH,
            iface::NM,
            "CheckpointDestroy",
            &(path(checkpoint)?,),
            "destroy a checkpoint",
        )
        .await
        .map(drop)
    }

    /// The checkpoints NetworkManager holds (its `Checkpoints` property).
    pub fn checkpoints(&self) -> Vec<String> {
        self.cache()
            .object_any(NM_PATH)
            .and_then(|o| o.prop(iface::NM, "Checkpoints").and_then(Value::as_strs))
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default()
    }
}

/// `NM_DEVICE_STATE_FAILED`.
const DEVICE_STATE_FAILED: u32 = 120;

/// A device's `StateReason` `(state, reason)`.
fn device_state_reason(value: &Value) -> Option<(u32, DeviceStateReason)> {
    match value {
        Value::Struct(fields) => Some((
            fields.first()?.as_u32()?,
            DeviceStateReason::from(fields.get(1)?.as_u32()?),
        )),
        _ => None,
    }
}

/// How long NetworkManager gets to answer a call (libdbus's default, which nmcli has too).
const CALL_DEADLINE: Duration = Duration::from_secs(25);

/// `fut`, or [`Error::Timeout`] after [`CALL_DEADLINE`]: a daemon that never answers does not
/// hang the caller.
async fn deadline<F: std::future::Future>(fut: F) -> Result<F::Output> {
    let timer = crate::cache::timer_at(std::time::Instant::now() + CALL_DEADLINE)?;
    futures_util::pin_mut!(fut);
    futures_util::pin_mut!(timer);
    match futures_util::future::select(fut, timer).await {
        futures_util::future::Either::Left((out, _)) => Ok(out),
        futures_util::future::Either::Right(_) => Err(Error::Timeout(CALL_DEADLINE)),
    }
}

/// Record an active connection's `StateChanged(state, reason)` if it is about `active`.
fn note(
    last: &mut Option<(ActiveConnectionState, ActiveConnectionStateReason)>,
    active: &str,
    m: &Message,
) {
    if m.header().path().map(|p| p.as_str()) == Some(active)
        && let Ok((state, reason)) = m.body().deserialize::<(u32, u32)>()
    {
        *last = Some((state.into(), reason.into()));
    }
}

/// Whether a queued removal of `path` carries a deactivated state.
fn removed<'a>(mut events: impl Iterator<Item = &'a Event>, path: &str) -> bool {
    events.any(|e| matches!(e, Event::Removed { path: p, .. } if **p == *path))
}

/// A reply whose body is not what NetworkManager documents.
fn malformed(err: zbus::Error, what: &str) -> Error {
    CallError {
        method: what.to_owned(),
        service: SERVICE.to_owned(),
        path: String::new(),
        cause: CallFailure::Malformed(err.to_string()),
    }
    .into()
}

fn path(p: &str) -> Result<zbus::ObjectPath<'_>> {
    zbus::ObjectPath::try_from(p).map_err(|_| Error::InvalidName {
        what: "object path",
        value: p.to_owned(),
    })
}

/// A failed call as the crate's error: refusals (the bus's typed `AccessDenied`,
/// `AuthFailed`, `InteractiveAuthorizationRequired`, or a service's `….PermissionDenied`) are
/// [`Error::NotAuthorized`], other error replies [`Error::Call`] with their name and message.
pub(crate) fn remote(err: zbus::Error, action: &str) -> Error {
    let not_authorized = |message: String| Error::NotAuthorized {
        action: action.to_owned(),
        message,
    };
    let error_reply = |name: String, message: String| -> Error {
        CallError {
            method: action.to_owned(),
            service: SERVICE.to_owned(),
            path: String::new(),
            cause: CallFailure::ErrorReply { name, message },
        }
        .into()
    };
    match err {
        // zbus turns the bus's own error names into `fdo::Error`'s variants.
        zbus::Error::FDO(e) => match *e {
            zbus::fdo::Error::AccessDenied(m)
            | zbus::fdo::Error::AuthFailed(m)
            | zbus::fdo::Error::InteractiveAuthorizationRequired(m) => not_authorized(m),
            zbus::fdo::Error::ZBus(inner) => Error::DBus(inner),
            other => {
                let name = zbus::DBusError::name(&other).to_string();
                let message = zbus::DBusError::description(&other)
                    .unwrap_or_default()
                    .to_owned();
                error_reply(name, message)
            }
        },
        zbus::Error::MethodError(name, message, _) => {
            let message = message.unwrap_or_default();
            if name.as_str().ends_with(".PermissionDenied") {
                not_authorized(message)
            } else {
                error_reply(name.as_str().to_owned(), message)
            }
        }
        other => Error::DBus(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error a call gets from an error reply `name`, as zbus hands it over.
    fn reply_error(name: &str) -> zbus::Error {
        let call = zbus::Message::method_call("/org/freedesktop/NetworkManager", "Enable")
            .destination(SERVICE)
            .build(&())
            .unwrap();
        let reply = zbus::Message::error(&call.header(), name)
            .sender(":1.5")
            .build(&("no",))
            .unwrap();
        zbus::Error::from(reply)
    }

    #[test]
    fn refusals_are_not_authorized() {
        for name in [
            "org.freedesktop.NetworkManager.PermissionDenied",
            "org.freedesktop.NetworkManager.Settings.PermissionDenied",
            "org.freedesktop.DBus.Error.AccessDenied",
            "org.freedesktop.DBus.Error.AuthFailed",
            "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
        ] {
            match remote(reply_error(name), "enable") {
                Error::NotAuthorized { action, message } => {
                    assert_eq!(
                        (action.as_str(), message.as_str()),
                        ("enable", "no"),
                        "{name}"
                    );
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        for name in [
            "org.freedesktop.NetworkManager.UnknownConnection",
            "org.freedesktop.DBus.Error.UnknownMethod",
        ] {
            match remote(reply_error(name), "enable") {
                Error::Call(call) => {
                    assert_eq!(call.error_name(), Some(name));
                    assert_eq!(
                        call.cause,
                        CallFailure::ErrorReply {
                            name: name.into(),
                            message: "no".into()
                        }
                    );
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
