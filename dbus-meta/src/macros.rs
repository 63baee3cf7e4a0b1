//! The declaration macros: [`interface!`](crate::interface) declares one interface as a module
//! of `const`/`static` descriptors, checking at compile time that every property's Rust type
//! has the declared D-Bus signature; [`registry!`](crate::registry) gathers interfaces.

/// Declares a D-Bus interface as a module of `const`/`static` metadata.
///
/// ```
/// use netmirror_dbus_meta::{interface, Opaque, VarDict};
/// use zbus::OwnedObjectPath;
///
/// interface! {
///     /// `org.bluez.Adapter1`, abridged.
///     pub mod adapter = "org.bluez.Adapter1" {
///         properties {
///             ADDRESS "Address": String = "s";
///             CLASS "Class": u32 = "u";
///             POWERED "Powered": bool = "b";
///             UUIDS "UUIDs": Vec<String> = "as";
///         }
///         methods {
///             START_DISCOVERY "StartDiscovery"("") -> "";
///         }
///     }
/// }
///
/// assert_eq!(adapter::IFACE.name(), "org.bluez.Adapter1");
/// assert_eq!(adapter::IFACE.property("Powered").unwrap().signature(), "b");
/// assert_eq!(adapter::POWERED.index(), 2);
/// ```
///
/// Each property line reads `CONST "Name": RustType = "signature"`, optionally followed by
/// `=> "target.Interface"` (only for `o` and `ao`) and by flags (`, DEPRECATED`, `, IGNORED`).
/// Properties, methods and signals must be listed sorted by name (byte order) without
/// duplicates; `methods { ... }` and `signals { ... }` are optional.
///
/// The module holds `IFACE_NAME`, the `static IFACE` (the [`Interface`](crate::Interface)), a
/// [`PropertyKey`](crate::PropertyKey) `const` per property, and submodules `methods` and
/// `signals` with a [`Method`](crate::Method) or [`Signal`](crate::Signal) reference `const`
/// per method and signal. It does not compile when
///
/// - a property's Rust type does not have the declared signature (e.g. `u32` declared as `s`,
///   `Vec<String>` as `ao`): zbus's [`Type::SIGNATURE`](zbus::Type::SIGNATURE) is
///   compared with the declared string at compile time;
/// - a name appears twice, or the names are not sorted;
/// - a target is given for a property that is neither `o` nor `ao`;
/// - a method or signal signature is not a valid D-Bus signature.
#[macro_export]
macro_rules! interface {
    (
        $(#[$meta:meta])*
        $vis:vis mod $module:ident = $iname:literal {
            properties {
                $(
                    $(#[$pmeta:meta])*
                    $pconst:ident $pname:literal : $pty:ty = $psig:literal
                    $(=> $ptarget:literal)?
                    $(, $pflag:ident)*
                    ;
                )*
            }
            $(methods {
                $(
                    $(#[$mmeta:meta])*
                    $mconst:ident $mname:literal ( $min:literal ) -> $mout:literal ;
                )*
            })?
            $(signals {
                $(
                    $(#[$smeta:meta])*
                    $sconst:ident $sname:literal ( $ssig:literal ) ;
                )*
            })?
        }
    ) => {
        $(#[$meta])*
        #[doc = ""]
        #[doc = concat!("Metadata of the D-Bus interface `", $iname, "`.")]
        #[allow(unused_imports, dead_code, unreachable_pub)]
        $vis mod $module {
            use super::*;

            /// The interface's name.
            pub const IFACE_NAME: &str = $iname;

            /// The declared properties, sorted by name.
            #[doc(hidden)]
            pub const __PROPERTIES: &[$crate::Property] = &[$(
                $crate::Property::new::<$pty>(
                    $iname,
                    $pname,
                    $psig,
                    stringify!($pty),
                    $crate::__target!($($ptarget)?),
                    $crate::PropertyFlags::NONE $(.union($crate::PropertyFlags::$pflag))*,
                )
            ),*];

            /// The declared methods, sorted by name.
            #[doc(hidden)]
            pub const __METHODS: &[$crate::Method] = &[$($(
                $crate::Method::new($mname, $min, $mout)
            ),*)?];

            /// The declared signals, sorted by name.
            #[doc(hidden)]
            pub const __SIGNALS: &[$crate::Signal] = &[$($(
                $crate::Signal::new($sname, $ssig)
            ),*)?];

            /// The interface's descriptor.
            pub static IFACE: $crate::Interface =
                $crate::Interface::new(IFACE_NAME, __PROPERTIES, __METHODS, __SIGNALS);

            $(
                $(#[$pmeta])*
                #[doc = concat!("Property `", $pname, "` (`", $psig, "`).")]
                pub const $pconst: $crate::PropertyKey<$pty> =
                    $crate::PropertyKey::new(__PROPERTIES, $pname);

                const _: () = assert!(
                    $crate::signature::type_matches::<$pty>($psig),
                    "{}",
                    concat!(
                        "property `", $pname, "` of `", $iname, "`: Rust type `",
                        stringify!($pty), "` does not have D-Bus signature `", $psig, "`"
                    ),
                );
                $(
                    const _: () = assert!(
                        $crate::check::may_have_target($psig),
                        "{}",
                        concat!(
                            "property `", $pname, "` of `", $iname, "`: target `", $ptarget,
                            "` given, but only `o` and `ao` properties have targets"
                        ),
                    );
                )?
            )*

            $(
                /// The declared methods, one `const` each.
                pub mod methods {$(
                    $(#[$mmeta])*
                    #[doc = concat!("Method `", $mname, "` (`", $min, "` -> `", $mout, "`).")]
                    pub const $mconst: &$crate::Method = &$crate::Method::new($mname, $min, $mout);

                    const _: () = assert!(
                        $crate::signature::is_valid($min) && $crate::signature::is_valid($mout),
                        "{}",
                        concat!("method `", $mname, "` of `", $iname, "`: invalid signature"),
                    );
                )*}
            )?

            $(
                /// The declared signals, one `const` each.
                pub mod signals {$(
                    $(#[$smeta])*
                    #[doc = concat!("Signal `", $sname, "` (`", $ssig, "`).")]
                    pub const $sconst: &$crate::Signal = &$crate::Signal::new($sname, $ssig);

                    const _: () = assert!(
                        $crate::signature::is_valid($ssig),
                        "{}",
                        concat!("signal `", $sname, "` of `", $iname, "`: invalid signature"),
                    );
                )*}
            )?

            const _: () = assert!(
                !$crate::check::has_duplicate(&[$($pname),*]),
                "{}",
                concat!("interface `", $iname, "` declares a property twice"),
            );
            const _: () = assert!(
                $crate::check::is_sorted(&[$($pname),*]),
                "{}",
                concat!("properties of `", $iname, "` must be sorted by name"),
            );
            const _: () = assert!(
                !$crate::check::has_duplicate(&[$($($mname),*)?]),
                "{}",
                concat!("interface `", $iname, "` declares a method twice"),
            );
            const _: () = assert!(
                $crate::check::is_sorted(&[$($($mname),*)?]),
                "{}",
                concat!("methods of `", $iname, "` must be sorted by name"),
            );
            const _: () = assert!(
                !$crate::check::has_duplicate(&[$($($sname),*)?]),
                "{}",
                concat!("interface `", $iname, "` declares a signal twice"),
            );
            const _: () = assert!(
                $crate::check::is_sorted(&[$($($sname),*)?]),
                "{}",
                concat!("signals of `", $iname, "` must be sorted by name"),
            );
        }
    };
}

/// Gathers interfaces declared with [`interface!`](crate::interface) into a
/// [`Registry`](crate::Registry); modules must be listed sorted by interface name.
///
/// ```
/// use netmirror_dbus_meta::{interface, registry};
///
/// interface! {
///     pub mod manager = "org.example.Manager" {
///         properties { VERSION "Version": String = "s"; }
///     }
/// }
/// interface! {
///     pub mod widget = "org.example.Widget" {
///         properties { SIZE "Size": u32 = "u"; }
///     }
/// }
/// registry! {
///     /// Everything `org.example` declares.
///     pub static EXAMPLE = [manager, widget];
/// }
///
/// assert!(EXAMPLE.interface("org.example.Widget").is_some());
/// ```
#[macro_export]
macro_rules! registry {
    ($(#[$meta:meta])* $vis:vis static $name:ident = [$($($module:ident)::+),* $(,)?];) => {
        $(#[$meta])*
        $vis static $name: $crate::Registry = $crate::Registry::new(&[$(&$($module)::+::IFACE),*]);

        const _: () = assert!(
            !$crate::check::has_duplicate(&[$($($module)::+::IFACE_NAME),*]),
            "{}",
            concat!("registry `", stringify!($name), "` lists an interface twice"),
        );
        const _: () = assert!(
            $crate::check::is_sorted(&[$($($module)::+::IFACE_NAME),*]),
            "{}",
            concat!("registry `", stringify!($name), "` must list interfaces sorted by name"),
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __target {
    () => {
        None
    };
    ($target:literal) => {
        Some($target)
    };
}
