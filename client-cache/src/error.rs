//! The crate's error type.

/// Everything that can go wrong while building or driving a cache.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The D-Bus connection failed (I/O, authentication, or the connection closed).
    #[error("D-Bus connection: {0}")]
    DBus(#[from] zbus::Error),
    /// A name or path given by the caller is not a valid D-Bus name or path.
    #[error("invalid D-Bus name or path {0:?}")]
    InvalidName(String),
    /// A message body could not be decoded as its signature says.
    #[error("malformed message body: {0}")]
    Malformed(String),
    /// The service answered a call with an error.
    #[error("{name}: {message}")]
    Remote {
        /// The D-Bus error name.
        name: String,
        /// The error message, if any.
        message: String,
    },
    /// The service has no owner on the bus, and the caller asked for it to be there.
    #[error("service {0} is not on the bus")]
    ServiceUnknown(String),
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
    /// The private thread of the blocking facade went away.
    #[error("the cache thread stopped")]
    ThreadGone,
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
