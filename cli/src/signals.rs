//! SIGINT and SIGTERM as a flag the long-running commands check, instead of an instant death.
//!
//! A batch checks it between two sends (the send in flight is finished, its answers read and
//! what followed a refused line undone), then prints what was applied and what was not; a
//! monitor checks it between two polls and ends with a final line and status 0. The handlers
//! only set atomics (`signal-hook`'s `flag` module), so nothing runs in signal context. A
//! second signal of the same kind ends the process at once, as people expect of a second
//! Ctrl-C when the first one seems to hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};

/// The flag set when SIGINT or SIGTERM arrives, and which one it was.
#[derive(Debug, Clone)]
pub(crate) struct Interrupt {
    flag: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// Installs the handlers. A second SIGINT or SIGTERM after the first one terminates the
    /// process with the signal's default action.
    pub(crate) fn install() -> anyhow::Result<Interrupt> {
        let interrupt = Interrupt {
            flag: Arc::new(AtomicBool::new(false)),
            signal: Arc::new(AtomicUsize::new(0)),
        };
        for signal in [SIGINT, SIGTERM] {
            // Registered first, so it runs before the flag of this signal is set: on the
            // second signal the flag is set already and the process exits.
            signal_hook::flag::register_conditional_default(signal, Arc::clone(&interrupt.flag))?;
            signal_hook::flag::register_usize(
                signal,
                Arc::clone(&interrupt.signal),
                signal as usize,
            )?;
            signal_hook::flag::register(signal, Arc::clone(&interrupt.flag))?;
        }
        Ok(interrupt)
    }

    /// The flag itself, for [`netmirror_platform::Batch::cancel_on`].
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// The signal's name once one arrived (`SIGINT` or `SIGTERM`).
    pub(crate) fn received(&self) -> Option<Signal> {
        if !self.flag.load(Ordering::Relaxed) {
            return None;
        }
        match i32::try_from(self.signal.load(Ordering::Relaxed)) {
            Ok(SIGTERM) => Some(Signal::Term),
            _ => Some(Signal::Int),
        }
    }
}

/// A signal that asks the program to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGINT (Ctrl-C).
    Int,
    /// SIGTERM.
    Term,
}

impl Signal {
    /// `SIGINT` or `SIGTERM`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
        }
    }

    /// The exit status of a command a signal cut short: 128 + the signal's number, as a
    /// shell reports a process the signal killed (130, 143).
    pub(crate) fn exit_status(self) -> u8 {
        match self {
            Signal::Int => 130,
            Signal::Term => 143,
        }
    }
}

/// What a D-Bus monitor waits for: its next event, or a signal.
pub(crate) enum Next<E> {
    /// The next event.
    Event(E),
    /// The event stream ended (the connection closed).
    Closed,
    /// SIGINT or SIGTERM came first.
    Interrupted(Signal),
}

/// Waits for `next` (a cache's next event) or a signal, whichever comes first: the flag is
/// looked at every 100 ms on a timer of zbus's runtime. A monitor ends cleanly on the signal (the event
/// future, dropped then, loses nothing the monitor would still print).
pub(crate) async fn next_or_signal<E>(
    next: impl std::future::Future<Output = Option<E>>,
    interrupt: &Interrupt,
) -> Next<E> {
    let watch = async {
        // zbus's own runtime, which the monitor's connection already runs on, so it is alive
        // and this cannot fail; were it to, only a message would stop the wait.
        let runtime = match zruntime::SharedRuntime::current() {
            Ok(runtime) => runtime,
            Err(err) => {
                tracing::warn!("no timer to look for SIGINT/SIGTERM with: {err}");
                return std::future::pending().await;
            }
        };
        loop {
            if let Some(signal) = interrupt.received() {
                return signal;
            }
            runtime.sleep(std::time::Duration::from_millis(100)).await;
        }
    };
    let next = std::pin::pin!(next);
    let watch = std::pin::pin!(watch);
    match futures_util::future::select(next, watch).await {
        futures_util::future::Either::Left((Some(event), _)) => Next::Event(event),
        futures_util::future::Either::Left((None, _)) => Next::Closed,
        futures_util::future::Either::Right((signal, _)) => Next::Interrupted(signal),
    }
}

/// The monitors' last line when a signal stops them (`[MONITOR] stopped by SIGINT`).
pub(crate) fn print_stopped(
    printer: &mut crate::render::Printer,
    signal: Signal,
) -> anyhow::Result<()> {
    printer.status(
        &serde_json::json!({"object": "monitor", "event": "stopped", "signal": signal.name()}),
        &format!("[MONITOR] stopped by {}", signal.name()),
    )
}
