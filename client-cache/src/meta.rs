//! Which interfaces the cache knows, and how their properties are typed.
//!
//! A declared interface stores its properties in fixed slots, type-checked on every update, and
//! its `o`/`ao` properties are references the cache resolves. Every other interface is kept
//! generically: each property as whatever [`Value`](crate::Value) the service sent.

use std::sync::Arc;

use hashbrown::HashMap;

/// One declared property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyDecl {
    /// Its D-Bus name.
    pub name: Arc<str>,
    /// Its D-Bus signature, a single complete type.
    pub signature: Box<str>,
    /// For `o` and `ao` properties: the interface the target must have, if declared.
    /// Such a property is a reference, whether or not a target interface is named.
    pub target: Option<Arc<str>>,
}

impl PropertyDecl {
    /// Whether this property references other objects (`o` or `ao`).
    pub fn is_reference(&self) -> bool {
        matches!(&*self.signature, "o" | "ao")
    }
}

/// One declared interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceDecl {
    /// Its D-Bus name.
    pub name: Arc<str>,
    /// Its properties, sorted by name.
    pub properties: Box<[PropertyDecl]>,
    /// Slots of the reference properties.
    pub(crate) references: Box<[usize]>,
}

impl InterfaceDecl {
    /// Declare an interface from `(name, signature, target interface)` triples.
    pub fn new<'a>(
        name: &str,
        properties: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>)>,
    ) -> Self {
        let mut props: Vec<PropertyDecl> = properties
            .into_iter()
            .map(|(n, s, t)| PropertyDecl {
                name: n.into(),
                signature: s.into(),
                target: t.map(Into::into),
            })
            .collect();
        props.sort_by(|a, b| a.name.cmp(&b.name));
        props.dedup_by(|a, b| a.name == b.name);
        let references = props
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_reference())
            .map(|(i, _)| i)
            .collect();
        Self {
            name: name.into(),
            properties: props.into(),
            references,
        }
    }

    /// The slot of property `name`.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.properties
            .binary_search_by(|p| (*p.name).cmp(name))
            .ok()
    }
}

/// The interfaces a cache decodes with declarations.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    ifaces: HashMap<Arc<str>, Arc<InterfaceDecl>>,
}

impl Registry {
    /// A registry that declares nothing: every interface is kept generically.
    pub fn generic() -> Self {
        Self::default()
    }

    /// Add (or replace) a declaration.
    pub fn declare(&mut self, iface: InterfaceDecl) -> &mut Self {
        self.ifaces.insert(iface.name.clone(), Arc::new(iface));
        self
    }

    /// Builder-style [`Registry::declare`].
    pub fn with(mut self, iface: InterfaceDecl) -> Self {
        self.declare(iface);
        self
    }

    /// The declaration of `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<InterfaceDecl>> {
        self.ifaces.get(name)
    }

    /// How many interfaces are declared.
    pub fn len(&self) -> usize {
        self.ifaces.len()
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.ifaces.is_empty()
    }

    /// Iterate over the declarations.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<InterfaceDecl>> {
        self.ifaces.values()
    }
}

impl Registry {
    /// The declarations of a `netmirror-dbus-meta` registry (such as
    /// [`netmirror_dbus_meta::nm::REGISTRY`]), converted once.
    pub fn from_meta(meta: &netmirror_dbus_meta::Registry) -> Self {
        let mut registry = Self::default();
        for iface in meta.interfaces() {
            registry.declare(InterfaceDecl::new(
                iface.name(),
                iface
                    .properties()
                    .iter()
                    .map(|p| (p.name(), p.signature(), p.target().filter(|t| *t != "/"))),
            ));
        }
        registry
    }

    /// NetworkManager's whole API.
    pub fn network_manager() -> Self {
        Self::from_meta(&netmirror_dbus_meta::nm::REGISTRY)
    }
}
