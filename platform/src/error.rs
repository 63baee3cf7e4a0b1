//! Errors produced by the platform: socket and namespace failures, kernel refusals (with the
//! kernel's extended-ack message), malformed messages and exhausted dump retries.

use std::io;

/// Everything that can go wrong while talking to the kernel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A socket system call failed.
    #[error("netlink socket {op} failed")]
    Socket {
        /// The operation that failed (`open`, `bind`, `send`, `recv`, ...).
        op: &'static str,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The network namespace could not be opened or entered.
    #[error("cannot enter network namespace {netns}")]
    Netns {
        /// The namespace as the caller named it.
        netns: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The file given as a network namespace is not one (a FIFO, a regular file, another
    /// kind of namespace).
    #[error("{netns} is not a network namespace")]
    NotNetns {
        /// The namespace as the caller named it.
        netns: String,
    },
    /// The kernel answered a request with an error.
    #[error("kernel refused the request: {}", .0)]
    Kernel(KernelError),
    /// A message from the kernel was truncated or malformed.
    #[error("malformed netlink message: {what}")]
    Malformed {
        /// What was wrong with it.
        what: String,
    },
    /// Every attempt of a dump was interrupted (NLM_F_DUMP_INTR) by concurrent changes.
    #[error("dump interrupted {attempts} times in a row by concurrent changes")]
    DumpInterrupted {
        /// How many attempts were made.
        attempts: u32,
    },
    /// The socket's receive buffer overflowed (ENOBUFS): events were lost.
    #[error("netlink receive buffer overflowed (ENOBUFS), events were lost")]
    Overrun,
    /// No answer arrived in time.
    #[error("timed out waiting for the kernel")]
    Timeout,
    /// The caller passed an invalid value.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// An error the kernel returned in an `NLMSG_ERROR` message, with its extended ack.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelError {
    /// The positive errno value (e.g. 17 for EEXIST).
    pub errno: i32,
    /// The kernel's extended-ack message (`NLMSGERR_ATTR_MSG`), when it sent one.
    pub message: Option<String>,
    /// Offset of the offending attribute in the request (`NLMSGERR_ATTR_OFFS`), when sent.
    pub bad_attr_offset: Option<u32>,
}

impl KernelError {
    /// The errno as an [`io::Error`].
    pub fn io_error(&self) -> io::Error {
        io::Error::from_raw_os_error(self.errno)
    }
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.io_error())?;
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        Ok(())
    }
}

impl Error {
    pub(crate) fn socket(op: &'static str, source: io::Error) -> Self {
        Error::Socket { op, source }
    }

    pub(crate) fn malformed(what: impl Into<String>) -> Self {
        Error::Malformed { what: what.into() }
    }

    /// The kernel's errno, when this error is a kernel refusal or a failed system call.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Kernel(err) => Some(err.errno),
            Error::Socket { source, .. } | Error::Netns { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// Result alias with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
