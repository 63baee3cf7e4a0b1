//! The log subscriber of a run at the default level (warnings and errors, no `RUST_LOG`),
//! made at the first warning or error instead of at the start.
//!
//! Most runs log nothing, yet making `tracing_subscriber`'s formatting subscriber and its
//! filter, and the `log` bridge, touches code spread over the binary: about 0.3 MiB of the
//! resident memory of a `route show`. [`install`] puts a [`LazySubscriber`] in its place, which
//! answers "nothing below a warning" by itself and hands everything else to the real subscriber,
//! made then; `log` records (from the netlink crates) come through [`LogBridge`] as
//! `tracing_log::LogTracer` would bring them.

use std::sync::OnceLock;

use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_core::span::Current;

/// The real subscriber, made by `make` at the first warning or error.
struct LazySubscriber<F> {
    make: F,
    inner: OnceLock<Box<dyn Subscriber + Send + Sync>>,
}

/// The most verbose level let through.
const LEVEL: Level = Level::WARN;

impl<F, S> LazySubscriber<F>
where
    F: Fn() -> S,
    S: Subscriber + Send + Sync + 'static,
{
    /// The real subscriber, made now if it was not yet.
    fn inner(&self) -> &(dyn Subscriber + Send + Sync) {
        &**self.inner.get_or_init(|| Box::new((self.make)()))
    }
}

impl<F, S> Subscriber for LazySubscriber<F>
where
    F: Fn() -> S + Send + Sync + 'static,
    S: Subscriber + Send + Sync + 'static,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if *metadata.level() > LEVEL {
            Interest::never()
        } else {
            self.inner().register_callsite(metadata)
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::from_level(LEVEL))
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= LEVEL && self.inner().enabled(metadata)
    }

    fn event_enabled(&self, event: &Event<'_>) -> bool {
        self.inner().event_enabled(event)
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.inner().new_span(span)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.inner().record(span, values);
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.inner().record_follows_from(span, follows);
    }

    fn event(&self, event: &Event<'_>) {
        self.inner().event(event);
    }

    fn enter(&self, span: &Id) {
        self.inner().enter(span);
    }

    fn exit(&self, span: &Id) {
        self.inner().exit(span);
    }

    fn clone_span(&self, id: &Id) -> Id {
        self.inner().clone_span(id)
    }

    fn try_close(&self, id: Id) -> bool {
        self.inner().try_close(id)
    }

    fn current_span(&self) -> Current {
        // No span exists before the real subscriber does.
        self.inner
            .get()
            .map_or_else(Current::none, |inner| inner.current_span())
    }
}

/// `log` records to `tracing`, as `tracing_log::LogTracer` passes them at the same level.
struct LogBridge;

impl log::Log for LogBridge {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
            && tracing::dispatcher::get_default(|dispatch| {
                dispatch.enabled(&tracing_log::AsTrace::as_trace(metadata))
            })
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            // Never fails.
            let _ = tracing_log::format_trace(record);
        }
    }

    fn flush(&self) {}
}

/// Installs a subscriber of warnings and errors that `make` makes at the first one, and the
/// `log` bridge (what `tracing_subscriber`'s `try_init` installs, without making anything).
pub(crate) fn install<F, S>(make: F)
where
    F: Fn() -> S + Send + Sync + 'static,
    S: Subscriber + Send + Sync + 'static,
{
    let subscriber = LazySubscriber {
        make,
        inner: OnceLock::new(),
    };
    if tracing::subscriber::set_global_default(subscriber).is_ok()
        && log::set_logger(&LogBridge).is_ok()
    {
        log::set_max_level(log::LevelFilter::Warn);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tracing::Dispatch;

    use super::*;

    /// A subscriber that counts the events it gets.
    struct Counting(Arc<AtomicUsize>);

    impl Subscriber for Counting {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn the_subscriber_is_made_at_the_first_warning_and_gets_warnings_and_errors_only() {
        let made = Arc::new(AtomicUsize::new(0));
        let events = Arc::new(AtomicUsize::new(0));
        let (made_by, events_to) = (made.clone(), events.clone());
        let lazy = LazySubscriber {
            make: move || {
                made_by.fetch_add(1, Ordering::SeqCst);
                Counting(events_to.clone())
            },
            inner: OnceLock::new(),
        };
        tracing::dispatcher::with_default(&Dispatch::new(lazy), || {
            tracing::info!("not shown");
            tracing::debug!("not shown");
            assert_eq!(made.load(Ordering::SeqCst), 0, "made before a warning");
            tracing::warn!("shown");
            tracing::error!("shown");
            tracing::info!("not shown");
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(events.load(Ordering::SeqCst), 2);
    }
}
