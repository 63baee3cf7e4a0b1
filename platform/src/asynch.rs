//! The async caches' common core: a [`Cache`] whose event socket is watched by a runtime's
//! reactor and whose dumps run on a thread of their own.
//!
//! Everything that waits for the kernel beyond the event socket (the initial load, a resync,
//! the re-dumps some events call for) runs on a short-lived thread that owns the cache while
//! it works and hands it back through a one-shot channel, so the executor never waits for a
//! dump. Reading the event socket stays on the executor, in steps of at most
//! `POLL_BUDGET` datagrams and [`STEP_TIME`], with a yield to the executor every other step
//! and every [`YIELD_EVERY`] events handed out, so a burst does not starve the executor's
//! other tasks.
//!
//! The runtime-specific part is small ([`Reactor`]): readiness of a duplicate of the event
//! socket's fd, and a timer for the resync deadline ([`Cache::next_deadline`]).

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_channel::oneshot;

use crate::cache::{Cache, Event};
use crate::error::{Error, Result};
use crate::platform::Config;

#[cfg(feature = "async-io")]
pub(crate) mod with_async_io;
#[cfg(feature = "tokio")]
pub(crate) mod with_tokio;

/// Work units between two yields to the executor: an event handed out is one unit, a step
/// that reads the socket [`STEP_COST`].
const YIELD_EVERY: usize = 128;
/// What one step of reading the socket counts for.
const STEP_COST: usize = 64;
/// The longest one step reads the socket: at most `POLL_BUDGET` datagrams, and none more
/// once this has passed (a debug build takes about 0.1 ms for a datagram of a route burst,
/// and one datagram can bring many changes).
const STEP_TIME: Duration = Duration::from_millis(2);

/// What a runtime gives the core: readiness of the event socket and a timer.
pub(crate) trait Reactor: Sized + Unpin {
    /// Registers `fd` (a duplicate of the event socket's fd) with the runtime.
    fn register(fd: OwnedFd) -> io::Result<Self>;

    /// Waits until the socket is readable, then runs `drain` (which reads without waiting
    /// and says whether the socket had nothing more) and forgets the readiness when it
    /// drained the socket.
    fn poll_drain(
        &mut self,
        cx: &mut Context<'_>,
        drain: &mut dyn FnMut() -> Result<bool>,
    ) -> Poll<Result<bool>>;

    /// Ready once `deadline` has passed.
    fn poll_deadline(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()>;
}

/// What a dump's thread hands back: the cache, the events it found and how it ended, or the
/// panic that ended it.
type Done = std::thread::Result<(Box<Cache>, Vec<Event>, Result<()>)>;

/// The state of an async cache, whatever the runtime.
#[derive(Debug)]
pub(crate) struct Core<R> {
    /// The cache, `None` while a dump's thread holds it (or after that thread panicked).
    cache: Option<Box<Cache>>,
    /// The thread working on the cache, if one is.
    job: Option<oneshot::Receiver<Done>>,
    reactor: R,
    /// Events (and errors) found and not handed out yet.
    queue: VecDeque<Result<Event>>,
    /// Work units done since the last yield to the executor.
    since_yield: usize,
    /// The last read of the socket ended with nothing more to read.
    drained: bool,
}

impl<R: Reactor> Core<R> {
    /// Opens and loads the cache on a thread of its own, then registers its event socket.
    pub(crate) async fn open(config: Config) -> Result<Self> {
        let cache = unblock(move || Cache::open(config)).await??;
        let fd = cache
            .as_fd()
            .try_clone_to_owned()
            .map_err(|err| Error::socket("duplicate the event socket", err))?;
        let reactor =
            R::register(fd).map_err(|err| Error::socket("register with the runtime", err))?;
        Ok(Core {
            cache: Some(Box::new(cache)),
            job: None,
            reactor,
            queue: VecDeque::new(),
            since_yield: 0,
            drained: false,
        })
    }

    /// The cache, unless a dump's thread holds it.
    pub(crate) fn get(&self) -> Option<&Cache> {
        self.cache.as_deref()
    }

    /// Resyncs everything on a thread of its own; the differences are queued for the stream.
    pub(crate) async fn resync(&mut self) -> Result<()> {
        // A dump already under way finishes first; what it found is queued, its error too.
        if let Err(err) = std::future::poll_fn(|cx| self.poll_job(cx)).await {
            self.queue.push_back(Err(err));
        }
        self.start(|cache, out| cache.resync(out))?;
        std::future::poll_fn(|cx| self.poll_job(cx)).await
    }

    /// Waits for the dump's thread, if one works, and takes the cache back. Its events are
    /// queued; its error is returned.
    fn poll_job(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let Some(job) = &mut self.job else {
            return Poll::Ready(Ok(()));
        };
        let done = match Pin::new(job).poll(cx) {
            Poll::Ready(done) => done,
            Poll::Pending => return Poll::Pending,
        };
        self.job = None;
        match done {
            Ok(Ok((cache, events, result))) => {
                self.cache = Some(cache);
                self.queue.extend(events.into_iter().map(Ok));
                Poll::Ready(result)
            }
            // The dump panicked: so does its waiter, as a join would.
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            // A thread that ends sends before it ends, a panicking one too.
            Err(oneshot::Canceled) => Poll::Ready(Err(Error::socket(
                "join the dump's thread",
                io::Error::other("the thread ended without an answer"),
            ))),
        }
    }

