//! Reading bodies: signatures checked without allocating, properties decoded straight into
//! typed slots through dbus-meta's wire reader, and error replies classified by zbus's typed
//! [`zbus::fdo::Error`] instead of by comparing names.

use std::sync::Arc;

use smallvec::SmallVec;
use zbus::{fdo, message::Message};

use super::{Core, intern::Names};
use crate::{
    debug::{Reporter, WarningKind},
    error::CallFailure,
    object::Interface,
};
use netmirror_dbus_meta::{
    Dict, Value,
    wire::{Reader, WireResult, single_type_len},
};

/// Whether `msg`'s body has signature `want` (zbus shows a body of several values as a
/// struct, which compares equal to the values' signatures with or without the parentheses).
/// Compares the parsed signature with `want` in place: nothing is allocated.
pub(super) fn body_is(msg: &Message, want: &str) -> bool {
    *msg.body().signature() == want
}

/// The serial of the call `msg` answers (0 for none).
pub(super) fn reply_serial(msg: &Message) -> u32 {
    msg.header().reply_serial().map_or(0, |s| s.get())
}

/// `msg`'s whole body as one value, read by its own signature (a fetch's reply is whatever the
/// method returns).
pub(crate) fn body_value(msg: &Message) -> WireResult<Value> {
    let body = msg.body();
    let mut r = Reader::for_body(body.data());
    let sig = body.signature().to_string();
    r.value(sig.as_bytes())
}

/// [`body_value`] keeping only `keep`'s entries (outer key, inner keys) of a dictionary of
/// dictionaries with string keys (`a{sa{s…}}`), the others passed over without being decoded;
/// a body of another type is read whole. See
/// [`CacheBuilder::keep_fetched`](crate::CacheBuilder::keep_fetched).
pub(crate) fn body_value_keeping(msg: &Message, keep: &super::KeptEntries) -> WireResult<Value> {
    let body = msg.body();
    let sig = body.signature().to_string();
    let mut r = Reader::for_body(body.data());
    // `a{sa{sT}}` with `T` one complete type: `inner` is `a{sT}`, `value` is `T`.
    let shape = sig
        .strip_prefix("a{sa{s")
        .and_then(|rest| rest.strip_suffix("}}"))
        .filter(|value| single_type_len(value.as_bytes()).ok() == Some(value.len()))
        .map(|value| (&sig[3..sig.len() - 1], value));
    let Some((inner, value)) = shape else {
        return r.value(sig.as_bytes());
    };
    let end = r.array(8)?;
    let mut kept = Vec::new();
    while r.more(end, 8)? {
        let outer = r.str()?;
        let Some((_, keys)) = keep.iter().find(|(k, _)| **k == *outer) else {
            r.skip(inner.as_bytes())?;
            continue;
        };
        let inner_end = r.array(8)?;
        let mut entries = Vec::new();
        while r.more(inner_end, 8)? {
            let key = r.str()?;
            if keys.iter().any(|k| **k == *key) {
                entries.push((Value::Str(key.into()), r.value(value.as_bytes())?));
            } else {
                r.skip(value.as_bytes())?;
            }
        }
        if !entries.is_empty() {
            entries.shrink_to_fit();
            kept.push((
                Value::Str(outer.into()),
                Value::Dict(Box::new(Dict {
                    key: "s".into(),
                    value: value.into(),
                    entries,
                })),
            ));
        }
    }
    kept.shrink_to_fit();
    Ok(Value::Dict(Box::new(Dict {
        key: "s".into(),
        value: inner.into(),
        entries: kept,
    })))
}

/// The first string of `msg`'s body (an error's text, a name owner, an introspection).
pub(super) fn first_str(msg: &Message) -> Option<String> {
    msg.body().deserialize::<(String,)>().ok().map(|t| t.0)
}

/// An error reply: its name and text for people, and the typed [`fdo::Error`] when the name is
/// one of the bus's own errors.
#[derive(Debug)]
pub(super) struct ErrorReply {
    pub(super) name: String,
    pub(super) text: String,
    typed: Option<fdo::Error>,
}

