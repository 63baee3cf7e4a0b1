//! [`AsyncIoCache`]: the cache for async-io (smol, async-std, or any executor).

use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use async_io::{Async, Timer};
use futures_core::Stream;

use super::{Core, Reactor};
use crate::cache::{Cache, Event};
use crate::error::{Error, Result};
use crate::platform::Config;

/// async-io's readiness of the event socket, and a timer.
#[derive(Debug)]
pub(crate) struct AsyncIoReactor {
    /// The event socket's duplicate fd, registered with async-io's reactor.
    socket: Async<OwnedFd>,
    /// The timer for the resync deadline, with the deadline it is set for.
    timer: Option<(Instant, Timer)>,
}

impl Reactor for AsyncIoReactor {
    fn register(fd: OwnedFd) -> io::Result<Self> {
        Ok(AsyncIoReactor {
            socket: Async::new(fd)?,
            timer: None,
        })
    }

    fn poll_drain(
        &mut self,
        cx: &mut Context<'_>,
        drain: &mut dyn FnMut() -> Result<bool>,
    ) -> Poll<Result<bool>> {
        // async-io reports each readiness once and asks the system again on the next wait:
        // a socket left with data wakes that wait at once, a drained one when data comes.
        if let Err(err) = std::task::ready!(self.socket.poll_readable(cx)) {
            return Poll::Ready(Err(Error::socket("wait for readiness", err)));
        }
        Poll::Ready(drain())
    }

    fn poll_deadline(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
        let (set_for, timer) = self
            .timer
            .get_or_insert_with(|| (deadline, Timer::at(deadline)));
        if *set_for != deadline {
            *set_for = deadline;
            timer.set_at(deadline);
        }
        match Pin::new(timer).poll(cx) {
            Poll::Ready(_) => Poll::Ready(()),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The [`Cache`] for async-io, and so for smol, async-std or any executor: loads and resyncs
/// on a thread of their own, and a [`Stream`] of [`Event`]s that never blocks the executor.
///
/// It works as `TokioCache` (feature `tokio`) does, with async-io's reactor watching the
/// event socket and its timer waiting for the resync back-off.
///
/// ```no_run
/// use futures_util::StreamExt;
/// use netmirror_platform::{AsyncIoCache, Config, Event, Netns};
///
/// # async fn example() -> Result<(), netmirror_platform::Error> {
/// let mut cache = AsyncIoCache::open(Config::new().with_netns(Netns::name("blue"))).await?;
/// if let Some(cache) = cache.get() {
///     println!("{} routes", cache.routes().count());
/// }
/// while let Some(event) = cache.next().await {
///     if let Event::Route(change) = event? {
///         println!("{change:?}");
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct AsyncIoCache {
    core: Core<AsyncIoReactor>,
}

impl AsyncIoCache {
    /// Opens the sockets as `config` says and loads everything (as [`Cache::open`] does), on
    /// a thread of its own.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), netmirror_platform::Error> {
    /// let cache = netmirror_platform::AsyncIoCache::open(Default::default()).await?;
    /// # drop(cache); Ok(()) }
    /// ```
    pub async fn open(config: Config) -> Result<Self> {
        Ok(AsyncIoCache {
            core: Core::open(config).await?,
        })
    }

    /// The cache, to read. `None` only while a dump the stream started is running on its
    /// thread, which is seen between two polls only when a poll of the stream was dropped
    /// unfinished; polling the stream again finishes it.
    ///
    /// ```no_run
    /// # fn example(cache: netmirror_platform::AsyncIoCache) {
    /// if let Some(cache) = cache.get() {
    ///     println!("{} links", cache.links().count());
    /// }
    /// # }
    /// ```
    pub fn get(&self) -> Option<&Cache> {
        self.core.get()
    }

    /// Resyncs everything now (mark, dump, sweep) on a thread of its own; the stream then
    /// reports the differences, ending with [`Event::Resynced`].
    ///
    /// ```no_run
    /// # async fn example(mut cache: netmirror_platform::AsyncIoCache) -> netmirror_platform::Result<()> {
    /// cache.resync().await?;
    /// # Ok(()) }
    /// ```
    pub async fn resync(&mut self) -> Result<()> {
        self.core.resync().await
    }
}

impl Stream for AsyncIoCache {
    type Item = Result<Event>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().core.poll_next(cx)
    }
}
