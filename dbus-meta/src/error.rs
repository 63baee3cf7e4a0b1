//! Errors produced when checking and decoding wire values against declarations.

/// What can go wrong while decoding a property value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The value's signature is not the declared one; the value was rejected as a whole.
    #[error(
        "property {interface}.{property} has signature `{actual}` on the wire, declared `{expected}`"
    )]
    TypeMismatch {
        /// The interface declaring the property.
        interface: &'static str,
        /// The property's name.
        property: &'static str,
        /// The declared signature.
        expected: &'static str,
        /// The signature found on the wire.
        actual: String,
    },
    /// A value zbus could not build or copy (e.g. a file descriptor that cannot be
    /// duplicated, or a malformed container).
    #[error("cannot hold the value")]
    Variant(#[from] zbus::Error),
    /// A signature string that is not one complete D-Bus type.
    #[error("invalid D-Bus signature `{0}`")]
    InvalidSignature(String),
    /// The decoder found wire data that does not hold what its signature says.
    #[error("malformed D-Bus data: {0}")]
    Wire(String),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
