//! Debugging and fatal mode: `NETMIRROR_CLIENT_DEBUG` and `NETMIRROR_FATAL_WARNINGS`.
//!
//! In the spirit of libnm's `LIBNM_CLIENT_DEBUG`: protocol problems (a wrong-typed property, a
//! dangling reference, a malformed message ...) are always counted and kept in
//! [`Diagnostics`]; how loudly they are logged depends on the flags, and in fatal mode each one
//! panics so that CI catches server and client bugs alike.
//!
//! The library never reads those variables by itself: a program depending on it does not panic
//! because its user set one. A program (the `netmirror` CLI) or a test suite opts in with
//! [`DebugConfig::from_env`], per cache ([`crate::CacheBuilder::debug`]) or for every cache
//! built afterwards ([`DebugConfig::set_process_default`]; the `testing` fixtures do that).

use std::fmt;
use std::sync::{Mutex, PoisonError};

/// What [`DebugConfig::process_default`] returns; `None` until a program sets it.
static PROCESS_DEFAULT: Mutex<Option<DebugConfig>> = Mutex::new(None);

/// Name of the variable holding a comma list of `trace`, `warning`, `error`.
pub const DEBUG_ENV: &str = "NETMIRROR_CLIENT_DEBUG";
/// Name of the variable that, set to `1`, makes every protocol warning or error panic.
pub const FATAL_ENV: &str = "NETMIRROR_FATAL_WARNINGS";

/// How a cache reports protocol problems.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DebugConfig {
    /// Log every handled message and state change (at `tracing` debug level).
    pub trace: bool,
    /// Log protocol warnings at `tracing` warn level (otherwise info level; wrong-typed values
    /// and malformed messages, which leave a default where the service sent something, are
    /// logged at warn level always).
    pub warning: bool,
    /// Log protocol errors (malformed messages, failed calls, a diverged cache) at `tracing`
    /// error level (otherwise warn level, or info level for a failed call).
    pub error: bool,
    /// Panic on every protocol warning or error.
    pub fatal: bool,
}

impl DebugConfig {
    /// The configuration the environment asks for (`NETMIRROR_CLIENT_DEBUG`,
    /// `NETMIRROR_FATAL_WARNINGS=1`). Only what calls this reads them.
    pub fn from_env() -> Self {
        let mut config = Self::parse(std::env::var(DEBUG_ENV).ok().as_deref().unwrap_or(""));
        config.fatal = std::env::var(FATAL_ENV).is_ok_and(|v| v.trim() == "1");
        config
    }

    /// Parse a comma list such as `warning,error` (unknown words are ignored; `all` means all
    /// three flags).
    pub fn parse(list: &str) -> Self {
        let mut config = Self::default();
        for word in list.split([',', ' ', ':', ';']).map(str::trim) {
            match word.to_ascii_lowercase().as_str() {
                "trace" => config.trace = true,
                "warning" | "warn" => config.warning = true,
                "error" => config.error = true,
                "all" => {
                    config.trace = true;
                    config.warning = true;
                    config.error = true;
                }
                _ => {}
            }
        }
        config
    }

    /// The configuration [`crate::CacheBuilder::new`] starts from: the one installed with
    /// [`DebugConfig::set_process_default`], or [`DebugConfig::default`] (count, log quietly,
    /// never panic) when none was.
    pub fn process_default() -> Self {
        PROCESS_DEFAULT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or_default()
    }

    /// Make `config` what every cache built from now on in this process starts from (a
    /// builder's [`crate::CacheBuilder::debug`] still overrides it). A program that wants the
    /// environment variables to work calls `DebugConfig::set_process_default(DebugConfig::from_env())`
    /// once at start.
    ///
    /// ```
    /// use netmirror_client_cache::{DebugConfig, ObjectCache};
    ///
    /// // In `main`, before any cache is built: `NETMIRROR_CLIENT_DEBUG=warning,error` and
    /// // `NETMIRROR_FATAL_WARNINGS=1` now work for this program's caches.
    /// DebugConfig::set_process_default(DebugConfig::from_env());
    /// assert_eq!(DebugConfig::process_default(), DebugConfig::from_env());
    /// // A cache that injects faults on purpose keeps its own setting.
    /// let quiet = ObjectCache::builder("org.example.Lights").debug(DebugConfig::tolerant());
    /// # drop(quiet);
    /// ```
    pub fn set_process_default(config: Self) {
        *PROCESS_DEFAULT
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(config);
    }