impl ErrorReply {
    /// The error `msg` carries, if it is an error reply.
    pub(super) fn of(msg: &Message) -> Option<Self> {
        if msg.message_type() != zbus::message::Type::Error {
            return None;
        }
        // zbus's own classification: a name defined by `fdo::Error` becomes its variant.
        let (name, text, typed) = match zbus::Error::from(msg.clone()) {
            zbus::Error::FDO(e) => {
                let name = zbus::DBusError::name(&*e).to_string();
                let text = zbus::DBusError::description(&*e)
                    .unwrap_or_default()
                    .to_owned();
                (name, text, Some(*e))
            }
            zbus::Error::MethodError(name, text, _) => {
                (name.to_string(), text.unwrap_or_default(), None)
            }
            // An error reply without a name: malformed, reported as such.
            other => (String::new(), other.to_string(), None),
        };
        Some(Self { name, text, typed })
    }

    /// Errors a call gets when its destination left the bus: the owner's `NameOwnerChanged`
    /// follows and decides.
    pub(super) fn owner_gone(&self) -> bool {
        matches!(
            self.typed,
            Some(
                fdo::Error::ServiceUnknown(_)
                    | fdo::Error::NameHasNoOwner(_)
                    | fdo::Error::Disconnected(_)
            )
        )
    }

    /// The service does not offer (or refuses) a narrow call: the cache falls back to loading
    /// everything.
    pub(super) fn is_refusal(&self) -> bool {
        matches!(
            self.typed,
            Some(
                fdo::Error::UnknownMethod(_)
                    | fdo::Error::UnknownInterface(_)
                    | fdo::Error::UnknownObject(_)
                    | fdo::Error::AccessDenied(_)
                    | fdo::Error::NotSupported(_)
            )
        )
    }

    /// The interface is unknown (gone since the introspection).
    pub(super) fn unknown_interface(&self) -> bool {
        matches!(self.typed, Some(fdo::Error::UnknownInterface(_)))
    }

    /// A permission check refused the call: the bus's `AccessDenied`, or a service's own
    /// `….PermissionDenied` (NetworkManager's settings without the secrets permission).
    pub(super) fn is_denied(&self) -> bool {
        matches!(self.typed, Some(fdo::Error::AccessDenied(_)))
            || self.name.ends_with(".PermissionDenied")
    }

    /// The failure of the call, for [`CallError`](crate::CallError).
    pub(super) fn cause(&self) -> CallFailure {
        CallFailure::ErrorReply {
            name: self.name.clone(),
            message: self.text.clone(),
        }
    }
}

impl std::fmt::Display for ErrorReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.text)
    }
}

/// Skip an `a{sv}`.
fn skip_props(r: &mut Reader<'_>) -> WireResult<()> {
    let end = r.array(8)?;
    while r.more(end, 8)? {
        r.str()?;
        let _ = r.variant_expect(None)?;
    }
    Ok(())
}

/// Decode an `a{sv}` into `iface`'s slots (declared, type-checked) and extras.
pub(super) fn decode_props_into(
    r: &mut Reader<'_>,
    iface: &mut Interface,
    names: &mut Names,
    rep: &mut Reporter,
    path: &str,
) -> WireResult<()> {
    let end = r.array(8)?;
    while r.more(end, 8)? {
        let name = r.str()?;
        let decl = iface
            .decl
            .as_ref()
            .and_then(|d| d.slot(name).map(|s| (s, &d.properties[s])));
        match decl {
            Some((slot, p)) => match r.variant_expect(Some(p.signature.as_bytes()))? {
                Ok(v) => iface.slots[slot] = v,
                Err(actual) => rep.warn(
                    WarningKind::WrongType,
                    format_args!(
                        "{path} {}.{name}: got type {actual}, declared {}; value rejected",
                        iface.name, p.signature
                    ),
                ),
            },
            None => {
                if let Ok(v) = r.variant_expect(None)? {
                    let name = names.intern(name);
                    iface.extra.push((name, v));
                }
            }
        }
    }
    Ok(())
}

