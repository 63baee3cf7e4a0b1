//! Which interfaces the cache knows, and how their properties are typed.
//!
//! A declared interface stores its properties in fixed slots, type-checked on every update, and
//! its `o`/`ao` properties are references the cache resolves. Every other interface is kept
//! generically: each property as whatever [`Value`](crate::Value) the service sent.

use std::sync::{Arc, OnceLock};

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
    /// The slot of each property by name: a decoded property is found with one hash and one
    /// comparison, where a binary search over a large interface took eight comparisons.
    by_name: HashMap<Arc<str>, usize>,
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
        let by_name = props
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), i))
            .collect();
        Self {
            name: name.into(),
            properties: props.into(),
            references,
            by_name,
        }
    }

    /// The slot of property `name`.
    pub fn slot(&self, name: &str) -> Option<usize> {
        // `properties` is a public field: should it have been changed since `new`, the map no
        // longer names its slots, and a binary search does.
        match self.by_name.get_key_value(name) {
            Some((key, &i))
                if self
                    .properties
                    .get(i)
                    .is_some_and(|p| Arc::ptr_eq(&p.name, key)) =>
            {
                Some(i)
            }
            _ => self
                .properties
                .binary_search_by(|p| (*p.name).cmp(name))
                .ok(),
        }
    }
}

/// The interfaces a cache decodes with declarations.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    ifaces: HashMap<Arc<str>, Arc<InterfaceDecl>>,
    /// Declarations of a `netmirror-dbus-meta` registry ([`Registry::from_meta`]), each
    /// converted the first time it is asked for: a cache of NetworkManager that meets a dozen
    /// of its 53 interfaces converts those only. Those in `ifaces` take precedence.
    meta: Option<Arc<MetaDecls>>,
}

/// The static declarations behind a [`Registry`], and each one's conversion once made.
#[derive(Debug)]
struct MetaDecls {
    interfaces: &'static [&'static netmirror_dbus_meta::Interface],
    converted: Box<[OnceLock<Arc<InterfaceDecl>>]>,
}

impl MetaDecls {
    /// The conversion of declaration `index`.
    fn get(&self, index: usize) -> Option<&Arc<InterfaceDecl>> {
        let iface = self.interfaces.get(index)?;
        let cell = self.converted.get(index)?;
        Some(cell.get_or_init(|| {
            Arc::new(InterfaceDecl::new(
                iface.name(),
                iface
                    .properties()
                    .iter()
                    .map(|p| (p.name(), p.signature(), p.target().filter(|t| *t != "/"))),
            ))
        }))
    }

    /// The declaration called `name`.
    fn find(&self, name: &str) -> Option<&Arc<InterfaceDecl>> {
        let index = self
            .interfaces
            .binary_search_by(|i| i.name().cmp(name))
            .ok()?;
        self.get(index)
    }
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
        self.ifaces
            .get(name)
            .or_else(|| self.meta.as_ref()?.find(name))
    }

    /// The static declarations not replaced by [`Registry::declare`].
    fn meta_only(&self) -> impl Iterator<Item = &Arc<InterfaceDecl>> {
        let meta = self.meta.as_deref();
        let count = meta.map_or(0, |m| m.interfaces.len());
        (0..count)
            .filter_map(move |i| meta?.get(i))
            .filter(|decl| !self.ifaces.contains_key(&decl.name))
    }

    /// How many interfaces are declared.
    pub fn len(&self) -> usize {
        self.ifaces.len() + self.meta_only().count()
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.ifaces.is_empty() && self.meta.as_ref().is_none_or(|m| m.interfaces.is_empty())
    }

    /// Iterate over the declarations.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<InterfaceDecl>> {
        self.ifaces.values().chain(self.meta_only())
    }
}

impl Registry {
    /// The declarations of a `netmirror-dbus-meta` registry (such as
    /// [`netmirror_dbus_meta::nm::REGISTRY`]), each converted once, the first time it is needed
    /// (building NetworkManager's 53 for a short command was a sixteenth of its instructions).
    pub fn from_meta(meta: &netmirror_dbus_meta::Registry) -> Self {
        let interfaces = meta.interfaces();
        Self {
            ifaces: HashMap::new(),
            meta: Some(Arc::new(MetaDecls {
                interfaces,
                converted: interfaces.iter().map(|_| OnceLock::new()).collect(),
            })),
        }
    }

