//! A blocking facade: the same async cache, on a private thread with its own executor.
//!
//! As NMClient's synchronous initialization runs its async initialization on a private main
//! context, [`BlockingCache`] runs an [`ObjectCache`] inside `zbus::block_on` on a thread of
//! its own. Queries run there too, between batches, so they always see a consistent cache.
//!
//! The thread keeps reading the bus while the caller is slow: events go to the caller through
//! a bounded channel ([`EVENT_CHANNEL`] events) and, behind it, the cache's own bounded queue
//! ([`CacheBuilder::max_queued_events`]); when both are full, the caller gets
//! [`Event::Overrun`] and a resync once it catches up, never a silent gap.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
    mpsc,
};
use std::{thread, time::Duration};

use futures_util::StreamExt;

use crate::{CacheBuilder, Error, Event, ObjectCache, Result};

type Query = Box<dyn FnOnce(&ObjectCache) + Send>;

/// How many events wait in the channel between the cache's thread and the caller.
pub const EVENT_CHANNEL: usize = 1024;

/// An [`ObjectCache`] for synchronous code.
#[derive(Debug)]
pub struct BlockingCache {
    queries: futures_channel::mpsc::UnboundedSender<Query>,
    events: mpsc::Receiver<Event>,
    /// Set by the cache's thread when the channel was full: the caller wakes it after taking
    /// an event.
    stalled: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

/// Where a [`BlockingBuilder`] gets its connection.
enum Target {
    Address(String),
    Connection(zbus::Connection),
}

/// How to build a [`BlockingCache`] (from [`BlockingCache::builder`]): the cache's
/// [`CacheBuilder`], the size of the event channel, and then an address
/// ([`BlockingBuilder::connect`]) or a connection ([`BlockingBuilder::build`]).
#[derive(Debug)]
pub struct BlockingBuilder {
    cache: CacheBuilder,
    channel: usize,
}

impl BlockingBuilder {
    /// How many events may wait in the channel between the cache's thread and the caller
    /// ([`EVENT_CHANNEL`] by default, at least 1). When it is full the thread keeps reading
    /// the bus and the cache's own queue takes the events; past that queue the caller gets
    /// [`Event::Overrun`] and a resync once it catches up, never a silent gap.
    pub fn event_channel(mut self, events: usize) -> Self {
        self.channel = events.max(1);
        self
    }

    /// Connect to the bus at `address` (a D-Bus address such as `unix:path=/run/dbus/...`),
    /// build the cache and wait until it is loaded.
    pub fn connect(self, address: &str) -> Result<BlockingCache> {
        self.start(Target::Address(address.to_owned()))
    }

    /// Build the cache on `conn` (a connection the program already has, to a bus or a peer)
    /// and wait until it is loaded. The cache reads every message of `conn` (see
    /// [`ObjectCache`]); the connection stays usable by its other users.
    pub fn build(self, conn: &zbus::Connection) -> Result<BlockingCache> {
        self.start(Target::Connection(conn.clone()))
    }

