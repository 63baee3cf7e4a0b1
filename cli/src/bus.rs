//! Connecting to the bus `--bus` names, turning D-Bus failures into the CLI's messages, and
//! rendering cached D-Bus values as table cells and JSON.

use std::io;

use netmirror_client_cache::{self as client, Value};
use serde_json::Value as Json;

use crate::args::{Bus, usage_error};
use crate::failure::Failure;
use crate::render::{Cell, TypedCell};

/// Connects to `bus`: the system bus honours `DBUS_SYSTEM_BUS_ADDRESS`, the session bus
/// `DBUS_SESSION_BUS_ADDRESS`.
pub(crate) async fn connect(bus: &Bus) -> anyhow::Result<zbus::Connection> {
    let conn = match bus {
        Bus::System => zbus::Connection::system().await,
        Bus::Session => zbus::Connection::session().await,
        Bus::Address(address) => {
            zbus::connection::Builder::address(address.as_str())
                .build()
                .await
        }
    };
    conn.map_err(|err| {
        explain_zbus(&err, bus).unwrap_or_else(|| {
            anyhow::Error::new(err).context(format!("cannot connect to the {bus}"))
        })
    })
}

/// The CLI's own message for a D-Bus failure, when it has one.
fn explain_zbus(err: &zbus::Error, bus: &Bus) -> Option<anyhow::Error> {
    match err {
        zbus::Error::Connection(io, _) | zbus::Error::InputOutput(io)
            if matches!(
                io.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            Some(
                Failure::BusAbsent {
                    bus: bus.to_string(),
                    reason: io.to_string(),
                }
                .into(),
            )
        }
        zbus::Error::Connection(io, _) | zbus::Error::InputOutput(io)
            if io.kind() == io::ErrorKind::PermissionDenied =>
        {
            Some(
                Failure::PermissionDenied {
                    what: format!("connect to the {bus}"),
                    hint: crate::failure::BUS_HINT,
                }
                .into(),
            )
        }
        zbus::Error::FDO(fdo) if matches!(**fdo, zbus::fdo::Error::AccessDenied(_)) => Some(
            Failure::PermissionDenied {
                what: format!("the {bus} refused the call"),
                hint: crate::failure::BUS_HINT,
            }
            .into(),
        ),
        _ => None,
    }
}

/// Turns a client-cache error into the CLI's message for it when it has one.
pub(crate) fn explain(err: client::Error, bus: &Bus, service: &str) -> anyhow::Error {
    match &err {
        client::Error::DBus(zbus_err) => explain_zbus(zbus_err, bus)
            .unwrap_or_else(|| anyhow::Error::new(err).context(format!("cannot load {service}"))),
        client::Error::Call(call) if call.is_access_denied() => {
            let message = match &call.cause {
                client::CallFailure::ErrorReply { message, .. } if !message.is_empty() => {
                    format!(": {message}")
                }
                _ => String::new(),
            };
            Failure::PermissionDenied {
                what: format!("{service} refused {}{message}", call.method),
                hint: crate::failure::BUS_HINT,
            }
            .into()
        }
        client::Error::InvalidName { .. } => usage_error(&err).into(),
        _ => anyhow::Error::new(err).context(format!("cannot load {service}")),
    }
}

/// Checks `builder`'s names and paths (a usage error when one is invalid) before anything is
/// sent, and gives it the call deadline.
pub(crate) fn prepare(
    builder: client::CacheBuilder,
    timeout: std::time::Duration,
) -> anyhow::Result<client::CacheBuilder> {
    builder.validate().map_err(usage_error)?;
    Ok(builder.timeout(timeout))
}

/// A cached value as a cell: nmcli-like text for people, typed JSON for scripts.
pub(crate) fn cell(value: &Value) -> Cell {
    if value.is_unset() {
        return Cell::Null;
    }
    if let Value::Bytes(bytes) = value
        && let Some(text) = c_string(bytes)
    {
        return Cell::from(TypedCell {
            text: text.to_owned(),
            json: Json::String(text.to_owned()),
        });
    }
    Cell::from(TypedCell {
        text: value.to_string(),
        json: json(value),
    })
}

/// The text of a byte string (`ay`) that is a C string: UTF-8 without control characters,
/// ended by one NUL (as udisks2 sends `/dev/vda`). Any other bytes stay bytes (hex).
pub(crate) fn c_string(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes.strip_suffix(&[0])?).ok()?;
    (!text.is_empty() && !text.chars().any(char::is_control)).then_some(text)
}

/// A cached value as JSON: numbers, booleans, strings, arrays; dictionaries with string keys
/// as objects (others as arrays of `[key, value]`); structs as arrays; variants unwrapped.
pub(crate) fn json(value: &Value) -> Json {
    match value {
        Value::Unset => Json::Null,
        Value::Bool(value) => Json::Bool(*value),
        Value::U8(value) => Json::from(*value),
        Value::I16(value) => Json::from(*value),
        Value::U16(value) => Json::from(*value),
        Value::I32(value) => Json::from(*value),
        Value::U32(value) => Json::from(*value),
        Value::I64(value) => Json::from(*value),
        Value::U64(value) => Json::from(*value),
        Value::F64(value) => serde_json::Number::from_f64(*value).map_or(Json::Null, Json::Number),
        Value::Str(text) | Value::Path(text) | Value::Signature(text) => {
            Json::String(text.to_string())
        }
        Value::Fd(index) => Json::from(*index),
        Value::Bytes(bytes) => match c_string(bytes) {
            Some(text) => Json::String(text.to_owned()),
            None => Json::Array(bytes.iter().map(|byte| Json::from(*byte)).collect()),
        },
        Value::Strs(items) | Value::Paths(items) => Json::Array(
            items
                .iter()
                .map(|item| Json::String(item.to_string()))
                .collect(),
        ),
        Value::U32s(items) => Json::Array(items.iter().map(|item| Json::from(*item)).collect()),
        Value::Array(array) => Json::Array(array.items.iter().map(json).collect()),
        Value::Dict(dict) if dict.entries.iter().all(|(key, _)| key.as_str().is_some()) => {
            Json::Object(
                dict.entries
                    .iter()
                    .map(|(key, value)| (key.as_str().unwrap_or_default().to_owned(), json(value)))
                    .collect(),
            )
        }
        Value::Dict(dict) => Json::Array(
            dict.entries
                .iter()
                .map(|(key, value)| Json::Array(vec![json(key), json(value)]))
                .collect(),
        ),
        Value::Struct(fields) => Json::Array(fields.iter().map(json).collect()),
        Value::Variant(inner) => json(inner),
        Value::VariantBytes(bytes) => {
            Json::Array(bytes.iter().map(|byte| Json::from(*byte)).collect())
        }
        other => Json::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_strings_show_as_text_only_when_they_are_c_strings() {
        // udisks2's `Device` of a block device.
        let dev = Value::Bytes(b"/dev/vda\0".to_vec().into_boxed_slice());
        assert_eq!(cell(&dev).text(), "/dev/vda");
        assert_eq!(json(&dev), Json::String("/dev/vda".into()));
        // Not NUL-terminated, a NUL inside, a control character, not UTF-8, empty: bytes.
        for bytes in [
            &b"/dev/vda"[..],
            b"a\0b\0",
            b"a\x1b[2J\0",
            b"\xff\xfe\0",
            b"\0",
        ] {
            let value = Value::Bytes(bytes.to_vec().into_boxed_slice());
            assert_eq!(c_string(bytes), None, "{bytes:?}");
            assert!(json(&value).is_array(), "{bytes:?}");
        }
    }
}
