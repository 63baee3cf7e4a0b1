//! The async cache: a [`Core`] driven by the caller polling [`ObjectCache::next_event`].

use std::{
    future::Future,
    num::NonZeroUsize,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use netmirror_dbus_meta::{DeclaredType, PropertyKey};
use zbus::{Connection, MessageStream, OwnedObjectPath};

use crate::{
    Value,
    core::{Config, Core, DEFAULT_MAX_EVENTS, DEFAULT_TIMEOUT, FetchSpec, Lookup, Scope},
    debug::{DebugConfig, Diagnostics},
    error::{Error, Result},
    event::Event,
    meta::Registry,
    object::Object,
    record::Recorder,
    store::ObjId,
};

/// At most this many already-queued messages are handled as one batch.
const MAX_BATCH: usize = 4096;

/// How to build an [`ObjectCache`].
#[derive(Debug, Clone)]
pub struct CacheBuilder {
    pub(crate) cfg: Config,
    record: Option<std::path::PathBuf>,
}

impl CacheBuilder {
    /// A cache of `service`, whose ObjectManager is at `/` (see [`CacheBuilder::manager_path`]).
    /// Interfaces are kept generically unless declared with [`CacheBuilder::registry`].
    pub fn new(service: impl Into<String>) -> Self {
        Self {
            cfg: Config {
                service: service.into(),
                manager_path: "/".into(),
                registry: Registry::generic(),
                fetches: Vec::new(),
                keep_fetched: None,
                scope: Scope::All,
                debug: DebugConfig::process_default(),
                timeout: DEFAULT_TIMEOUT,
                max_events: DEFAULT_MAX_EVENTS,
            },
            record: None,
        }
    }

    /// The path of the service's ObjectManager (NetworkManager's is `/org/freedesktop`).
    pub fn manager_path(mut self, path: impl Into<String>) -> Self {
        self.cfg.manager_path = path.into();
        self
    }

    /// The interface declarations to decode and type-check with.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.cfg.registry = registry;
        self
    }

    /// Fetch per-object data with a method call (see [`FetchSpec`]).
    pub fn fetch(mut self, spec: FetchSpec) -> Self {
        self.cfg.fetches.push(spec);
        self
    }

    /// Keep only some entries of the fetches' replies ([`FetchSpec`]), for a program that reads
    /// a few of them: the others are passed over while the reply is decoded, and cost no
    /// memory. `keep` lists outer keys, each with the inner keys kept under it: a reply that
    /// is a dictionary of dictionaries with string keys (`a{sa{s…}}`, such as NetworkManager's
    /// `GetSettings` `a{sa{sv}}`) keeps the listed outer keys with, of their entries, only
    /// the listed inner ones, in the order the service sent them; an outer key with none of
    /// its inner keys there is left out too. A reply of another type is kept whole. Without
    /// this every reply is kept whole.
    ///
    /// What is kept is what [`Object::fetched`] and the
    /// [`Event::Refetched`] events show. A recording ([`CacheBuilder::record_to`]) holds the
    /// messages, not this choice: a replay keeps what its own builder says.
    pub fn keep_fetched(mut self, keep: &[(&str, &[&str])]) -> Self {
        self.cfg.keep_fetched = Some(
            keep.iter()
                .map(|(outer, inner)| {
                    (
                        Box::<str>::from(*outer),
                        inner.iter().map(|k| Box::<str>::from(*k)).collect(),
                    )
                })
                .collect(),
        );
        self
    }

    /// Load only one object, asking the server for it (see [`Scope::Path`]).
    pub fn only_path(mut self, path: impl Into<String>) -> Self {
        self.cfg.scope = Scope::Path(path.into());
        self
    }

    /// Load only the object a server-side lookup names (see [`Scope::Lookup`]).
    pub fn lookup(mut self, lookup: Lookup) -> Self {
        self.cfg.scope = Scope::Lookup(lookup);
        self
    }

    /// How this cache reports protocol problems, instead of [`DebugConfig::process_default`]
    /// (for example [`DebugConfig::from_env`] to honour `NETMIRROR_CLIENT_DEBUG` and
    /// `NETMIRROR_FATAL_WARNINGS`, or [`DebugConfig::tolerant`] where faults are injected on
    /// purpose).
    pub fn debug(mut self, debug: DebugConfig) -> Self {
        self.cfg.debug = debug;
        self
    }

    /// How long each call may wait for its reply (25 s by default, as libdbus and libnm): a
    /// load whose call gets no reply in time fails with [`Error::Call`] naming the call and
    /// the service.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.cfg.timeout = timeout;
        self
    }

    /// How many events may wait for the consumer (65536 by default). When the queue is full,
    /// the cache keeps reading the bus and applying changes, queues nothing more, and once the
    /// consumer has taken the queued events it gets [`Event::Overrun`], the changes from its
    /// last state to now, and [`Event::Resynced`]. The queue holds at most this many events
    /// plus one batch's.
    pub fn max_queued_events(mut self, max: usize) -> Self {
        self.cfg.max_events = max.max(1);
        self
    }

    /// Record the cache's conversation to `path` (created, or truncated): every message it
    /// handles, every call it sends, and what its driver does (batches, timeouts, events
    /// taken), in the format described in the [`replay`](crate::replay) module, which replays
    /// it without a bus. Recording does not change what the cache does; a write that fails
    /// stops it (see [`ObjectCache::finish_recording`]).
    pub fn record_to(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.record = Some(path.into());
        self
    }

    /// Check every name and path the cache will send (the service's bus name, the manager's
    /// path, the object or lookup asked for): [`Error::InvalidName`] for the first invalid one.
    /// [`CacheBuilder::build`] checks them before it sends anything.
    pub fn validate(&self) -> Result<()> {
        fn check(what: &'static str, value: &str, valid: fn(&str) -> bool) -> Result<()> {
            if valid(value) {
                return Ok(());
            }
            Err(Error::InvalidName {
                what,
                value: value.to_owned(),
            })
        }
        let path = |s: &str| zbus::ObjectPath::try_from(s).is_ok();
        let interface = |s: &str| zbus::names::InterfaceName::try_from(s).is_ok();
        let member = |s: &str| zbus::names::MemberName::try_from(s).is_ok();
        let cfg = &self.cfg;
        check("bus name", &cfg.service, |s| {
            zbus::names::BusName::try_from(s).is_ok()
        })?;
        check("object path", &cfg.manager_path, path)?;
        match &cfg.scope {
            Scope::All => {}
            Scope::Path(p) => check("object path", p, path)?,
            Scope::Lookup(l) => {
                check("object path", &l.path, path)?;
                check("interface name", &l.interface, interface)?;
                check("member name", &l.method, member)?;
            }
        }
        for f in &cfg.fetches {
            check("interface name", &f.interface, interface)?;
            check("member name", &f.method, member)?;
        }
        Ok(())
    }

    /// Subscribe and send the initial calls. Nothing is handled until the cache is polled.
    pub async fn build(self, conn: &Connection) -> Result<ObjectCache> {
        self.validate()?;
        let mut stream = MessageStream::from(conn);
        // Replies of a whole pipelined load queue up here; let them, rather than stalling the
        // connection's reader.
        stream.set_max_queued(NonZeroUsize::new(1 << 16).unwrap_or(NonZeroUsize::MIN));
        let mut recorder = match &self.record {
            Some(path) => Some(Recorder::create(path, &self.cfg, conn.is_bus()).map_err(
                |source| Error::Recording {
                    path: path.clone(),
                    source,
                },
            )?),
            None => None,
        };
        // The runtime the connection's reader already runs on (zbus 6's own): the calls'
        // deadlines are timers on its reactor.
        let runtime = zruntime::SharedRuntime::current().map_err(zbus::Error::from)?;
        let mut core = Core::new(self.cfg, conn.is_bus());
        if let Some(r) = &mut recorder {
            r.start();
        }
        core.start();
        let mut cache = ObjectCache {
            conn: conn.clone(),
            stream,
            core,
            closed: false,
            recorder,
            sending: std::sync::Mutex::new(None),
            runtime,
            timer: None,
            timer_at: None,
        };
        cache.flush().await?;
        Ok(cache)
    }

    /// [`CacheBuilder::build`], then wait until the first load is complete.
    pub async fn build_loaded(self, conn: &Connection) -> Result<ObjectCache> {
        let mut cache = self.build(conn).await?;
        cache.load().await?;
        Ok(cache)
    }
}

