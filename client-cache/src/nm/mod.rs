//! The typed NetworkManager layer: NMClient's view of the cache.
//!
//! [`NmClient`] is an [`ObjectCache`] of `org.freedesktop.NetworkManager` with NetworkManager's
//! declarations (from `netmirror-dbus-meta`), and every profile's settings fetched with
//! `GetSettings`: for all profiles at once, pipelined on the one connection, before the profile
//! becomes visible, and again after each `Updated` signal. Views such as [`Device`] and
//! [`Profile`] borrow the cache and read typed properties.
//!
//! Hidden profiles follow NMClient: a profile whose `connection.permissions` exclude the user,
//! so that the daemon refuses its `GetSettings`, is not listed by [`NmClient::connections`]
//! and raises no profile events, but stays reachable through references, such as an active
//! connection's [`ActiveConnection::connection`].

use std::sync::Arc;

use zbus::Connection;

use crate::{
    CacheBuilder, Event, FetchSpec, Lookup, ObjectCache, ObjectRef, RefreshOn, Registry, Result,
    Value,
};

mod actions;
mod named;
pub mod settings;
mod views;

pub use actions::*;
pub use named::{Named, named};
pub use netmirror_dbus_meta::nm::{
    ActivationStateFlags, ActiveConnectionState, ActiveConnectionStateReason, ConnectivityState,
    DeviceCapabilities, DeviceInterfaceFlags, DeviceState, DeviceStateReason, DeviceType,
    IpTunnelMode, Metered, RadioFlags, State,
};
pub use settings::Settings as ProfileSettings;
pub use views::*;

/// The service name.
pub const SERVICE: &str = "org.freedesktop.NetworkManager";
/// The path of NetworkManager's ObjectManager.
pub const MANAGER_PATH: &str = "/org/freedesktop";
/// The path of the NetworkManager object.
pub const NM_PATH: &str = "/org/freedesktop/NetworkManager";
/// The path of the Settings object.
pub const SETTINGS_PATH: &str = "/org/freedesktop/NetworkManager/Settings";

/// Interface names.
pub mod iface {
    /// `org.freedesktop.NetworkManager`
    pub const NM: &str = "org.freedesktop.NetworkManager";
    /// `org.freedesktop.NetworkManager.Device`
    pub const DEVICE: &str = "org.freedesktop.NetworkManager.Device";
    /// `org.freedesktop.NetworkManager.Settings`
    pub const SETTINGS: &str = "org.freedesktop.NetworkManager.Settings";
    /// `org.freedesktop.NetworkManager.Settings.Connection`
    pub const CONNECTION: &str = "org.freedesktop.NetworkManager.Settings.Connection";
    /// `org.freedesktop.NetworkManager.Connection.Active`
    pub const ACTIVE: &str = "org.freedesktop.NetworkManager.Connection.Active";
    /// `org.freedesktop.NetworkManager.IP4Config`
    pub const IP4: &str = "org.freedesktop.NetworkManager.IP4Config";
    /// `org.freedesktop.NetworkManager.IP6Config`
    pub const IP6: &str = "org.freedesktop.NetworkManager.IP6Config";
    /// `org.freedesktop.NetworkManager.DHCP4Config`
    pub const DHCP4: &str = "org.freedesktop.NetworkManager.DHCP4Config";
    /// `org.freedesktop.NetworkManager.DHCP6Config`
    pub const DHCP6: &str = "org.freedesktop.NetworkManager.DHCP6Config";
    /// `org.freedesktop.NetworkManager.AccessPoint`
    pub const AP: &str = "org.freedesktop.NetworkManager.AccessPoint";
}

