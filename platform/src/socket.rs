//! The netlink socket: receive buffers sized from each datagram (peek, then read), a large
//! receive buffer, extended acks, sender checks, and dumps with `NLM_F_DUMP_INTR` detection.

use std::collections::VecDeque;
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use crate::error::{Error, Result};
use crate::wire::{self, Msg, Msgs};

/// The smallest buffer a read is made with. The kernel sizes the skbs of a dump after the
/// largest buffer we ever passed to `recvmsg` (up to 32 KiB), so reading with 32 KiB gives
/// dumps in few, large datagrams.
const MIN_READ: usize = 32 * 1024;

/// What asking for a socket receive buffer achieved ([`Cache::rcvbuf`], [`Platform::rcvbuf`]).
///
/// [`Cache::rcvbuf`]: crate::Cache::rcvbuf
/// [`Platform::rcvbuf`]: crate::Platform::rcvbuf
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcvbufOutcome {
    /// The size asked for.
    pub requested: usize,
    /// The size the kernel reports (it doubles the value for bookkeeping).
    pub effective: usize,
    /// True when `SO_RCVBUFFORCE` worked (needs `CAP_NET_ADMIN`); false when it fell back to
    /// `SO_RCVBUF`, which `net.core.rmem_max` caps.
    pub forced: bool,
}

/// Result of one dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DumpOutcome {
    /// Some message carried `NLM_F_DUMP_INTR`: the dump may be inconsistent.
    pub(crate) interrupted: bool,
    /// The kernel applied the request's filter (`NLM_F_DUMP_FILTERED`).
    pub(crate) filtered: bool,
    /// Number of objects the dump returned.
    pub(crate) n_objects: usize,
}

/// A `NETLINK_ROUTE` socket with its receive buffer.
#[derive(Debug)]
pub(crate) struct NlSocket {
    sock: Socket,
    buf: Vec<u8>,
    port: u32,
    seq: u32,
    /// Number of datagrams dropped because they did not come from the kernel.
    pub(crate) n_foreign: u64,
}

impl NlSocket {
    /// Opens and binds a socket in the calling thread's namespace, with extended acks on.
    pub(crate) fn open() -> Result<Self> {
        let mut sock = Socket::new(NETLINK_ROUTE).map_err(|e| Error::socket("open", e))?;
        let addr = sock.bind_auto().map_err(|e| Error::socket("bind", e))?;
        if let Err(err) = sock.set_ext_ack(true) {
            tracing::debug!(%err, "extended acks not supported");
        }
        // Errors need not echo the whole request: the extended ack says what was wrong.
        if let Err(err) = sock.set_cap_ack(true) {
            tracing::debug!(%err, "NETLINK_CAP_ACK not supported");
        }
        Ok(NlSocket {
            sock,
            buf: Vec::with_capacity(MIN_READ),
            port: addr.port_number(),
            seq: 0,
            n_foreign: 0,
        })
    }

    /// The socket's netlink port id (its address).
    pub(crate) fn port(&self) -> u32 {
        self.port
    }