/// A consistent cache of one service's objects.
///
/// It never spawns a task and never calls back: all work happens inside
/// [`ObjectCache::next_event`] (and [`ObjectCache::load`]), on the caller's task and executor.
/// Between two calls, the cache does not change.
///
/// The connection's socket is read by zbus's own reader task, which only queues raw messages.
/// With zbus 6's default runtime (zruntime, the `default-rt` feature, and no `tokio` feature as
/// in this workspace) that task runs on the thread inside `zbus::block_on`, or on zruntime's
/// helper thread when the connection is used from another executor (Tokio, async-io/smol):
/// either way no cache code runs there. The cache reads the connection's single, ordered message
/// queue (`MessageStream::from(&conn)`, raised to 65536 queued messages so that a pipelined
/// load does not stall the reader), which keeps signals and method replies in the order they
/// arrived: the rule for signals that arrive before a load's reply depends on it. A connection
/// shared with other users works; every message on it passes through the cache's queue.
pub struct ObjectCache {
    conn: Connection,
    stream: MessageStream,
    core: Core,
    closed: bool,
    recorder: Option<Recorder>,
    /// The calls being sent (see [`ObjectCache::poll_flush`]). In a mutex only so that the
    /// cache stays `Sync`; it is only ever reached through `&mut self` (`get_mut`, no locking).
    sending: std::sync::Mutex<Option<SendFuture>>,
    /// zbus's runtime, whose reactor drives the timers (see [`timer_at`]).
    runtime: zruntime::SharedRuntime,
    /// The timer of the earliest call's deadline, and the deadline it is set to.
    timer: Option<zruntime::Sleep<zruntime::Shared>>,
    timer_at: Option<Instant>,
}