/// What changed in NetworkManager, by kind.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NmEvent {
    /// A device appeared.
    DeviceAdded(Arc<str>),
    /// A device went away.
    DeviceRemoved(Arc<str>),
    /// A (visible) profile appeared.
    ProfileAdded(Arc<str>),
    /// A (visible) profile went away.
    ProfileRemoved(Arc<str>),
    /// A profile's settings were fetched again after its `Updated` signal.
    ProfileUpdated(Arc<str>),
    /// An active connection appeared.
    ActiveAdded(Arc<str>),
    /// An active connection went away.
    ActiveRemoved(Arc<str>),
    /// A device changed state: one event per transition, in the order the daemon made them
    /// (from its `StateReason` property, which carries the state with its reason), never
    /// merged with the next one.
    DeviceStateChanged {
        /// The device's path.
        path: Arc<str>,
        /// The state before.
        old: DeviceState,
        /// The state after.
        new: DeviceState,
        /// Why.
        reason: DeviceStateReason,
    },
    /// A property of a visible object changed.
    PropertyChanged {
        /// The object's path.
        path: Arc<str>,
        /// The property's interface.
        interface: Arc<str>,
        /// The property.
        property: Arc<str>,
        /// The value before.
        old: Value,
        /// The value after.
        new: Value,
    },
    /// A (re)load completed: the cache is consistent with the daemon.
    Loaded,
    /// The daemon left the bus (`None`) or a new one took over.
    OwnerChanged(Option<Arc<str>>),
    /// Any other cache event (other objects, hidden profiles, interfaces).
    Other(Event),
}

/// NetworkManager's state, cached.
#[derive(Debug)]
pub struct NmClient {
    cache: ObjectCache,
}

impl NmClient {
    /// The cache configuration NetworkManager needs: its declarations, its ObjectManager path,
    /// and `GetSettings` for every profile (refreshed on `Updated`, and when an active
    /// connection of the profile enters or leaves `ACTIVATED`: see [`RefreshOn`]).
    pub fn builder() -> CacheBuilder {
        Self::builder_without_settings().fetch(FetchSpec {
            interface: iface::CONNECTION.into(),
            method: netmirror_dbus_meta::nm::settings_connection::methods::GET_SETTINGS
                .name()
                .into(),
            refresh: Some(
                netmirror_dbus_meta::nm::settings_connection::signals::UPDATED
                    .name()
                    .into(),
            ),
            // The daemon writes `connection.timestamp` when an active connection of the
            // profile enters or leaves ACTIVATED (2), without `Updated`.
            refresh_on: Some(RefreshOn {
                interface: iface::ACTIVE.into(),
                property: netmirror_dbus_meta::nm::connection_active::STATE
                    .name()
                    .into(),
                reference: netmirror_dbus_meta::nm::connection_active::CONNECTION
                    .name()
                    .into(),
                values: vec![ActiveConnectionState::Activated.to_u32()],
            }),
        })
    }

    /// [`NmClient::builder`] without `GetSettings`: for views that show no profile settings
    /// (devices, the manager, active connections). Every object is still loaded and kept in
    /// sync; only the profiles' settings are not asked for, so that no profile counts as visible
    /// ([`NmClient::connections`] is empty: NMClient's visibility rule needs the daemon's
    /// answer to `GetSettings`). With 551 profiles the decoded settings are most of a load's
    /// memory. A profile's settings can still be read with [`NmClient::settings_at`]; the
    /// orders of [`cmp_active_by`] and [`cmp_devices_by`] take them from there.
    pub fn builder_without_settings() -> CacheBuilder {
        ObjectCache::builder(SERVICE)
            .manager_path(MANAGER_PATH)
            .registry(Registry::network_manager())
    }

    /// [`NmClient::builder`] keeping of each profile's settings only [`LISTED_SETTINGS`]
    /// (with [`CacheBuilder::keep_fetched`]): for a listing of profiles, such as nmcli's
    /// `connection show`. Every object is loaded and kept in sync and every profile's
    /// settings are asked for, so the same profiles are visible as with
    /// [`NmClient::builder`], and [`Profile`]'s accessors and the orders of [`cmp_active`] and
    /// [`cmp_devices`] answer the same; [`Profile::settings`] holds only those few settings
    /// (the rest of each reply is passed over undecoded). With 551 profiles their whole
    /// settings are most of a load's memory.
    pub fn builder_for_listing() -> CacheBuilder {
        Self::builder().keep_fetched(LISTED_SETTINGS)
    }