    fn start(self, target: Target) -> Result<BlockingCache> {
        let builder = self.cache;
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        let (query_tx, query_rx) = futures_channel::mpsc::unbounded::<Query>();
        let (event_tx, event_rx) = mpsc::sync_channel(self.channel);
        let stalled = Arc::new(AtomicBool::new(false));
        let thread_stalled = stalled.clone();
        let thread = thread::Builder::new()
            .name("netmirror-cache".into())
            .spawn(move || {
                zbus::block_on(async move {
                    let setup = async {
                        let conn = match target {
                            Target::Address(address) => {
                                zbus::connection::Builder::address(address.as_str())
                                    .build()
                                    .await?
                            }
                            Target::Connection(conn) => conn,
                        };
                        builder.build_loaded(&conn).await
                    };
                    match setup.await {
                        Ok(cache) => {
                            let _ = ready_tx.send(Ok(()));
                            serve(cache, query_rx, event_tx, &thread_stalled).await;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })
            .map_err(|_| Error::ThreadGone)?;
        ready_rx.recv().map_err(|_| Error::ThreadGone)??;
        Ok(BlockingCache {
            queries: query_tx,
            events: event_rx,
            stalled,
            thread: Some(thread),
        })
    }
}

impl BlockingCache {
    /// A builder of a blocking cache described by `cache`: then
    /// [`BlockingBuilder::connect`] to an address or [`BlockingBuilder::build`] on a
    /// connection.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use netmirror_client_cache::{BlockingCache, Event, ObjectCache};
    /// # #[cfg(feature = "testing")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use netmirror_client_cache::testing::PrivateBus;
    /// # let bus = PrivateBus::start()?;
    /// # let _service = zbus::block_on(
    /// #     zbus::connection::Builder::address(bus.address())
    /// #         .serve_at("/", zbus::fdo::ObjectManager)
    /// #         .name("org.example.Lights")
    /// #         .build(),
    /// # )?;
    /// # let address = bus.address();
    /// // `address` is a D-Bus address, such as `unix:path=/run/dbus/system_bus_socket`.
    /// let cache = BlockingCache::builder(ObjectCache::builder("org.example.Lights"))
    ///     // At most 16 events wait for this thread; past them and the cache's own queue,
    ///     // it gets `Event::Overrun`, then the changes that catch it up.
    ///     .event_channel(16)
    ///     .connect(address)?;
    /// let objects = cache.with(|cache| cache.len())?;
    /// assert_eq!(objects, 0);
    /// // The load's events, then whatever the service changes.
    /// assert_eq!(cache.recv_event(Duration::from_secs(5)), Some(Event::Loaded));
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "testing"))]
    /// # fn main() {}
    /// ```
    pub fn builder(cache: CacheBuilder) -> BlockingBuilder {
        BlockingBuilder {
            cache,
            channel: EVENT_CHANNEL,
        }
    }

    /// Connect to the bus at `address` (a D-Bus address such as `unix:path=/run/dbus/...`), build
    /// the cache and wait until it is loaded: `BlockingCache::builder(builder).connect(address)`.
    pub fn connect(address: &str, builder: CacheBuilder) -> Result<Self> {
        Self::builder(builder).connect(address)
    }

    /// Run `f` on the cache (on its thread, between batches) and return its result.
    pub fn with<R: Send + 'static>(
        &self,
        f: impl FnOnce(&ObjectCache) -> R + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = mpsc::channel();
        let query: Query = Box::new(move |cache| {
            let _ = tx.send(f(cache));
        });
        self.queries
            .unbounded_send(query)
            .map_err(|_| Error::ThreadGone)?;
        rx.recv().map_err(|_| Error::ThreadGone)
    }

    /// The next event, waiting at most `timeout`.
    pub fn recv_event(&self, timeout: Duration) -> Option<Event> {
        let event = self.events.recv_timeout(timeout).ok();
        if event.is_some() && self.stalled.swap(false, Ordering::SeqCst) {
            // The thread holds an event the channel had no room for: there is room now.
            let _ = self.queries.unbounded_send(Box::new(|_| {}));
        }
        event
    }
}

/// The cache's thread: hand events over while the channel has room, and keep handling
/// messages (and queries) whether it has or not.
async fn serve(
    mut cache: ObjectCache,
    mut queries: futures_channel::mpsc::UnboundedReceiver<Query>,
    events: mpsc::SyncSender<Event>,
    stalled: &AtomicBool,
) {
    let mut held: Option<Event> = None;
    loop {
        while let Some(event) = held.take().or_else(|| cache.pop_ready()) {
            match events.try_send(event) {
                Ok(()) => {}
                Err(mpsc::TrySendError::Disconnected(_)) => return,
                Err(mpsc::TrySendError::Full(event)) => {
                    // Say so before the last try: a caller that takes an event after this
                    // wakes us; one that emptied the channel before it leaves room for it.
                    stalled.store(true, Ordering::SeqCst);
                    match events.try_send(event) {
                        Ok(()) => {}
                        Err(mpsc::TrySendError::Disconnected(_)) => return,
                        Err(mpsc::TrySendError::Full(event)) => {
                            held = Some(event);
                            break;
                        }
                    }
                }
            }
        }
        if cache.is_closed() {
            if held.is_none() {
                return;
            }
            // Wait for room (a wake-up query), then hand the rest over.
            match queries.next().await {
                Some(query) => query(&cache),
                None => return,
            }
            continue;
        }
        match cache.step_or(queries.next()).await {
            Ok(Some(Some(query))) => query(&cache),
            Ok(Some(None)) => return,
            Ok(None) => {}
            Err(e) => {
                tracing::debug!("cache stream ended: {e}");
                cache.set_closed();
            }
        }
    }
}

impl Drop for BlockingCache {
    fn drop(&mut self) {
        self.queries.close_channel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
