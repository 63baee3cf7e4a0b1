//! Interface, property, method and signal descriptors, and the registry of a service's
//! interfaces: all `const`/`static` data with allocation-free, binary-search lookup.

use std::fmt;
use std::marker::PhantomData;

use crate::error::Result;
use crate::kind::{DeclaredType, Kind};
use crate::value::Value;

/// Flags of a property.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PropertyFlags(u8);

impl PropertyFlags {
    /// No flags.
    pub const NONE: PropertyFlags = PropertyFlags(0);
    /// The service documents the property as deprecated; a newer property replaces it.
    pub const DEPRECATED: PropertyFlags = PropertyFlags(1);
    /// A client cache need not track the property (e.g. it changes too often to be useful).
    pub const IGNORED: PropertyFlags = PropertyFlags(2);

    /// Both sets of flags.
    pub const fn union(self, other: PropertyFlags) -> PropertyFlags {
        PropertyFlags(self.0 | other.0)
    }

    /// Whether all of `other` is set.
    pub const fn contains(self, other: PropertyFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl fmt::Debug for PropertyFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_set();
        if self.contains(PropertyFlags::DEPRECATED) {
            list.entry(&"DEPRECATED");
        }
        if self.contains(PropertyFlags::IGNORED) {
            list.entry(&"IGNORED");
        }
        list.finish()
    }
}

/// A property's descriptor.
#[derive(Debug)]
pub struct Property {
    interface: &'static str,
    name: &'static str,
    signature: &'static str,
    kind: Kind,
    rust_type: &'static str,
    target: Option<&'static str>,
    flags: PropertyFlags,
}

impl Property {
    /// A descriptor for a property of Rust type `T`. The declaration macro calls this and
    /// checks at compile time that `T`'s signature is `signature`.
    #[doc(hidden)]
    pub const fn new<T: DeclaredType + ?Sized>(
        interface: &'static str,
        name: &'static str,
        signature: &'static str,
        rust_type: &'static str,
        target: Option<&'static str>,
        flags: PropertyFlags,
    ) -> Property {
        Property {
            interface,
            name,
            signature,
            kind: T::KIND,
            rust_type,
            target,
            flags,
        }
    }

    /// The name of the interface declaring this property.
    pub const fn interface(&self) -> &'static str {
        self.interface
    }

    /// The property's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The declared D-Bus signature.
    pub const fn signature(&self) -> &'static str {
        self.signature
    }

    /// How values are stored.
    pub const fn kind(&self) -> Kind {
        self.kind
    }

    /// The Rust type named in the declaration, as written.
    pub const fn rust_type(&self) -> &'static str {
        self.rust_type
    }

    /// For an `o` or `ao` property, the interface its target objects must implement (`None`
    /// when any object may be named). `"/"` means "no object" by D-Bus convention.
    pub const fn target(&self) -> Option<&'static str> {
        self.target
    }

    /// The property's flags.
    pub const fn flags(&self) -> PropertyFlags {
        self.flags
    }

    /// Whether the property is deprecated.
    pub const fn is_deprecated(&self) -> bool {
        self.flags.contains(PropertyFlags::DEPRECATED)
    }

    /// Checks `value` against the declared signature and decodes it.
    ///
    /// A value of another signature is rejected as a whole with [`crate::Error::TypeMismatch`],
    /// which names the property, the declared and the actual signature.
    pub fn decode(&'static self, value: &zbus::Variant<'_>) -> Result<Value> {
        let mut value = value;
        while let zbus::Variant::Variant(inner) = value {
            value = inner;
        }
        let actual = value.value_signature();
        if !crate::signature::matches(actual, self.signature) {
            return Err(crate::Error::TypeMismatch {
                interface: self.interface,
                property: self.name,
                expected: self.signature,
                actual: actual.to_string(),
            });
        }
        Value::from_variant(value)
    }
}

/// A method's descriptor.
#[derive(Debug)]
pub struct Method {
    name: &'static str,
    inputs: &'static str,
    outputs: &'static str,
}

