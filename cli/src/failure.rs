//! How a failed command ends: one clear line on stderr and an exit status.
//!
//! Exit status 0 on success and when stdout is a closed pipe (`netmirror route | head`), 1 for
//! a failure, 2 for a usage error. The failures people meet most (a service that is not on the
//! bus, a permission the kernel or the bus refused, a namespace that does not exist, a batch
//! line that is malformed or refused) each get a message of their own, built from the library
//! errors by the `explain` functions of `kernel` and `bus`; everything else prints the whole
//! error chain on one line. A command that SIGINT or SIGTERM cut short (a batch) ends with
//! 130 or 143, as a shell reports a process the signal killed.
//!
//! Nothing here panics when stderr is closed or full: messages go through [`warn`], which
//! drops what cannot be written (`eprintln!` would panic, and abort work not done yet).

use std::fmt::Display;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::signals::Signal;

/// A failure with a message of its own.
/// What a kernel refusal needs.
pub(crate) const KERNEL_HINT: &str = "run as root, or with CAP_NET_ADMIN";
/// What a D-Bus refusal needs.
pub(crate) const BUS_HINT: &str = "the bus policy or the service's own checks (polkit) refused it";

#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The D-Bus service is not on the bus.
    #[error("{service} is not running on the {bus}")]
    ServiceAbsent {
        /// The service's name.
        service: String,
        /// Which bus was asked.
        bus: String,
    },
    /// Nothing listens at the bus's address.
    #[error("no {bus}: nothing listens at its address ({reason})")]
    BusAbsent {
        /// Which bus.
        bus: String,
        /// The system's reason.
        reason: String,
    },
    /// The kernel or the bus refused an operation for lack of privileges.
    #[error("permission denied: {what} ({hint})")]
    PermissionDenied {
        /// What was refused.
        what: String,
        /// What would be allowed: [`KERNEL_HINT`] or [`BUS_HINT`].
        hint: &'static str,
    },
    /// Entering the network namespace of `--netns` was refused.
    #[error(
        "permission denied: enter network namespace {netns} (run as root, or with CAP_SYS_ADMIN; changing it also needs CAP_NET_ADMIN)"
    )]
    NetnsPermissionDenied {
        /// The name or path given.
        netns: String,
    },
    /// The network namespace of a monitor was deleted while it ran.
    #[error("network namespace {netns} was deleted")]
    NamespaceDeleted {
        /// The name or path given.
        netns: String,
    },
    /// A batch line is longer than the limit: reading stopped there.
    #[error("{file}:{line}: line longer than {limit} bytes; {what}")]
    BatchLineTooLong {
        /// The file name (`-` for stdin).
        file: String,
        /// The line number, from 1.
        line: usize,
        /// The limit in bytes.
        limit: usize,
        /// What was applied (`nothing was applied`, or the lines applied before).
        what: String,
    },
    /// SIGINT or SIGTERM cut a command short; `what` says what was done and what was not.
    #[error("interrupted by {}: {what}", signal.name())]
    Interrupted {
        /// The signal.
        signal: Signal,
        /// What was done and what was not.
        what: String,
    },
    /// The network namespace named with `--netns` does not exist.
    #[error("network namespace {name} does not exist (see `ip netns list`)")]
    NamespaceMissing {
        /// The name or path given.
        name: String,
    },
    /// A batch line could not be parsed; nothing was applied.
    #[error("{file}:{line}: malformed line `{text}`: {reason}; nothing was applied")]
    BatchMalformed {
        /// The file name (`-` for stdin).
        file: String,
        /// The line number, from 1.
        line: usize,
        /// The line as written.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Some batch lines failed; each was reported on stderr already.
    #[error("{failed} of {total} batch lines failed")]
    BatchFailed {
        /// Lines the kernel refused.
        failed: usize,
        /// Lines sent.
        total: usize,
    },
}

/// The exit status for a usage error.
pub(crate) const USAGE: u8 = 2;

/// Prints `err` as one line (unless it is a broken pipe) and returns the exit status.
pub(crate) fn report(err: &anyhow::Error) -> ExitCode {
    ExitCode::from(report_status(err))
}

/// [`report`], as the numeric exit status (for `std::process::exit`).
pub(crate) fn report_status(err: &anyhow::Error) -> u8 {
    if is_broken_pipe(err) {
        return 0;
    }
    if let Some(usage) = err.downcast_ref::<clap::Error>() {
        // Clap's own rendering ("error: ...", a usage line and a hint), then status 2.
        let _ = usage.print();
        return USAGE;
    }
    let message = format!("{err:#}");
    // The chain may quote what a source sent (a name, the kernel's message): escaped.
    warn(crate::render::escape(&message.replace('\n', " ")));
    match err.downcast_ref::<Failure>() {
        Some(Failure::Interrupted { signal, .. }) => signal.exit_status(),
        _ => 1,
    }
}

/// Writes `netmirror: MESSAGE` as one line on stderr; when stderr is closed or full the
/// line is lost, and nothing else happens (no panic, the work goes on).
pub(crate) fn warn(message: impl Display) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "netmirror: {message}");
}

/// Whether writing stdout failed because its reader went away.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(|json| json.io_error_kind())
                .is_some_and(|kind| kind == io::ErrorKind::BrokenPipe)
    })
}

/// Whether any cause in the chain is an OS "permission denied" (`EACCES` or `EPERM`).
pub(crate) fn is_permission_denied(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(current) = cause {
        if let Some(io) = current.downcast_ref::<io::Error>() {
            // The standard library maps both EPERM and EACCES to this kind.
            if io.kind() == io::ErrorKind::PermissionDenied {
                return true;
            }
        }
        cause = current.source();
    }
    false
}