/// A send of queued calls, kept by the cache until it completes.
type SendFuture = Pin<Box<dyn Future<Output = zbus::Result<()>> + Send>>;

/// The cache is a stream of its events (as [`ObjectCache::next_event`], and as cancel-safe):
/// it ends when the connection closes.
impl futures_core::Stream for ObjectCache {
    type Item = Event;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = self.get_mut();
        this.poll_event(cx, std::pin::pin!(std::future::pending::<()>()))
            .map(|r| r.unwrap_or(None))
    }
}

impl std::fmt::Debug for ObjectCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectCache")
            .field("objects", &self.len())
            .field("owner", &self.core.owner())
            .finish_non_exhaustive()
    }
}

impl ObjectCache {
    /// Start building a cache of `service`.
    pub fn builder(service: impl Into<String>) -> CacheBuilder {
        CacheBuilder::new(service)
    }

    /// Sends the queued calls. The sending is kept in the cache until it completes: a caller
    /// that stops polling (a dropped future) leaves it there, and the next poll resumes it, so
    /// no call is lost, none is sent twice, and no message is cut in half.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        // Never locked, so never poisoned: `get_mut` only proves the exclusive access.
        let Ok(sending) = self.sending.get_mut() else {
            return Poll::Ready(Err(Error::Closed));
        };
        loop {
            if let Some(fut) = sending.as_mut() {
                let result = ready!(fut.as_mut().poll(cx));
                *sending = None;
                result?;
            }
            if self.core.out.is_empty() {
                return Poll::Ready(Ok(()));
            }
            let out = std::mem::take(&mut self.core.out);
            if let Some(r) = &mut self.recorder {
                r.calls(&out);
            }
            let conn = self.conn.clone();
            *sending = Some(Box::pin(async move { conn.send_all(&out).await }));
        }
    }

    async fn flush(&mut self) -> Result<()> {
        std::future::poll_fn(|cx| self.poll_flush(cx)).await
    }

    /// Arms the timer for the earliest call's deadline; whether it expired.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> bool {
        let deadline = self.core.next_deadline();
        if deadline != self.timer_at {
            match (deadline, &mut self.timer) {
                (Some(at), Some(timer)) => timer.reset(at),
                (Some(at), None) => self.timer = Some(self.runtime.sleep_until(at)),
                (None, _) => self.timer = None,
            }
            self.timer_at = deadline;
        }
        let Some(timer) = &mut self.timer else {
            return false;
        };
        if Pin::new(timer).poll(cx).is_ready() {
            // Re-armed on the next poll, for the next deadline.
            self.timer_at = None;
            return true;
        }
        false
    }

    /// One step of the cache, or the output of `interrupt`: send what is queued; then handle
    /// one batch (a message, and every message already queued behind it, bounded), or expire
    /// the calls whose deadline passed. `interrupt` wins only when no message is waiting.
    ///
    /// Everything lives in the cache between polls (the stream, the timer, the sending), so
    /// stopping at any `Pending` loses nothing: this is what makes the public futures cancel-safe.
    fn poll_step<F: Future>(
        &mut self,
        cx: &mut Context<'_>,
        mut interrupt: Pin<&mut F>,
    ) -> Poll<Result<Option<F::Output>>> {
        if let Poll::Ready(Err(e)) = self.poll_flush(cx) {
            return Poll::Ready(Err(e));
        }
        match self.stream.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(first))) => {
                if let Some(r) = &mut self.recorder {
                    r.begin_batch();
                }
                self.core.begin_batch();
                let mut flush_now = self.handle(&first);
                drop(first);
                let mut n = 1;
                while !flush_now && n < MAX_BATCH {
                    match self.stream.poll_next_unpin(cx) {
                        Poll::Ready(Some(Ok(m))) => {
                            flush_now = self.handle(&m);
                            n += 1;
                        }
                        // An error or the end: the next step reports it.
                        _ => break,
                    }
                }
                self.commit();
                if let Poll::Ready(Err(e)) = self.poll_flush(cx) {
                    return Poll::Ready(Err(e));
                }
                return Poll::Ready(Ok(None));
            }
            Poll::Ready(Some(Err(e))) => {
                self.closed = true;
                return Poll::Ready(Err(e.into()));
            }
            Poll::Ready(None) => {
                self.closed = true;
                return Poll::Ready(Err(Error::Closed));
            }
            Poll::Pending => {}
        }
        if let Poll::Ready(out) = interrupt.as_mut().poll(cx) {
            return Poll::Ready(Ok(Some(out)));
        }
        if self.poll_deadline(cx) {
            if let Some(r) = &mut self.recorder {
                r.before_expire(&self.core);
            }
            self.core.expire(Instant::now());
            if let Some(r) = &mut self.recorder {
                r.after_expire(&self.core);
            }
            self.commit();
            if let Poll::Ready(Err(e)) = self.poll_flush(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(None));
        }
        Poll::Pending
    }

    /// Handle one batch (see [`Self::poll_step`]).
    async fn step(&mut self) -> Result<()> {
        self.step_or(std::future::pending::<()>()).await.map(|_| ())
    }

    /// [`Self::step`], unless `interrupt` completes first while waiting for a message.
    pub(crate) async fn step_or<F: Future>(&mut self, interrupt: F) -> Result<Option<F::Output>> {
        futures_util::pin_mut!(interrupt);
        std::future::poll_fn(|cx| self.poll_step(cx, interrupt.as_mut())).await
    }

    fn handle(&mut self, msg: &zbus::Message) -> bool {
        if let Some(r) = &mut self.recorder {
            r.message(msg);
        }
        self.core.handle(msg)
    }

    fn commit(&mut self) {
        if let Some(r) = &mut self.recorder {
            r.commit();
        }
        self.core.commit();
        if let Some(r) = &mut self.recorder {
            r.prune(&self.core);
        }
    }

    /// The next queued event: every event handed out passes here (a recording notes when).
    fn pop_event(&mut self) -> Option<Event> {
        if let Some(r) = &mut self.recorder {
            r.pop();
        }
        self.core.pop_event()
    }

    /// Ends the recording asked for with [`CacheBuilder::record_to`]: writes what is buffered,
    /// and returns the first error met while recording, if any (recording stopped there; the
    /// file is then incomplete, and a replay says so). Without a recording, does nothing. The
    /// cache goes on without recording.
    pub fn finish_recording(&mut self) -> std::io::Result<()> {
        match self.recorder.take() {
            Some(mut r) => r.finish(),
            None => Ok(()),
        }
    }

    /// The next event (or `Poll::Ready(None)` once the connection closed), or the output of
    /// `interrupt` while the cache waits for the bus.
    fn poll_event<F: Future>(
        &mut self,
        cx: &mut Context<'_>,
        mut interrupt: Pin<&mut F>,
    ) -> Poll<std::result::Result<Option<Event>, F::Output>> {
        loop {
            if let Some(ev) = self.pop_event() {
                return Poll::Ready(Ok(Some(ev)));
            }
            if self.closed {
                return Poll::Ready(Ok(None));
            }
            match ready!(self.poll_step(cx, interrupt.as_mut())) {
                Ok(Some(out)) => return Poll::Ready(Err(out)),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!("cache stream ended: {e}");
                    self.closed = true;
                }
            }
        }
    }

    /// The next event, or the output of `interrupt` if it completes while the cache waits for
    /// the bus.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`ObjectCache::next_event`].
    pub async fn next_event_or<F: Future>(
        &mut self,
        interrupt: F,
    ) -> std::result::Result<Option<Event>, F::Output> {
        futures_util::pin_mut!(interrupt);
        std::future::poll_fn(|cx| self.poll_event(cx, interrupt.as_mut())).await
    }

    /// The next event, handling messages as needed. Returns `None` once the connection closed.
    /// The cache is also a [`Stream`](futures_core::Stream) of the same events.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future before it completes (in a `select!` against a timer,
    /// say) loses nothing. Every message taken from the connection is applied and its events
    /// queued before the future can stop, and the calls the cache sends are sent by a sending
    /// kept in the cache, which the next poll resumes: the next call to `next_event` picks up
    /// exactly where this one stopped.
    pub async fn next_event(&mut self) -> Option<Event> {
        std::future::poll_fn(|cx| {
            self.poll_event(cx, std::pin::pin!(std::future::pending::<()>()))
                .map(|r| r.unwrap_or(None))
        })
        .await
    }

    /// The next event, or `None` if nothing happens within `timeout` (or the connection
    /// closed). The timer is on zbus's own runtime (zruntime, the reactor the connection runs
    /// on), so this works on any executor. Cancel-safe, as [`ObjectCache::next_event`].
    pub async fn next_event_timeout(&mut self, timeout: Duration) -> Option<Event> {
        self.next_event_deadline(Instant::now() + timeout).await
    }

    /// The next event, or `None` if nothing happens by `deadline` (or the connection closed):
    /// for a caller with one deadline for several waits. Cancel-safe, as
    /// [`ObjectCache::next_event`].
    pub async fn next_event_deadline(&mut self, deadline: Instant) -> Option<Event> {
        self.next_event_or(self.runtime.sleep_until(deadline))
            .await
            .ok()
            .flatten()
    }

    /// Handle messages until `fut` (typically a method call on [`Self::connection`]) completes,
    /// then every message already received: what the service sent before its reply is in the
    /// cache when this returns. Events stay queued. The cache's stream must be polled while a
    /// call on its connection waits (the connection's reader stops when a stream is full), which
    /// is what this does.
    pub async fn drive<F: std::future::Future>(&mut self, fut: F) -> Result<F::Output> {
        futures_util::pin_mut!(fut);
        let out = loop {
            if self.closed {
                return Err(Error::Closed);
            }
            if let Some(out) = self.step_or(fut.as_mut()).await? {
                break out;
            }
        };
        while !self.closed {
            if self.step_or(std::future::ready(())).await?.is_some() {
                break;
            }
        }
        Ok(out)
    }

    /// Handle messages until `pred` holds for the cache (checked now and after each batch) or
    /// `timeout` passes; whether it holds. Events stay queued.
    pub async fn wait_until(
        &mut self,
        mut pred: impl FnMut(&Self) -> bool,
        timeout: Duration,
    ) -> Result<bool> {
        let timer = self.runtime.sleep(timeout);
        futures_util::pin_mut!(timer);
        loop {
            if pred(self) {
                return Ok(true);
            }
            if self.closed {
                return Err(Error::Closed);
            }
            if self.step_or(timer.as_mut()).await?.is_some() {
                return Ok(pred(self));
            }
        }
    }

    /// The events queued and not yet taken, oldest first (their number is
    /// [`queued_events`](Self::queued_events)).
    pub fn pending_events(&self) -> impl Iterator<Item = &Event> {
        self.core.queued_iter()
    }

    /// Handle messages until the current (re)load is complete (events stay queued). Fails
    /// with [`Error::Call`] when a call the load needs fails (times out included).
    pub async fn load(&mut self) -> Result<()> {
        loop {
            if let Some(error) = self.core.failure.take() {
                return Err(error.into());
            }
            if self.core.is_loaded() && self.core.loaded_events > 0 {
                return Ok(());
            }
            if self.closed {
                return Err(Error::Closed);
            }
            self.step().await?;
        }
    }

    /// Take all queued events.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.pop_event()).collect()
    }

    /// Handle messages (applying them to the cache and queueing their events, see
    /// [`CacheBuilder::max_queued_events`]) until `until` completes, and return its output:
    /// how a consumer that is busy elsewhere (writing to a slow pipe, say) keeps the cache
    /// reading the bus meanwhile. Returns `None` if the connection closed first.
    pub async fn process_until<F: std::future::Future>(&mut self, until: F) -> Option<F::Output> {
        futures_util::pin_mut!(until);
        loop {
            if self.closed {
                return None;
            }
            match self.step_or(until.as_mut()).await {
                Ok(Some(out)) => return Some(out),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!("cache stream ended: {e}");
                    self.closed = true;
                }
            }
        }
    }

    /// The next queued event (or the resync after an overrun), without handling messages.
    pub(crate) fn pop_ready(&mut self) -> Option<Event> {
        self.pop_event()
    }

    /// Whether the connection closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Marks the connection closed (its stream ended with an error).
    pub(crate) fn set_closed(&mut self) {
        self.closed = true;
    }

    /// Load everything again and compare with the cache (the differences come as events,
    /// then [`Event::Reconciled`]): for a caller that suspects lost messages, or wants a
    /// periodic check. The cache also does it by itself when a signal names an object it does
    /// not know. Only for a complete load ([`Scope::All`]); returns whether one started.
    pub fn reconcile(&mut self) -> bool {
        let started = self.core.reconcile();
        if let Some(r) = &mut self.recorder {
            r.reconcile(started);
        }
        started
    }

    /// How many events wait in the queue.
    pub fn queued_events(&self) -> usize {
        self.core.queued()
    }

    /// Whether the last (re)load is complete.
    pub fn is_loaded(&self) -> bool {
        self.core.is_loaded()
    }

    /// The unique name of the service's current owner (empty on a peer-to-peer connection).
    pub fn owner(&self) -> Option<&str> {
        self.core.owner()
    }

    /// Counters and recent protocol warnings.
    pub fn diagnostics(&self) -> &Diagnostics {
        self.core.diagnostics()
    }

    /// How many interface and property names the cache holds interned (shared by every
    /// object): names nothing uses any more are freed as the set grows, so this stays within
    /// twice the names in use (plus 1024).
    pub fn interned_names(&self) -> usize {
        self.core.interned_names()
    }

    /// The connection the cache runs on.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// How many objects are visible.
    pub fn len(&self) -> usize {
        self.core.store.slots.iter().filter(|s| s.visible).count()
    }

    /// Whether no object is visible.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many objects are cached, visible or not (waiting on a reference or a fetch).
    pub fn len_all(&self) -> usize {
        self.core.store.len_present()
    }

    /// The visible object at `path`.
    pub fn object(&self, path: &str) -> Option<ObjectRef<'_>> {
        let id = self.core.store.id(path)?;
        self.get(id).filter(|o| o.is_visible())
    }

    /// The object at `path`, visible or not.
    pub fn object_any(&self, path: &str) -> Option<ObjectRef<'_>> {
        self.get(self.core.store.id(path)?)
    }

    fn get(&self, id: ObjId) -> Option<ObjectRef<'_>> {
        let slot = self.core.store.slot(id);
        slot.obj.as_ref().map(|object| ObjectRef {
            cache: self,
            id,
            object,
        })
    }

    /// Every visible object, in no particular order.
    pub fn objects(&self) -> impl Iterator<Item = ObjectRef<'_>> {
        self.core
            .store
            .present()
            .filter_map(|id| self.get(id))
            .filter(|o| o.is_visible())
    }

    /// Every visible object with interface `iface`.
    pub fn objects_with<'a>(&'a self, iface: &'a str) -> impl Iterator<Item = ObjectRef<'a>> + 'a {
        self.objects().filter(move |o| o.has_interface(iface))
    }
}

