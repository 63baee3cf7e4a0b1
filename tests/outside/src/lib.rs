//! A small program's use of netmirror's libraries, through their documented APIs only: the
//! crate `cargo xtask ci` builds against the packaged crates, as a crates.io user gets them.

use std::net::Ipv4Addr;

use netmirror_dedup_index::{DedupIndex, IndexType, Object, Placement};

/// A user's own object type in a dedup index: a neighbour entry keyed by its address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The neighbour's address (its id).
    pub address: Ipv4Addr,
    /// The interface it was seen on.
    pub ifindex: u32,
}

impl Object for Neighbour {
    type Id = Ipv4Addr;

    fn id(&self) -> Ipv4Addr {
        self.address
    }
}

/// Neighbours by interface.
pub struct ByIfindex;

impl IndexType<Neighbour> for ByIfindex {
    type Partition = u32;

    fn partition(&self, neighbour: &Neighbour) -> Option<u32> {
        Some(neighbour.ifindex)
    }
}

/// How many neighbours each of the given interfaces has, through a partitioned index.
pub fn neighbours_per_interface(neighbours: Vec<Neighbour>, ifindexes: &[u32]) -> Vec<usize> {
    let mut index: DedupIndex<Neighbour> = DedupIndex::new();
    let by_ifindex = index.add_index(ByIfindex);
    index.extend(neighbours);
    ifindexes
        .iter()
        .map(|ifindex| {
            index
                .partition(by_ifindex, ifindex)
                .map_or(0, |list| list.iter().count())
        })
        .collect()
}

/// The interface moves among the given sightings, in order: a neighbour seen again on another
/// interface yields `(address, old ifindex, new ifindex)`, through the change's `old()` and
/// `new()`.
pub fn moves(sightings: Vec<Neighbour>) -> Vec<(Ipv4Addr, u32, u32)> {
    let mut index: DedupIndex<Neighbour> = DedupIndex::new();
    let mut moves = Vec::new();
    for neighbour in sightings {
        let Ok(change) = index.insert(neighbour, Placement::Append) else {
            continue;
        };
        if let Some(old) = change.old() {
            moves.push((old.address, old.ifindex, change.new().ifindex));
        }
    }
    moves
}

/// A program's view of a D-Bus service of its own, `org.example.Lights` (an ObjectManager at
/// `/org/example/Lights`, one object per light): its interface declared with
/// netmirror-dbus-meta, cached with netmirror-client-cache, and a property read straight from
/// a `zbus::Message` decoded with the declaration.
pub mod lights {
    use netmirror_client_cache::{CacheBuilder, ObjectCache, Registry};
    use netmirror_dbus_meta::{interface, registry};

    /// The service's bus name.
    pub const SERVICE: &str = "org.example.Lights";
    /// Its ObjectManager's path.
    pub const MANAGER: &str = "/org/example/Lights";

    interface! {
        /// `org.example.Light`: one light.
        pub mod light = "org.example.Light" {
            properties {
                BRIGHTNESS "Brightness": u32 = "u";
                ON "On": bool = "b";
            }
        }
    }

    registry! {
        /// The interfaces this program knows.
        pub static LIGHTS = [light];
    }

    /// The cache of the service, its interface declared (so each property is type-checked
    /// on every update).
    pub fn cache() -> CacheBuilder {
        ObjectCache::builder(SERVICE)
            .manager_path(MANAGER)
            .registry(Registry::from_meta(&LIGHTS))
    }

    /// A light's brightness as the cache holds it, read as its declared type.
    pub fn cached_brightness(cache: &ObjectCache, path: &str) -> Option<u32> {
        let value = cache.object(path)?.prop(light::IFACE_NAME, "Brightness")?;
        light::BRIGHTNESS.get(value)
    }

    /// A light's brightness asked of the service itself (`Properties.Get`): the reply is a
    /// `zbus::Message` from this program's own zbus, its variant checked against the
    /// declaration (a value of another type is [`netmirror_dbus_meta::Error::TypeMismatch`]).
    pub async fn ask_brightness(
        conn: &zbus::Connection,
        path: &str,
        property: &str,
    ) -> Result<u32, Box<dyn std::error::Error>> {
        let reply: zbus::Message = conn
            .call_method(
                Some(SERVICE),
                path,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(light::IFACE_NAME, property),
            )
            .await?;
        let variant: zbus::OwnedVariant = reply.body().deserialize()?;
        // The declaration of Brightness checks whatever `property` the service sent.
        let value = light::BRIGHTNESS.property().decode(&variant)?;
        light::BRIGHTNESS
            .get(&value)
            .ok_or_else(|| "Brightness decoded to another kind of value".into())
    }
}
