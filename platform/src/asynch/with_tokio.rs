//! [`TokioCache`]: the cache for tokio.

use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures_core::Stream;
use tokio::io::Interest;
use tokio::net::UnixDatagram;
use tokio::time::Sleep;

use super::{Core, Reactor};
use crate::cache::{Cache, Event};
use crate::error::Result;
use crate::platform::Config;

/// tokio's readiness of the event socket, and a timer.
#[derive(Debug)]
pub(crate) struct TokioReactor {
    /// The event socket's duplicate fd. tokio's safe constructors take only its own socket
    /// types (`AsyncFd::new` is deprecated as unsound, `AsyncFd::register` is `unsafe`), so
    /// the fd is held as a datagram socket: tokio only registers it with its reactor and
    /// tracks readiness, it never reads from it or asks its address.
    socket: UnixDatagram,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Reactor for TokioReactor {
    fn register(fd: OwnedFd) -> io::Result<Self> {
        let socket = std::os::unix::net::UnixDatagram::from(fd);
        // tokio wants it non-blocking; the cache reads it with `MSG_DONTWAIT` anyway.
        socket.set_nonblocking(true)?;
        Ok(TokioReactor {
            socket: UnixDatagram::from_std(socket)?,
            sleep: None,
        })
    }

    fn poll_drain(
        &mut self,
        cx: &mut Context<'_>,
        drain: &mut dyn FnMut() -> Result<bool>,
    ) -> Poll<Result<bool>> {
        if let Err(err) = std::task::ready!(self.socket.poll_recv_ready(cx)) {
            return Poll::Ready(Err(crate::error::Error::socket("wait for readiness", err)));
        }
        let mut outcome = Ok(false);
        // `WouldBlock` makes tokio forget the readiness it saw before the closure ran, and
        // only that: what came after it wakes the next wait.
        let _ = self.socket.try_io(Interest::READABLE, || {
            outcome = drain();
            match outcome {
                Ok(true) => Err(io::ErrorKind::WouldBlock.into()),
                _ => Ok(()),
            }
        });
        Poll::Ready(outcome)
    }

    fn poll_deadline(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
        let deadline = tokio::time::Instant::from_std(deadline);
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if sleep.deadline() != deadline {
            sleep.as_mut().reset(deadline);
        }
        sleep.as_mut().poll(cx)
    }
}

/// The [`Cache`] for tokio: loads and resyncs on a thread of their own, and a [`Stream`] of
/// [`Event`]s that never blocks the executor.
///
/// Polling the stream reads the event socket when tokio says it is readable, at most a
/// bounded number of datagrams at a time and yielding to the executor between steps; the
/// dumps some events call for (a link went down: which routes did the kernel flush?) and a
/// resync after an overflow run on a short-lived thread that holds the cache meanwhile. The
/// resync back-off is a tokio timer, so the runtime needs its time and I/O drivers
/// (`#[tokio::main]` and `Builder::enable_all` have them). The stream never ends; an error
/// (a failed dump, a socket error) is one item, and the stream goes on after it.
///
/// ```no_run
/// use futures_util::StreamExt;
/// use netmirror_platform::{Config, Event, Netns, TokioCache};
///
/// # async fn example() -> Result<(), netmirror_platform::Error> {
/// let mut cache = TokioCache::open(Config::new().with_netns(Netns::name("blue"))).await?;
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
pub struct TokioCache {
    core: Core<TokioReactor>,
}

impl TokioCache {
    /// Opens the sockets as `config` says and loads everything (as [`Cache::open`] does), on
    /// a thread of its own. Call it inside a tokio runtime with I/O and time enabled.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), netmirror_platform::Error> {
    /// let cache = netmirror_platform::TokioCache::open(Default::default()).await?;
    /// # drop(cache); Ok(()) }
    /// ```
    pub async fn open(config: Config) -> Result<Self> {
        Ok(TokioCache {
            core: Core::open(config).await?,
        })
    }

    /// The cache, to read. `None` only while a dump the stream started is running on its
    /// thread, which is seen between two polls only when a poll of the stream was dropped
    /// unfinished (a `next()` that lost a `select!`); polling the stream again finishes it.
    ///
    /// ```no_run
    /// # async fn example(cache: netmirror_platform::TokioCache) {
    /// if let Some(cache) = cache.get() {
    ///     println!("{} default routes", cache.default_routes().count());
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
    /// # async fn example(mut cache: netmirror_platform::TokioCache) -> netmirror_platform::Result<()> {
    /// cache.resync().await?;
    /// # Ok(()) }
    /// ```
    pub async fn resync(&mut self) -> Result<()> {
        self.core.resync().await
    }
}

impl Stream for TokioCache {
    type Item = Result<Event>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().core.poll_next(cx)
    }
}