    /// Load everything from the daemon on `conn` (the daemon may be absent: the cache is then
    /// empty until it appears).
    pub async fn new(conn: &Connection) -> Result<Self> {
        Self::from_builder(conn, Self::builder()).await
    }

    /// Load with a customised builder (see [`NmClient::builder`]).
    pub async fn from_builder(conn: &Connection, builder: CacheBuilder) -> Result<Self> {
        let cache = builder.build_loaded(conn).await?;
        Ok(Self { cache })
    }

    /// Load only the device whose interface is `ifname`, asking the daemon for it with
    /// `GetDeviceByIpIface` (falling back to loading everything and filtering here when the
    /// daemon refuses the method).
    pub async fn device_by_iface(conn: &Connection, ifname: &str) -> Result<Self> {
        Self::from_builder(conn, Self::builder().lookup(Self::device_lookup(ifname))).await
    }

    /// The server-side lookup of the device whose interface is `ifname` (for
    /// [`CacheBuilder::lookup`] on a customised [`NmClient::builder`]).
    pub fn device_lookup(ifname: &str) -> Lookup {
        Lookup {
            path: NM_PATH.into(),
            interface: iface::NM.into(),
            method: netmirror_dbus_meta::nm::network_manager::methods::GET_DEVICE_BY_IP_IFACE
                .name()
                .into(),
            arg: ifname.into(),
            fallback: (
                iface::DEVICE.into(),
                netmirror_dbus_meta::nm::device::INTERFACE.name().into(),
            ),
        }
    }

    /// The generic cache underneath.
    pub fn cache(&self) -> &ObjectCache {
        &self.cache
    }

    /// The generic cache underneath, mutably (to drive it directly).
    pub fn cache_mut(&mut self) -> &mut ObjectCache {
        &mut self.cache
    }

    /// Whether the daemon is on the bus.
    pub fn is_running(&self) -> bool {
        self.cache.owner().is_some()
    }