impl Method {
    #[doc(hidden)]
    pub const fn new(name: &'static str, inputs: &'static str, outputs: &'static str) -> Method {
        Method {
            name,
            inputs,
            outputs,
        }
    }

    /// The method's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The signature of its arguments.
    pub const fn inputs(&self) -> &'static str {
        self.inputs
    }

    /// The signature of its reply.
    pub const fn outputs(&self) -> &'static str {
        self.outputs
    }
}

/// A signal's descriptor.
#[derive(Debug)]
pub struct Signal {
    name: &'static str,
    signature: &'static str,
}

impl Signal {
    #[doc(hidden)]
    pub const fn new(name: &'static str, signature: &'static str) -> Signal {
        Signal { name, signature }
    }

    /// The signal's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The signature of its body.
    pub const fn signature(&self) -> &'static str {
        self.signature
    }
}

/// An interface's descriptor: properties, methods and signals, each sorted by name.
#[derive(Debug)]
pub struct Interface {
    name: &'static str,
    properties: &'static [Property],
    methods: &'static [Method],
    signals: &'static [Signal],
}

impl Interface {
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        properties: &'static [Property],
        methods: &'static [Method],
        signals: &'static [Signal],
    ) -> Interface {
        Interface {
            name,
            properties,
            methods,
            signals,
        }
    }

    /// The interface's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The properties, sorted by name; a property's position here is its index.
    pub const fn properties(&self) -> &'static [Property] {
        self.properties
    }

    /// The declared methods, sorted by name.
    pub const fn methods(&self) -> &'static [Method] {
        self.methods
    }

    /// The declared signals, sorted by name.
    pub const fn signals(&self) -> &'static [Signal] {
        self.signals
    }

    /// The index of the property called `name` (binary search, no allocation).
    pub fn property_index(&self, name: &str) -> Option<usize> {
        self.properties
            .binary_search_by(|p| cmp_name(p.name, name))
            .ok()
    }

    /// Like [`Interface::property_index`], but first tries `hint` (e.g. the index after the
    /// previous property of a dictionary, since services tend to send properties in a stable
    /// order): a hit costs one comparison.
    pub fn property_index_with_hint(&self, name: &str, hint: usize) -> Option<usize> {
        match self.properties.get(hint) {
            Some(property) if property.name == name => Some(hint),
            _ => self.property_index(name),
        }
    }

    /// The property called `name`.
    pub fn property(&self, name: &str) -> Option<&'static Property> {
        let properties = self.properties;
        self.property_index(name).map(|idx| &properties[idx])
    }

    /// The method called `name`.
    pub fn method(&self, name: &str) -> Option<&'static Method> {
        let methods = self.methods;
        methods
            .binary_search_by(|m| m.name.cmp(name))
            .ok()
            .map(|idx| &methods[idx])
    }

    /// The signal called `name`.
    pub fn signal(&self, name: &str) -> Option<&'static Signal> {
        let signals = self.signals;
        signals
            .binary_search_by(|s| s.name.cmp(name))
            .ok()
            .map(|idx| &signals[idx])
    }
}

/// Byte-order comparison of two short names, the order of `str::cmp`. An inlined loop: member
/// names are short and usually differ in their first bytes, where a `memcmp` call costs more
/// than the comparison.
#[inline]
fn cmp_name(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// The result of looking a property up in a [`Registry`].
#[derive(Clone, Copy, Debug)]
pub enum Lookup {
    /// The property is declared.
    Declared {
        /// Its interface.
        interface: &'static Interface,
        /// Its index in [`Interface::properties`].
        index: usize,
        /// The property.
        property: &'static Property,
    },
    /// The interface is declared, the property is not (e.g. a newer server).
    UnknownProperty(&'static Interface),
    /// The interface is not declared.
    UnknownInterface,
}

/// The result of decoding a value through a [`Registry`].
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    /// A declared property, checked against and decoded into its declared type.
    Declared(Value),
    /// An undeclared property of a declared interface, decoded in generic mode.
    UnknownProperty(Value),
    /// A property of an undeclared interface, decoded in generic mode.
    UnknownInterface(Value),
}

/// All declared interfaces of one service, sorted by name.
#[derive(Debug)]
pub struct Registry {
    interfaces: &'static [&'static Interface],
}