    pub(crate) fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1).max(1);
        self.seq
    }

    /// Moves the sequence counter past `n` numbers used by a batch.
    pub(crate) fn skip_seq(&mut self, n: u32) {
        self.seq = self.seq.wrapping_add(n);
    }

    /// Asks for a receive buffer of `bytes`: `SO_RCVBUFFORCE` first, `SO_RCVBUF` (capped by
    /// `net.core.rmem_max`) when that is not permitted.
    pub(crate) fn set_rcvbuf(&self, bytes: usize) -> RcvbufOutcome {
        let forced =
            rustix::net::sockopt::set_socket_recv_buffer_size_force(&self.sock, bytes).is_ok();
        if !forced
            && let Err(err) = rustix::net::sockopt::set_socket_recv_buffer_size(&self.sock, bytes)
        {
            tracing::warn!(%err, bytes, "cannot set the socket receive buffer");
        }
        let effective = rustix::net::sockopt::socket_recv_buffer_size(&self.sock).unwrap_or(0);
        if !forced {
            tracing::debug!(
                requested = bytes,
                effective,
                "SO_RCVBUFFORCE refused, receive buffer capped by net.core.rmem_max"
            );
        }
        RcvbufOutcome {
            requested: bytes,
            effective,
            forced,
        }
    }

    pub(crate) fn set_strict_check(&self, on: bool) -> bool {
        match self.sock.set_netlink_get_strict_chk(on) {
            Ok(()) => true,
            Err(err) => {
                tracing::debug!(%err, "NETLINK_GET_STRICT_CHK not supported");
                false
            }
        }
    }

    pub(crate) fn add_membership(&self, group: u32) -> Result<()> {
        self.sock
            .add_membership(group)
            .map_err(|e| Error::socket("add_membership", e))
    }

    pub(crate) fn set_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        rustix::net::sockopt::set_socket_timeout(
            &self.sock,
            rustix::net::sockopt::Timeout::Recv,
            timeout,
        )
        .map_err(|e| Error::socket("setsockopt", e.into()))
    }

    /// Sends one buffer of one or more requests to the kernel.
    pub(crate) fn send(&self, buf: &[u8]) -> Result<()> {
        let kernel = SocketAddr::new(0, 0);
        let sent = self
            .sock
            .send_to(buf, &kernel, 0)
            .map_err(|e| Error::socket("send", e))?;
        if sent != buf.len() {
            return Err(Error::socket(
                "send",
                io::Error::other(format!("short send: {sent} of {} bytes", buf.len())),
            ));
        }
        Ok(())
    }

    /// Receives the next datagram from the kernel. Datagrams from any other sender are
    /// dropped (and traced). `Ok(None)` means nothing arrived: the socket would block
    /// (`nonblocking`) or its receive timeout expired.
    pub(crate) fn recv(&mut self, nonblocking: bool) -> Result<Option<&[u8]>> {
        let dontwait = if nonblocking { libc::MSG_DONTWAIT } else { 0 };
        loop {
            // Peek to learn the datagram's full size (MSG_TRUNC) and its sender.
            let mut scratch = [0u8; wire::NLMSG_HDRLEN];
            let peeked = self.sock.recv_from(
                &mut &mut scratch[..],
                libc::MSG_PEEK | libc::MSG_TRUNC | dontwait,
            );
            let (len, from) = match peeked {
                Ok(it) => it,
                // A signal interrupted the wait: wait again.
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return recv_error(err),
            };
            if from.port_number() != 0 {
                // Consume it without reading it: only the kernel may speak.
                let _ = self.sock.recv_from(&mut &mut scratch[..], libc::MSG_TRUNC);
                self.n_foreign += 1;
                tracing::warn!(
                    sender_port = from.port_number(),
                    len,
                    "dropped a netlink message not sent by the kernel"
                );
                continue;
            }
            self.buf.clear();
            self.buf.reserve(len.max(MIN_READ));
            let (read, from) = match self.sock.recv_from(&mut self.buf, dontwait) {
                Ok(it) => it,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return recv_error(err),
            };
            if from.port_number() != 0 {
                self.n_foreign += 1;
                tracing::warn!(
                    sender_port = from.port_number(),
                    "dropped a foreign message"
                );
                continue;
            }
            if read > self.buf.len() {
                return Err(Error::malformed(format!(
                    "datagram of {read} bytes truncated to {}",
                    self.buf.len()
                )));
            }
            return Ok(Some(&self.buf[..read]));
        }
    }

    /// Sends the dump request in `request` (whose sequence number is `seq`) and calls
    /// `on_msg` for each object message of the answer. A failing `on_msg` does not stop the
    /// reading: the dump is drained to its end so no stale answer stays queued, then the
    /// first error is returned.
    pub(crate) fn dump(
        &mut self,
        request: &[u8],
        seq: u32,
        mut on_msg: impl FnMut(&Msg<'_>) -> Result<()>,
    ) -> Result<DumpOutcome> {
        self.send(request)?;
        let port = self.port;
        let mut outcome = DumpOutcome::default();
        let mut first_err: Option<Error> = None;
        loop {
            let Some(datagram) = self.recv(false)? else {
                return Err(Error::Timeout);
            };
            for msg in Msgs::new(datagram) {
                let msg = msg?;
                if msg.seq != seq || (msg.port != port && msg.port != 0) {
                    tracing::trace!(seq = msg.seq, "skipping a stale message");
                    continue;
                }
                if msg.flags & wire::NLM_F_DUMP_INTR != 0 {
                    outcome.interrupted = true;
                }
                if msg.flags & wire::NLM_F_DUMP_FILTERED != 0 {
                    outcome.filtered = true;
                }
                match msg.kind {
                    wire::NLMSG_DONE => {
                        return match first_err {
                            Some(err) => Err(err),
                            None => Ok(outcome),
                        };
                    }
                    wire::NLMSG_ERROR => {
                        if let Some(err) = wire::parse_error(&msg)? {
                            return Err(Error::Kernel(err));
                        }
                    }
                    wire::NLMSG_NOOP => {}
                    wire::NLMSG_OVERRUN => return Err(Error::Overrun),
                    _ => {
                        outcome.n_objects += 1;
                        if let Err(err) = on_msg(&msg) {
                            first_err.get_or_insert(err);
                        }
                    }
                }
            }
        }
    }
}

