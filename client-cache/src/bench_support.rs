//! Hooks for the criterion benchmarks: load a prepared `GetManagedObjects` reply into a fresh
//! cache core, without I/O, so that decoding and applying can be timed alone. Not public API.

use crate::{
    core::{Config, Core, Scope},
    debug::DebugConfig,
    meta::Registry,
};

/// A core waiting for its `GetManagedObjects` reply, and that reply.
pub struct PreparedLoad {
    core: Core,
    reply: zbus::Message,
}

impl std::fmt::Debug for PreparedLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedLoad").finish_non_exhaustive()
    }
}

impl PreparedLoad {
    /// Serialize `objects` (an `a{oa{sa{sv}}}`) as the reply to a fresh core's load call.
    pub fn new(
        registry: Registry,
        objects: &(impl serde::Serialize + zbus::wire::DynamicType),
    ) -> zbus::Result<Self> {
        let cfg = Config {
            service: "org.example.Bench".into(),
            manager_path: "/".into(),
            registry,
            fetches: Vec::new(),
            keep_fetched: None,
            scope: Scope::All,
            debug: DebugConfig::tolerant(),
            timeout: crate::core::DEFAULT_TIMEOUT,
            max_events: crate::core::DEFAULT_MAX_EVENTS,
        };
        let mut core = Core::new(cfg, false);
        core.start();
        let call = core.out.pop().ok_or(zbus::Error::Unsupported)?;
        let reply = zbus::Message::method_return(&call.header()).build(objects)?;
        Ok(Self { core, reply })
    }

    /// Decode and apply the reply (all three phases). Returns the loaded cache core, so that
    /// the caller decides when to pay for dropping it (criterion drops outputs untimed).
    pub fn apply(mut self) -> LoadedCore {
        self.core.handle(&self.reply);
        self.core.commit();
        LoadedCore(self.core)
    }
}

/// A cache core after [`PreparedLoad::apply`].
pub struct LoadedCore(Core);

impl std::fmt::Debug for LoadedCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedCore").finish_non_exhaustive()
    }
}

impl LoadedCore {
    /// How many objects are visible.
    pub fn visible(&self) -> usize {
        self.0.store.slots.iter().filter(|s| s.visible).count()
    }
}

/// The method call `iface.member(args...)` on `path` of `dest` (string arguments), written as
/// the cache writes every call it makes.
pub fn method_call(
    dest: &str,
    path: &str,
    iface: &str,
    member: &str,
    args: &[&str],
) -> zbus::Result<zbus::Message> {
    crate::core::encode::method_call(dest, path, iface, member, args)
}

/// A reply's body decoded as the cache decodes a fetch's reply (dbus-meta's wire reader,
/// straight into a [`Value`](crate::Value)).
pub fn reply_value(
    msg: &zbus::Message,
) -> Result<crate::Value, netmirror_dbus_meta::wire::WireError> {
    crate::core::decode::body_value(msg)
}