impl Registry {
    #[doc(hidden)]
    pub const fn new(interfaces: &'static [&'static Interface]) -> Registry {
        Registry { interfaces }
    }

    /// The interfaces, sorted by name.
    pub const fn interfaces(&self) -> &'static [&'static Interface] {
        self.interfaces
    }

    /// The interface called `name` (binary search, no allocation).
    pub fn interface(&self, name: &str) -> Option<&'static Interface> {
        let interfaces = self.interfaces;
        interfaces
            .binary_search_by(|i| i.name.cmp(name))
            .ok()
            .map(|idx| interfaces[idx])
    }

    /// Looks up property `property` of interface `interface`.
    pub fn lookup(&self, interface: &str, property: &str) -> Lookup {
        let Some(iface) = self.interface(interface) else {
            return Lookup::UnknownInterface;
        };
        match iface.property_index(property) {
            Some(index) => Lookup::Declared {
                interface: iface,
                index,
                property: &iface.properties[index],
            },
            None => Lookup::UnknownProperty(iface),
        }
    }

    /// Decodes `value` of `interface.property`: checked against the declaration when there is
    /// one, in generic mode otherwise.
    pub fn decode(
        &self,
        interface: &str,
        property: &str,
        value: &zbus::Variant<'_>,
    ) -> Result<Decoded> {
        match self.lookup(interface, property) {
            Lookup::Declared { property, .. } => property.decode(value).map(Decoded::Declared),
            Lookup::UnknownProperty(_) => Value::from_variant(value).map(Decoded::UnknownProperty),
            Lookup::UnknownInterface => Value::from_variant(value).map(Decoded::UnknownInterface),
        }
    }
}

/// A typed handle on one declared property: its index in the interface and its Rust type.
///
/// The declaration macro makes one `const` per property, so typed access needs no lookup.
pub struct PropertyKey<T: ?Sized> {
    index: usize,
    property: &'static Property,
    marker: PhantomData<fn() -> Box<T>>,
}

impl<T: DeclaredType + ?Sized> PropertyKey<T> {
    /// The key of property `name` among `properties`. Evaluated at compile time by the macro;
    /// a missing name is a compile error there.
    #[doc(hidden)]
    pub const fn new(properties: &'static [Property], name: &str) -> PropertyKey<T> {
        let mut index = 0;
        while index < properties.len() {
            if crate::check::str_eq(properties[index].name, name) {
                return PropertyKey {
                    index,
                    property: &properties[index],
                    marker: PhantomData,
                };
            }
            index += 1;
        }
        panic!("property key names an undeclared property")
    }

    /// The property's index in [`Interface::properties`].
    pub const fn index(&self) -> usize {
        self.index
    }

    /// The property's descriptor.
    pub const fn property(&self) -> &'static Property {
        self.property
    }

    /// The property's name.
    pub const fn name(&self) -> &'static str {
        self.property.name
    }

    /// Borrows a decoded value as the declared Rust type's view; `None` if `value` is of
    /// another kind.
    pub fn get<'a>(&self, value: &'a Value) -> Option<T::View<'a>> {
        T::view(value)
    }
}

impl<T: ?Sized> Clone for PropertyKey<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for PropertyKey<T> {}

impl<T: ?Sized> fmt::Debug for PropertyKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PropertyKey")
            .field("interface", &self.property.interface)
            .field("name", &self.property.name)
            .field("index", &self.index)
            .finish()
    }
}

/// Two interface descriptors are equal when they describe the same interface name.
impl PartialEq for Interface {
    fn eq(&self, other: &Interface) -> bool {
        self.name == other.name
    }
}

impl Eq for Interface {}

/// Two property descriptors are equal when they name the same property of the same interface.
impl PartialEq for Property {
    fn eq(&self, other: &Property) -> bool {
        self.interface == other.interface && self.name == other.name
    }
}

impl Eq for Property {}