/// How many parsed objects the receiving thread of [`NlSocket::dump_parallel`] hands over at
/// once: about one datagram of IPv4 routes.
const CHUNK_LEN: usize = 512;

/// How many chunks may wait between the receiving thread and the consumer. With the chunk
/// being filled and the one being consumed, at most `CHUNKS_IN_FLIGHT + 2` chunks exist: the
/// memory between socket and consumer stays bounded whatever the consumer's pace (16 chunks
/// of IPv4 routes are about 330 KB).
const CHUNKS_IN_FLIGHT: usize = 16;

/// A thread that had to wait is woken only once half the queue is free (the receiver) or
/// filled (the consumer), not at every chunk: each wake-up is a futex call and, on a busy
/// machine, a wait for a processor.
const WAKE_AT: usize = CHUNKS_IN_FLIGHT / 2;

/// What the receiving thread of [`NlSocket::dump_parallel`] hands to the consumer.
enum Handed<T> {
    /// Parsed objects, in kernel order.
    Objs(Vec<T>),
    /// A message that could not be parsed (the consumer traces and counts it).
    Malformed(Error),
}

/// The bounded queue between the two threads of a dump, with emptied vectors coming back.
struct Handoff<T> {
    state: Mutex<HandoffState<T>>,
    /// Signalled when the queue has room again (or the consumer left).
    room: Condvar,
    /// Signalled when the queue has chunks again (or the receiver finished).
    ready: Condvar,
}

struct HandoffState<T> {
    queue: VecDeque<Handed<T>>,
    /// Emptied vectors for the receiver to fill again.
    spare: Vec<Vec<T>>,
    receiver_waits: bool,
    consumer_waits: bool,
    /// The receiver is done: nothing more will come.
    done: bool,
    /// The consumer is gone (it panicked): nothing is taken any more.
    gone: bool,
}