    /// NetworkManager's whole API.
    pub fn network_manager() -> Self {
        Self::from_meta(&netmirror_dbus_meta::nm::REGISTRY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eager conversion `from_meta` made before it became lazy.
    fn converted(iface: &netmirror_dbus_meta::Interface) -> InterfaceDecl {
        InterfaceDecl::new(
            iface.name(),
            iface
                .properties()
                .iter()
                .map(|p| (p.name(), p.signature(), p.target().filter(|t| *t != "/"))),
        )
    }

    #[test]
    fn lazy_declarations_equal_the_eager_conversion() {
        let meta = &netmirror_dbus_meta::nm::REGISTRY;
        let registry = Registry::from_meta(meta);
        assert_eq!(registry.len(), meta.interfaces().len());
        assert!(!registry.is_empty());
        for iface in meta.interfaces() {
            let decl = registry.get(iface.name()).expect("declared");
            assert_eq!(**decl, converted(iface));
            // Converted once: the same allocation the second time.
            assert!(Arc::ptr_eq(
                decl,
                registry.get(iface.name()).expect("declared")
            ));
        }
        assert!(registry.get("org.example.Nothing").is_none());
        let mut names: Vec<&str> = registry.iter().map(|d| &*d.name).collect();
        names.sort_unstable();
        let expected: Vec<&str> = meta.interfaces().iter().map(|i| i.name()).collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn a_declaration_replaces_the_static_one_of_its_name() {
        let meta = &netmirror_dbus_meta::nm::REGISTRY;
        let name = meta.interfaces()[0].name();
        let mut registry = Registry::from_meta(meta);
        registry.declare(InterfaceDecl::new(name, [("Only", "u", None)]));
        let decl = registry.get(name).expect("declared");
        assert_eq!(decl.properties.len(), 1);
        assert_eq!(registry.len(), meta.interfaces().len());
        assert_eq!(registry.iter().filter(|d| &*d.name == name).count(), 1);
        registry.declare(InterfaceDecl::new("org.example.Extra", []));
        assert_eq!(registry.len(), meta.interfaces().len() + 1);
        assert!(Registry::generic().is_empty());
        assert_eq!(Registry::generic().len(), 0);
    }

    /// The slot a name is found in is the one a binary search of the sorted properties finds,
    /// for every declared property of every NetworkManager interface, for names not declared,
    /// and after the public `properties` field was changed behind the declaration's back.
    #[test]
    fn a_property_is_found_in_its_sorted_slot() {
        let by_search = |d: &InterfaceDecl, name: &str| {
            d.properties.binary_search_by(|p| (*p.name).cmp(name)).ok()
        };
        let meta = &netmirror_dbus_meta::nm::REGISTRY;
        let registry = Registry::from_meta(meta);
        let mut checked = 0;
        for decl in registry.iter() {
            for (i, p) in decl.properties.iter().enumerate() {
                assert_eq!(decl.slot(&p.name), Some(i), "{}.{}", decl.name, p.name);
                checked += 1;
            }
            for name in ["", "Nothing", "state", "State ", "Ip4Config\0"] {
                assert_eq!(
                    decl.slot(name),
                    by_search(decl, name),
                    "{}.{name}",
                    decl.name
                );
            }
        }
        assert!(checked > 200, "only {checked} properties declared");

        let mut decl = InterfaceDecl::new(
            "org.example.Changed",
            [("B", "u", None), ("D", "s", None), ("F", "b", None)],
        );
        assert_eq!(decl.slot("D"), Some(1));
        decl.properties = InterfaceDecl::new(
            "org.example.Changed",
            [
                ("A", "u", None),
                ("D", "s", None),
                ("E", "b", None),
                ("G", "b", None),
            ],
        )
        .properties;
        for name in ["A", "B", "D", "E", "F", "G", "Z"] {
            assert_eq!(decl.slot(name), by_search(&decl, name), "{name}");
        }
        assert_eq!(decl.slot("D"), Some(1));
        assert_eq!(decl.slot("G"), Some(3));
        assert_eq!(decl.slot("B"), None);
    }
}