    /// Hands the cache to a new thread that runs `work` on it. If no thread can be made,
    /// the cache stays and the error is returned.
    fn start(
        &mut self,
        work: impl FnOnce(&mut Cache, &mut Vec<Event>) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        let Some(cache) = self.cache.take() else {
            // Lost to a panicking dump, whose panic was resumed.
            return Err(Error::socket(
                "start a dump",
                io::Error::other("the cache was lost to a panic"),
            ));
        };
        // The cache goes through a slot, so that a thread that cannot be made gives it back.
        let slot = Arc::new(Mutex::new(Some(cache)));
        let theirs = Arc::clone(&slot);
        let spawned = offload(move || {
            let taken = theirs.lock().unwrap_or_else(PoisonError::into_inner).take();
            taken.map(|mut cache| {
                let mut out = Vec::new();
                let result = work(&mut cache, &mut out);
                (cache, out, result)
            })
        });
        match spawned {
            Ok(rx) => {
                self.job = Some(rx);
                Ok(())
            }
            Err(err) => {
                self.cache = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                Err(err)
            }
        }
    }

    /// The next event: what is queued, else what the socket brings (waiting for it), with
    /// the dumps it calls for and the resync when it is due run off the executor.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Event>>> {
        loop {
            match self.poll_job(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(err)) => self.queue.push_back(Err(err)),
                Poll::Pending => {
                    self.since_yield = 0;
                    return Poll::Pending;
                }
            }
            if self.since_yield >= YIELD_EVERY {
                // Let the executor's other tasks run; the next poll goes on from here.
                self.since_yield = 0;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if let Some(item) = self.queue.pop_front() {
                self.since_yield += 1;
                return Poll::Ready(Some(item));
            }
            let Some(cache) = self.cache.as_deref_mut() else {
                // Lost to a panicking dump: nothing more will come.
                return Poll::Ready(None);
            };
            let drained = self.drained;
            if cache.kernel_work_due(drained) {
                if let Err(err) = self.start(move |cache, out| cache.kernel_work(drained, out)) {
                    self.queue.push_back(Err(err));
                }
                continue;
            }
            let mut out = Vec::new();
            let until = Instant::now() + STEP_TIME;
            let step = if cache.holds_events() {
                // Datagrams read and held: no readiness to wait for (the socket may be empty).
                Poll::Ready(cache.drain(Some(Duration::ZERO), Some(until), &mut out))
            } else {
                self.reactor.poll_drain(cx, &mut || {
                    cache.drain(Some(Duration::ZERO), Some(until), &mut out)
                })
            };
            match step {
                Poll::Ready(result) => {
                    self.since_yield += STEP_COST;
                    self.queue.extend(out.into_iter().map(Ok));
                    match result {
                        Ok(drained) => self.drained = drained,
                        Err(err) => self.queue.push_back(Err(err)),
                    }
                }
                Poll::Pending => {
                    // A quiet socket: wake up for the scheduled resync, if there is one.
                    let due = cache.next_deadline().is_some_and(|deadline| {
                        self.reactor.poll_deadline(cx, deadline).is_ready()
                    });
                    if due {
                        self.drained = true;
                        if cache.kernel_work_due(true) {
                            continue;
                        }
                        // The timer fired a little early: look again soon.
                        cx.waker().wake_by_ref();
                    }
                    self.since_yield = 0;
                    return Poll::Pending;
                }
            }
        }
    }
}

/// Runs `work` on a new thread; the receiver gets its result, or its panic.
fn offload<T: Send + 'static>(
    work: impl FnOnce() -> Option<T> + Send + 'static,
) -> Result<oneshot::Receiver<std::thread::Result<T>>> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("netmirror-dump".into())
        .spawn(
            move || match std::panic::catch_unwind(AssertUnwindSafe(work)) {
                Ok(Some(value)) => drop(tx.send(Ok(value))),
                // Nothing to hand back: dropping the sender tells the receiver.
                Ok(None) => {}
                Err(panic) => drop(tx.send(Err(panic))),
            },
        )
        .map_err(|err| Error::socket("spawn the dump's thread", err))?;
    Ok(rx)
}

/// Runs `work` on a new thread and waits for it without blocking the executor; a panic in
/// it is resumed here.
async fn unblock<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let rx = offload(move || Some(work()))?;
    match rx.await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(oneshot::Canceled) => Err(Error::socket(
            "join the dump's thread",
            io::Error::other("the thread ended without an answer"),
        )),
    }
}

#[cfg(test)]
mod tests {
    /// The caches and their futures can move between threads: `tokio::spawn` on a
    /// multi-thread runtime, or any work-stealing executor.
    #[test]
    fn caches_and_their_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        #[cfg(feature = "tokio")]
        {
            send(&crate::TokioCache::open(crate::Config::new()));
            fn stream<T: Send + Sync + Unpin + futures_core::Stream>() {}
            stream::<crate::TokioCache>();
        }
        #[cfg(feature = "async-io")]
        {
            send(&crate::AsyncIoCache::open(crate::Config::new()));
            fn stream<T: Send + Sync + Unpin + futures_core::Stream>() {}
            stream::<crate::AsyncIoCache>();
        }
    }
}