    /// A configuration that never panics and logs quietly: for callers (and tests) that inject
    /// faults on purpose and then check [`Diagnostics`] instead.
    pub fn tolerant() -> Self {
        Self::default()
    }
}

/// What kind of protocol problem was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningKind {
    /// A property value whose type differs from its declaration; it was rejected.
    WrongType,
    /// A reference (`o`/`ao` property) to an object that does not exist.
    DanglingReference,
    /// A signal or reply about an object the cache does not know.
    UnknownObject,
    /// An interface the cache's registry does not declare (kept without types).
    UnknownInterface,
    /// A message body that could not be decoded.
    Malformed,
    /// A call the cache made failed.
    CallFailed,
    /// A reconcile found the cache different from the service: messages were lost.
    Diverged,
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::WrongType => "wrong type",
            Self::DanglingReference => "dangling reference",
            Self::UnknownObject => "unknown object",
            Self::UnknownInterface => "unknown interface",
            Self::Malformed => "malformed message",
            Self::CallFailed => "call failed",
            Self::Diverged => "cache diverged",
        })
    }
}

/// One recorded protocol problem.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Warning {
    /// Its kind.
    pub kind: WarningKind,
    /// A human-readable description.
    pub message: String,
}

/// Counters and the most recent warnings of one cache.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Diagnostics {
    /// Protocol warnings and errors seen so far.
    pub warnings: u64,
    /// Messages ignored because their sender was not the service's current owner.
    pub foreign_messages: u64,
    /// Signals dropped because they arrived before the reply of a pending full load, which
    /// already holds their effect.
    pub superseded_signals: u64,
    /// Messages handled.
    pub messages: u64,
    /// Batches committed.
    pub batches: u64,
    /// Times the consumer's event queue was full, so that it got an overrun and a resync.
    pub overruns: u64,
    /// The last warnings (at most [`Diagnostics::KEEP`]).
    pub recent: Vec<Warning>,
}

impl Diagnostics {
    /// How many recent warnings are kept.
    pub const KEEP: usize = 256;

    /// How many recent warnings are of `kind`.
    pub fn count(&self, kind: WarningKind) -> usize {
        self.recent.iter().filter(|w| w.kind == kind).count()
    }
}

/// The reporting half of a cache: config plus diagnostics.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reporter {
    pub(crate) config: DebugConfig,
    pub(crate) diag: Diagnostics,
}

impl Reporter {
    pub(crate) fn new(config: DebugConfig) -> Self {
        Self {
            config,
            diag: Diagnostics::default(),
        }
    }

    /// Report a protocol warning: count it, log it, and panic in fatal mode.
    pub(crate) fn warn(&mut self, kind: WarningKind, message: impl fmt::Display) {
        let message = message.to_string();
        self.diag.warnings += 1;
        let serious = matches!(
            kind,
            WarningKind::Malformed | WarningKind::CallFailed | WarningKind::Diverged
        );
        // A rejected value leaves a default where the service meant something else: always
        // worth a warning, or a program would show the default as if the service said it.
        let rejected = matches!(
            kind,
            WarningKind::WrongType | WarningKind::Malformed | WarningKind::Diverged
        );
        // The flags only ever make a warning louder: a program's log (at info level, as a
        // CLI's `-v`) sees every one of them whatever the flags say.
        if serious && self.config.error {
            tracing::error!(%kind, "{message}");
        } else if rejected || self.config.warning {
            tracing::warn!(%kind, "{message}");
        } else {
            tracing::info!(%kind, "{message}");
        }
        if self.config.fatal {
            panic!("netmirror-client-cache: fatal protocol warning ({kind}): {message}");
        }
        if self.diag.recent.len() == Diagnostics::KEEP {
            self.diag.recent.remove(0);
        }
        self.diag.recent.push(Warning { kind, message });
    }

    /// Trace a state change or message when `trace` is on.
    pub(crate) fn trace(&self, what: fmt::Arguments<'_>) {
        if self.config.trace {
            tracing::debug!("{what}");
        }
    }
}

#[cfg(test)]
mod tests;