impl<T> Handoff<T> {
    fn new() -> Self {
        Handoff {
            state: Mutex::new(HandoffState {
                queue: VecDeque::with_capacity(CHUNKS_IN_FLIGHT + 1),
                spare: Vec::new(),
                receiver_waits: false,
                consumer_waits: false,
                done: false,
                gone: false,
            }),
            room: Condvar::new(),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HandoffState<T>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `item`, waiting while the queue is full. False when the consumer is gone.
    fn push(&self, item: Handed<T>) -> bool {
        let mut state = self.lock();
        while state.queue.len() >= CHUNKS_IN_FLIGHT && !state.gone {
            state.receiver_waits = true;
            state = self
                .room
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        if state.gone {
            return false;
        }
        state.queue.push_back(item);
        if state.consumer_waits && state.queue.len() >= WAKE_AT {
            state.consumer_waits = false;
            self.ready.notify_one();
        }
        true
    }

    /// An emptied vector to fill, or a new one.
    fn spare(&self) -> Vec<T> {
        self.lock()
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_LEN))
    }

    /// The next item, waiting while the queue is empty; `None` once the receiver is done and
    /// everything was taken. `emptied` (a consumed vector) is kept for reuse.
    fn pop(&self, emptied: Option<Vec<T>>) -> Option<Handed<T>> {
        let mut state = self.lock();
        if let Some(emptied) = emptied
            && state.spare.len() < 2
        {
            state.spare.push(emptied);
        }
        loop {
            if let Some(item) = state.queue.pop_front() {
                if state.receiver_waits && state.queue.len() <= WAKE_AT {
                    state.receiver_waits = false;
                    self.room.notify_one();
                }
                return Some(item);
            }
            if state.done {
                return None;
            }
            state.consumer_waits = true;
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// The receiver is done (also when it failed or panicked): wake the consumer.
    fn finish(&self) {
        self.lock().done = true;
        self.ready.notify_one();
    }

    /// The consumer is gone: wake the receiver, which drains the dump without queuing.
    fn leave(&self) {
        self.lock().gone = true;
        self.room.notify_one();
    }
}

/// Calls `f` when dropped, also while unwinding.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

impl NlSocket {
    /// Like [`NlSocket::dump`], on two threads: a scoped receiving thread receives the
    /// datagrams (the kernel builds each one inside that `recvmsg`) and parses their messages
    /// with `parse`, while the calling thread hands the parsed objects to `sink` in chunks, in
    /// kernel order. The kernel's work and the consumer's overlap on two cores.
    ///
    /// The threads meet through a bounded queue of chunks whose vectors come back for reuse,
    /// so memory stays bounded. Messages `parse` refuses go to `on_malformed` (on the calling
    /// thread); they do not stop the dump. Receive semantics are those of
    /// [`NlSocket::recv`]: sizes peeked, foreign senders dropped.
    pub(crate) fn dump_parallel<T: Send>(
        &mut self,
        request: &[u8],
        seq: u32,
        parse: &(dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
        sink: &mut dyn FnMut(&mut Vec<T>),
        on_malformed: &mut dyn FnMut(Error),
    ) -> Result<DumpOutcome> {
        let handoff = Handoff::new();
        let handoff = &handoff;
        std::thread::scope(|scope| {
            let receiver = std::thread::Builder::new()
                .name("netmirror-dump".into())
                .spawn_scoped(scope, move || {
                    let _finish = OnDrop(|| handoff.finish());
                    let mut chunk: Vec<T> = Vec::with_capacity(CHUNK_LEN);
                    let outcome = self.dump(request, seq, |msg| {
                        match parse(msg.payload) {
                            Ok(Some(obj)) => chunk.push(obj),
                            Ok(None) => {}
                            // A gone consumer only means nobody counts it.
                            Err(err) => drop(handoff.push(Handed::Malformed(err))),
                        }
                        if chunk.len() >= CHUNK_LEN {
                            let full = std::mem::replace(&mut chunk, handoff.spare());
                            if !handoff.push(Handed::Objs(full)) {
                                return Err(Error::socket(
                                    "dump",
                                    io::Error::other("the dump's consumer is gone"),
                                ));
                            }
                        }
                        Ok(())
                    });
                    if !chunk.is_empty() {
                        handoff.push(Handed::Objs(chunk));
                    }
                    outcome
                })
                .map_err(|e| Error::socket("spawn the dump's receiving thread", e))?;
            {
                let _leave = OnDrop(|| handoff.leave());
                let mut emptied = None;
                while let Some(handed) = handoff.pop(emptied.take()) {
                    match handed {
                        Handed::Objs(mut objs) => {
                            sink(&mut objs);
                            objs.clear();
                            emptied = Some(objs);
                        }
                        Handed::Malformed(err) => on_malformed(err),
                    }
                }
            }
            receiver.join().unwrap_or_else(|_| {
                Err(Error::socket(
                    "dump",
                    io::Error::other("the dump's receiving thread panicked"),
                ))
            })
        })
    }
}

impl NlSocket {
    /// Sends a single request carrying `NLM_F_ACK` and reads its answer up to the ack.
    pub(crate) fn request(
        &mut self,
        request: &[u8],
        seq: u32,
        mut on_msg: impl FnMut(&Msg<'_>) -> Result<()>,
    ) -> Result<()> {
        self.send(request)?;
        let port = self.port;
        loop {
            let Some(datagram) = self.recv(false)? else {
                return Err(Error::Timeout);
            };
            for msg in Msgs::new(datagram) {
                let msg = msg?;
                if msg.seq != seq || (msg.port != port && msg.port != 0) {
                    continue;
                }
                match msg.kind {
                    wire::NLMSG_ERROR => {
                        return match wire::parse_error(&msg)? {
                            Some(err) => Err(Error::Kernel(err)),
                            None => Ok(()),
                        };
                    }
                    wire::NLMSG_DONE | wire::NLMSG_NOOP => {}
                    _ => on_msg(&msg)?,
                }
            }
        }
    }
}

impl std::os::fd::AsFd for NlSocket {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

fn recv_error<T>(err: io::Error) -> Result<Option<T>> {
    match err.raw_os_error() {
        Some(libc::EAGAIN) => Ok(None),
        Some(libc::ENOBUFS) => Err(Error::Overrun),
        _ => Err(Error::socket("recv", err)),
    }
}