    /// The NetworkManager object.
    pub fn manager(&self) -> Option<NetworkManager<'_>> {
        self.cache.object(NM_PATH).map(NetworkManager)
    }

    /// The Settings object.
    pub fn settings(&self) -> Option<Settings<'_>> {
        self.cache.object(SETTINGS_PATH).map(Settings)
    }

    /// Realized devices, in the daemon's order (NetworkManager's `Devices`).
    pub fn devices(&self) -> Vec<Device<'_>> {
        match self.manager() {
            Some(nm) => nm.devices(),
            None => self.cache.objects_with(iface::DEVICE).map(Device).collect(),
        }
    }

    /// All devices, realized or not (NetworkManager's `AllDevices`).
    pub fn all_devices(&self) -> Vec<Device<'_>> {
        match self.manager() {
            Some(nm) => nm.all_devices(),
            None => self.cache.objects_with(iface::DEVICE).map(Device).collect(),
        }
    }

    /// The device named `ifname`.
    pub fn device_by_name(&self, ifname: &str) -> Option<Device<'_>> {
        self.cache
            .objects_with(iface::DEVICE)
            .map(Device)
            .find(|d| d.interface() == Some(ifname))
    }

    /// Visible profiles, in the daemon's order (Settings' `Connections`), hidden ones left out.
    pub fn connections(&self) -> Vec<Profile<'_>> {
        let all: Vec<Profile<'_>> = match self.settings() {
            Some(s) => s.connections(),
            None => self
                .cache
                .objects_with(iface::CONNECTION)
                .map(Profile)
                .collect(),
        };
        all.into_iter().filter(|c| self.is_visible(c)).collect()
    }

    /// Active connections.
    pub fn active_connections(&self) -> Vec<ActiveConnection<'_>> {
        match self.manager() {
            Some(nm) => nm.active_connections(),
            None => self
                .cache
                .objects_with(iface::ACTIVE)
                .map(ActiveConnection)
                .collect(),
        }
    }

    /// Whether the user may see profile `c` (NMClient's rule: the daemon let us read its
    /// settings, which it refuses where `connection.permissions` exclude the user).
    pub fn is_visible(&self, c: &Profile<'_>) -> bool {
        profile_visible(c.0)
    }

    /// The next event, by kind. The cache advances only while this is polled.
    pub async fn next_event(&mut self) -> Option<NmEvent> {
        let ev = self.cache.next_event().await?;
        Some(self.classify(ev))
    }

    /// The next event within `timeout`.
    pub async fn next_event_timeout(&mut self, timeout: std::time::Duration) -> Option<NmEvent> {
        let ev = self.cache.next_event_timeout(timeout).await?;
        Some(self.classify(ev))
    }

    /// Sort a generic event into its kind.
    pub fn classify(&self, ev: Event) -> NmEvent {
        match ev {
            Event::Added { path } => {
                let Some(o) = self.cache.object_any(&path) else {
                    return NmEvent::Other(Event::Added { path });
                };
                if o.has_interface(iface::DEVICE) {
                    NmEvent::DeviceAdded(path)
                } else if o.has_interface(iface::CONNECTION) && profile_visible(o) {
                    NmEvent::ProfileAdded(path)
                } else if o.has_interface(iface::ACTIVE) {
                    NmEvent::ActiveAdded(path)
                } else {
                    NmEvent::Other(Event::Added { path })
                }
            }
            Event::Removed { path, object } => {
                if object.has_interface(iface::DEVICE) {
                    NmEvent::DeviceRemoved(path)
                } else if object.has_interface(iface::CONNECTION) && object_visible(&object) {
                    NmEvent::ProfileRemoved(path)
                } else if object.has_interface(iface::ACTIVE) {
                    NmEvent::ActiveRemoved(path)
                } else {
                    NmEvent::Other(Event::Removed { path, object })
                }
            }
            Event::Refetched { path, old, new } => {
                let visible = self
                    .cache
                    .object_any(&path)
                    .is_some_and(|o| profile_visible(o));
                if visible {
                    NmEvent::ProfileUpdated(path)
                } else {
                    NmEvent::Other(Event::Refetched { path, old, new })
                }
            }
            Event::PropertyChanged {
                path,
                interface,
                property,
                old,
                new,
            } if &*interface == iface::DEVICE
                && &*property == netmirror_dbus_meta::nm::device::STATE_REASON.name() =>
            {
                match (state_reason(Some(&old)), state_reason(Some(&new))) {
                    (Some((old_state, _)), Some((new_state, reason))) => {
                        NmEvent::DeviceStateChanged {
                            path,
                            old: old_state,
                            new: new_state,
                            reason,
                        }
                    }
                    _ => NmEvent::PropertyChanged {
                        path,
                        interface,
                        property,
                        old,
                        new,
                    },
                }
            }
            Event::PropertyChanged {
                path,
                interface,
                property,
                old,
                new,
            } => NmEvent::PropertyChanged {
                path,
                interface,
                property,
                old,
                new,
            },
            Event::Loaded => NmEvent::Loaded,
            Event::OwnerChanged { owner } => NmEvent::OwnerChanged(owner),
            other => NmEvent::Other(other),
        }
    }
}

fn profile_visible(o: ObjectRef<'_>) -> bool {
    object_visible(o.object())
}

fn object_visible(o: &crate::Object) -> bool {
    // NMClient's rule: the daemon decides. It refuses `GetSettings` to a user that a profile's
    // `connection.permissions` exclude (root is never excluded), and such a profile is hidden.
    o.fetched().is_some()
}

#[cfg(test)]
mod tests;
