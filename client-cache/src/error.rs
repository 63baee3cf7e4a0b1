//! The crate's error type.

use std::time::Duration;

/// Everything that can go wrong while building or driving a cache.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The D-Bus connection failed (I/O, authentication, or the connection closed).
    #[error("D-Bus connection: {0}")]
    DBus(#[from] zbus::Error),
    /// A name or path given by the caller is not a valid D-Bus name or path: nothing was sent.
    #[error("invalid D-Bus {what} {value:?}")]
    InvalidName {
        /// What it should have been (`bus name`, `object path`, `interface name`, ...).
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// A call the (re)load needs failed: no reply within the deadline, an error reply, or a
    /// reply that does not hold what the method returns. The load cannot finish.
    #[error(transparent)]
    Call(Box<CallError>),
    /// The connection closed while the cache was waiting for it.
    #[error("the D-Bus connection closed")]
    Closed,
    /// A wait gave up after its timeout.
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// The service (NetworkManager's permission checks, or polkit) refused the caller.
    #[error("not authorized to {action}: {message}")]
    NotAuthorized {
        /// What the caller tried, in words (`activate profile "x"`).
        action: String,
        /// The service's message.
        message: String,
    },
    /// A setting given by the caller is wrong; nothing was sent.
    #[error("{0}")]
    InvalidSetting(String),
    /// The caller named something the cache does not hold.
    #[error("{kind} {name:?} not found")]
    NotFound {
        /// What kind of thing (`profile`, `device`, `active connection`).
        kind: &'static str,
        /// The name the caller gave.
        name: String,
    },
    /// The file to record to ([`CacheBuilder::record_to`](crate::CacheBuilder::record_to))
    /// cannot be created or written.
    #[error("cannot record to {}: {source}", path.display())]
    Recording {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The private thread of the blocking facade went away.
    #[error("the cache thread stopped")]
    ThreadGone,
}

impl From<CallError> for Error {
    fn from(error: CallError) -> Self {
        Self::Call(Box::new(error))
    }
}

/// A call the cache made that failed: which call, to whom, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{method} on {service} at {path}: {cause}")]
#[non_exhaustive]
pub struct CallError {
    /// The method, with its interface's last component (`ObjectManager.GetManagedObjects`).
    pub method: String,
    /// The destination: the service's name (and its unique name), or the bus.
    pub service: String,
    /// The object path called.
    pub path: String,
    /// Why it failed.
    pub cause: CallFailure,
}

impl CallError {
    /// The D-Bus error name when the call got an error reply.
    pub fn error_name(&self) -> Option<&str> {
        match &self.cause {
            CallFailure::ErrorReply { name, .. } => Some(name),
            _ => None,
        }
    }

    /// Whether the call was refused with the bus's `AccessDenied` (compared with zbus's typed
    /// [`zbus::fdo::Error::AccessDenied`]'s name).
    pub fn is_access_denied(&self) -> bool {
        let denied = zbus::fdo::Error::AccessDenied(String::new());
        self.error_name() == Some(zbus::DBusError::name(&denied).as_str())
    }
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// No reply came within the cache's deadline (see
    /// [`CacheBuilder::timeout`](crate::CacheBuilder::timeout)).
    #[error("no reply within {} s (timed out)", .0.as_secs_f64())]
    Timeout(Duration),
    /// The destination (or the bus on its behalf) answered with a D-Bus error.
    #[error("error reply {name}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    ErrorReply {
        /// The D-Bus error name (`org.freedesktop.DBus.Error.AccessDenied`, ...).
        name: String,
        /// The error's message, if it has one.
        message: String,
    },
    /// The reply's signature is not the method's.
    #[error("reply of signature `{got}` where `{expected}` was expected")]
    WrongSignature {
        /// The reply's signature.
        got: String,
        /// The method's return signature.
        expected: String,
    },
    /// The reply's body does not hold what its signature says.
    #[error("malformed reply: {0}")]
    Malformed(String),
    /// The call could not be built (an invalid name or path in it).
    #[error("cannot build the call: {0}")]
    Unsendable(String),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
