//! Cached objects: interfaces, typed property slots, and resolved references.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::meta::InterfaceDecl;
use netmirror_dbus_meta::Value;

/// One interface of an object, with its properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Interface {
    pub(crate) name: Arc<str>,
    pub(crate) decl: Option<Arc<InterfaceDecl>>,
    /// One slot per declared property ([`Value::Unset`] until the service sends it).
    pub(crate) slots: Box<[Value]>,
    /// Properties without a declaration (all of them, for an undeclared interface).
    pub(crate) extra: Vec<(Arc<str>, Value)>,
}

impl Interface {
    pub(crate) fn new(name: Arc<str>, decl: Option<Arc<InterfaceDecl>>) -> Self {
        let slots = match &decl {
            // Written directly, not cloned from a first `Unset` (a match per slot).
            Some(d) => std::iter::repeat_with(|| Value::Unset)
                .take(d.properties.len())
                .collect(),
            None => Box::default(),
        };
        Self {
            name,
            decl,
            slots,
            extra: Vec::new(),
        }
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the interface is declared (typed) rather than kept generically.
    pub fn is_declared(&self) -> bool {
        self.decl.is_some()
    }

    /// The value of property `name`: [`Value::Unset`] for a declared property the service has not
    /// sent; `None` for an unknown one.
    pub fn get(&self, name: &str) -> Option<&Value> {
        if let Some(slot) = self.decl.as_ref().and_then(|d| d.slot(name)) {
            return self.slots.get(slot);
        }
        self.extra
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| v)
    }

    /// All properties with a value, declared ones first (sorted), then the others.
    pub fn properties(&self) -> impl Iterator<Item = (&str, &Value)> {
        let declared = self
            .decl
            .iter()
            .flat_map(|d| d.properties.iter())
            .zip(self.slots.iter());
        declared
            .filter(|(_, v)| !v.is_unset())
            .map(|(p, v)| (&*p.name, v))
            .chain(self.extra.iter().map(|(n, v)| (&**n, v)))
    }

    /// Paths referenced by the declared reference properties.
    pub(crate) fn referenced_paths(&self) -> impl Iterator<Item = &str> {
        let refs = self.decl.as_ref().map(|d| &d.references[..]).unwrap_or(&[]);
        refs.iter().flat_map(move |&slot| {
            let (one, many): (Option<&str>, &[Box<str>]) = match &self.slots[slot] {
                Value::Path(p) => (Some(p), &[]),
                Value::Paths(ps) => (None, ps),
                _ => (None, &[]),
            };
            one.into_iter()
                .chain(many.iter().map(|p| &**p))
                .filter(|p| *p != "/")
        })
    }
}

/// What a per-object fetch (such as NetworkManager's `GetSettings`) has brought.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Fetch {
    /// The object needs no fetch.
    #[default]
    None,
    /// The first call is on its way: the object is not visible yet.
    Pending,
    /// The reply, or `Failed` when the service refused (e.g. AccessDenied).
    Done(Value),
    /// The service refused to answer; the object stays without fetched data.
    Failed(Box<str>),
}

/// A cached object: its interfaces and, where configured, fetched data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object {
    pub(crate) ifaces: SmallVec<[Interface; 2]>,
    pub(crate) fetch: Fetch,
    /// Serial of the fetch call in flight (0: none).
    pub(crate) fetch_serial: u32,
    /// Fetch wanted again after the pending one (a refresh arrived meanwhile).
    pub(crate) refetch: bool,
}

impl Object {
    /// The object's interfaces, in the order the service announced them.
    pub fn interfaces(&self) -> impl Iterator<Item = &Interface> {
        self.ifaces.iter()
    }

    /// The interface `name`, if the object has it.
    pub fn interface(&self, name: &str) -> Option<&Interface> {
        self.ifaces.iter().find(|i| &*i.name == name)
    }

    /// Whether the object has interface `name`.
    pub fn has_interface(&self, name: &str) -> bool {
        self.interface(name).is_some()
    }

    /// Property `prop` of interface `iface`.
    pub fn get(&self, iface: &str, prop: &str) -> Option<&Value> {
        self.interface(iface)?.get(prop)
    }

    /// The data fetched for this object (e.g. a NetworkManager profile's settings), once there.
    pub fn fetched(&self) -> Option<&Value> {
        match &self.fetch {
            Fetch::Done(v) => Some(v),
            _ => None,
        }
    }

    /// Why the fetch failed, if the service refused it.
    pub fn fetch_error(&self) -> Option<&str> {
        match &self.fetch {
            Fetch::Failed(e) => Some(e),
            _ => None,
        }
    }

    pub(crate) fn fetch_settled(&self) -> bool {
        !matches!(self.fetch, Fetch::Pending)
    }

    pub(crate) fn referenced_paths(&self) -> impl Iterator<Item = &str> {
        self.ifaces.iter().flat_map(Interface::referenced_paths)
    }
}