impl Core {
    /// The declaration of interface `name` (seen on `path`). An interface that a registry
    /// declaring others does not declare (a newer service, an older client) is kept without
    /// types, and reported once per cache.
    pub(super) fn declaration(
        &mut self,
        name: &str,
        path: &str,
    ) -> Option<Arc<crate::meta::InterfaceDecl>> {
        let decl = self.cfg.registry.get(name).cloned();
        if decl.is_none() && !self.cfg.registry.is_empty() && !self.undeclared.contains(name) {
            self.undeclared.insert(self.names.intern(name));
            self.rep.warn(
                WarningKind::UnknownInterface,
                format_args!("{path} has interface {name}, which is not declared; kept untyped"),
            );
        }
        decl
    }

    /// Decode an `a{sa{sv}}` (an object's interfaces), skipping the standard `org.freedesktop.DBus.*`
    /// interfaces.
    pub(super) fn decode_ifaces(
        &mut self,
        r: &mut Reader<'_>,
        path: &str,
    ) -> WireResult<SmallVec<[Interface; 2]>> {
        let mut ifaces = SmallVec::new();
        let end = r.array(8)?;
        while r.more(end, 8)? {
            let name = r.str()?;
            if name.starts_with("org.freedesktop.DBus.") {
                // Properties, Introspectable, Peer: no properties worth keeping.
                skip_props(r)?;
                continue;
            }
            let decl = self.declaration(name, path);
            let mut iface = Interface::new(self.names.intern(name), decl);
            decode_props_into(r, &mut iface, &mut self.names, &mut self.rep, path)?;
            ifaces.push(iface);
        }
        Ok(ifaces)
    }
}

/// The decoded objects of a GetManagedObjects reply.
pub(super) type Decoded = Vec<(Arc<str>, SmallVec<[Interface; 2]>)>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_support::{OWNER, reply_to, signal};

    fn call() -> Message {
        Message::method_call("/", "Ping")
            .destination("org.example")
            .build(&())
            .unwrap()
    }

    #[test]
    fn body_signatures_compare_with_and_without_parentheses() {
        let m = signal("/", super::super::PROPS, "PropertiesChanged")
            .build(&(
                "org.example.I",
                std::collections::HashMap::<String, zbus::Variant<'_>>::new(),
                Vec::<String>::new(),
            ))
            .unwrap();
        assert!(body_is(&m, "sa{sv}as"));
        assert!(body_is(&m, "(sa{sv}as)"));
        assert!(!body_is(&m, "sa{sv}"));
        assert!(!body_is(&m, "s"));
        let one = reply_to(&call()).build(&("x",)).unwrap();
        assert!(body_is(&one, "s"));
        assert!(!body_is(&one, "o"));
    }

    #[test]
    fn error_replies_are_classified_by_their_typed_name() {
        let err = |name: &str| {
            let m = Message::error(&call().header(), name)
                .sender(OWNER)
                .build(&("why",))
                .unwrap();
            ErrorReply::of(&m).unwrap()
        };
        let unknown = err("org.freedesktop.DBus.Error.UnknownMethod");
        assert!(unknown.is_refusal() && !unknown.owner_gone());
        assert_eq!(unknown.text, "why");
        assert_eq!(unknown.name, "org.freedesktop.DBus.Error.UnknownMethod");
        assert!(err("org.freedesktop.DBus.Error.ServiceUnknown").owner_gone());
        assert!(err("org.freedesktop.DBus.Error.NameHasNoOwner").owner_gone());
        assert!(err("org.freedesktop.DBus.Error.UnknownInterface").unknown_interface());
        assert!(err("org.freedesktop.DBus.Error.AccessDenied").is_denied());
        let nm = err("org.freedesktop.NetworkManager.Settings.PermissionDenied");
        assert!(nm.is_denied() && !nm.is_refusal() && !nm.owner_gone());
        assert_eq!(
            nm.cause(),
            CallFailure::ErrorReply {
                name: "org.freedesktop.NetworkManager.Settings.PermissionDenied".into(),
                message: "why".into()
            }
        );
        let ok = reply_to(&call()).build(&()).unwrap();
        assert!(ErrorReply::of(&ok).is_none());
    }
}