/// A cached object, borrowed from its cache: its data plus resolved references.
#[derive(Clone, Copy)]
pub struct ObjectRef<'a> {
    cache: &'a ObjectCache,
    id: ObjId,
    object: &'a Object,
}

impl std::fmt::Debug for ObjectRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectRef")
            .field("path", &self.path())
            .finish_non_exhaustive()
    }
}

impl<'a> std::ops::Deref for ObjectRef<'a> {
    type Target = Object;
    fn deref(&self) -> &Object {
        self.object
    }
}

impl<'a> ObjectRef<'a> {
    /// The object's path.
    pub fn path(&self) -> &'a str {
        &self.cache.core.store.slot(self.id).path
    }

    /// The object's path, shared.
    pub fn path_arc(&self) -> Arc<str> {
        self.cache.core.store.slot(self.id).path.clone()
    }

    /// The object's data.
    pub fn object(&self) -> &'a Object {
        self.object
    }

    /// Whether the object is visible (ready: all it references is cached).
    pub fn is_visible(&self) -> bool {
        self.cache.core.store.slot(self.id).visible
    }

    /// Property `prop` of interface `iface`, with the lifetime of the cache.
    pub fn prop(&self, iface: &str, prop: &str) -> Option<&'a Value> {
        self.object.get(iface, prop)
    }

    /// A declared property by its generated key (`netmirror_dbus_meta::nm::device::STATE`),
    /// typed as declared: `None` when the service has not sent it or sent another type.
    pub fn get<T: DeclaredType + ?Sized>(&self, key: PropertyKey<T>) -> Option<T::View<'a>> {
        T::view(self.prop(key.property().interface(), key.name())?)
    }

    /// The object referenced by the `o` property `key` (`None` for `/` or when missing).
    pub fn target_of(&self, key: PropertyKey<OwnedObjectPath>) -> Option<ObjectRef<'a>> {
        self.cache.object_any(self.get(key)?)
    }

    /// The objects referenced by the `ao` property `key`, in order, skipping missing ones.
    pub fn targets_of(
        &self,
        key: PropertyKey<Vec<OwnedObjectPath>>,
    ) -> impl Iterator<Item = ObjectRef<'a>> + 'a {
        let cache = self.cache;
        let paths: &'a [Box<str>] = self.get(key).unwrap_or(&[]);
        paths.iter().filter_map(move |p| cache.object_any(p))
    }

    /// The object referenced by `o` property `iface.prop` (`None` for `/` or when missing).
    pub fn target(&self, iface: &str, prop: &str) -> Option<ObjectRef<'a>> {
        match self.prop(iface, prop)? {
            Value::Path(p) => self.cache.object_any(p),
            _ => None,
        }
    }

    /// The objects referenced by `ao` property `iface.prop`, in order, skipping missing ones.
    pub fn targets(&self, iface: &str, prop: &str) -> impl Iterator<Item = ObjectRef<'a>> + 'a {
        let cache = self.cache;
        let paths: &'a [Box<str>] = match self.prop(iface, prop) {
            Some(Value::Paths(ps)) => ps,
            _ => &[],
        };
        paths.iter().filter_map(move |p| cache.object_any(p))
    }

    /// The objects that reference this one (through any declared reference property).
    pub fn referrers(&self) -> impl Iterator<Item = ObjectRef<'a>> + 'a {
        let cache = self.cache;
        cache
            .core
            .store
            .slot(self.id)
            .refs_in
            .ids()
            .filter_map(move |id| cache.get(id))
    }
}

/// A timer due at `deadline`, on zbus 6's own runtime (zruntime): the reactor the connection's
/// reader already runs on, driven by the thread inside `zbus::block_on`, or by zruntime's helper
/// thread when the caller runs another executor (Tokio, smol). So a timeout costs no second
/// reactor and no thread of its own, on any executor. Fails only where no runtime is alive and
/// a new one cannot open its reactor.
pub(crate) fn timer_at(deadline: Instant) -> Result<zruntime::Sleep<zruntime::Shared>> {
    let runtime = zruntime::SharedRuntime::current().map_err(zbus::Error::from)?;
    Ok(runtime.sleep_until(deadline))
}
