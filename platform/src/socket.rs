//! The netlink socket: receive buffers sized from each datagram (peek, then read), a large
//! receive buffer, extended acks, sender checks, and dumps with `NLM_F_DUMP_INTR` detection.

use std::collections::VecDeque;
use std::io::{self, IoSliceMut};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, mpsc};
use std::time::{Duration, Instant};

use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
use nix::errno::Errno;
use nix::sys::socket::{MsgFlags, MultiHeaders, NetlinkAddr, recvmmsg};

use crate::error::{Error, Result};
use crate::platform::Chunk;
use crate::wire::{self, Msg, Msgs};

#[cfg(test)]
mod dump_tests;
#[cfg(test)]
mod tests;

/// The smallest buffer a read is made with. The kernel sizes the skbs of a dump after the
/// largest buffer we ever passed to `recvmsg` (up to 32 KiB), so reading with 32 KiB gives
/// dumps in few, large datagrams.
const MIN_READ: usize = 32 * 1024;

/// What asking for a socket receive buffer achieved ([`Cache::rcvbuf`], [`Platform::rcvbuf`]).
///
/// [`Cache::rcvbuf`]: crate::Cache::rcvbuf
/// [`Platform::rcvbuf`]: crate::Platform::rcvbuf
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

/// The smallest buffer an event datagram is read with ([`NlSocket::recv_event`]): 64 KiB,
/// of which a read touches only what the datagram fills.
const EVENT_READ: usize = 64 * 1024;

/// How many event datagrams one `recvmmsg` reads at most ([`NlSocket::recv_event`]): a
/// burst's events cost a system call per 32 instead of one each.
const EVENT_BATCH: usize = 32;

/// Event datagrams read together by one `recvmmsg`, handed out one at a time.
#[derive(Debug, Default)]
struct EventBatch {
    /// [`EVENT_BATCH`] buffers of the same size, end to end (zeroed once, in pages the
    /// system maps as the datagrams fill them).
    bufs: Vec<u8>,
    /// Each datagram read: its full length (read with `MSG_TRUNC`) and its sender's port.
    got: Vec<(usize, u32)>,
    /// How many of `got` were handed out.
    next: usize,
}

/// What [`NlSocket::recv_event`] received.
#[derive(Debug)]
pub(crate) enum Received<'a> {
    /// A whole datagram from the kernel.
    Datagram(&'a [u8]),
    /// Nothing: the socket would block, or its receive timeout expired.
    Nothing,
    /// A datagram of `len` bytes, longer than the buffer: cut, its rest lost.
    Truncated {
        /// The datagram's full length.
        len: usize,
    },
}

/// A `NETLINK_ROUTE` socket with its receive buffer.
#[derive(Debug)]
pub(crate) struct NlSocket {
    sock: Socket,
    buf: Vec<u8>,
    /// The buffer size [`NlSocket::recv_event`] reads with.
    event_read: usize,
    /// Event datagrams read and not yet handed out ([`NlSocket::recv_event`]).
    events: EventBatch,
    /// The receive timeout last set ([`NlSocket::set_timeout`]), if one was.
    timeout: Option<Option<Duration>>,
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
            event_read: EVENT_READ,
            events: EventBatch::default(),
            timeout: None,
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

    /// Sets the receive timeout (`SO_RCVTIMEO`; `None`: none), unless it is set already.
    pub(crate) fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        if self.timeout == Some(timeout) {
            return Ok(());
        }
        rustix::net::sockopt::set_socket_timeout(
            &self.sock,
            rustix::net::sockopt::Timeout::Recv,
            timeout,
        )
        .map_err(|e| Error::socket("setsockopt", e.into()))?;
        self.timeout = Some(timeout);
        Ok(())
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
                drop_foreign(&mut self.n_foreign, from.port_number(), len);
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
                drop_foreign(&mut self.n_foreign, from.port_number(), read);
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

    /// The next event datagram (multicast notification) from the kernel: read with up to
    /// [`EVENT_BATCH`] − 1 that follow it in one `recvmmsg` (which waits, unless
    /// `nonblocking`, for the first only), the others handed out by the next calls before
    /// the socket is read again (they leave the socket's queue in the same order, held
    /// here instead of there). Each buffer has at least [`EVENT_READ`] bytes, far above
    /// what a notification takes (the largest, a link's or a many-hop route's, are a few
    /// KiB: the kernel sizes them for the object alone), and reads with `MSG_TRUNC` so that
    /// a longer one is still told by its length. Such a datagram was cut and its rest is
    /// lost: [`Received::Truncated`] says so (the caller resyncs) and the buffers grow to
    /// hold the next one of that size. Datagrams from any other sender are dropped (and
    /// traced), as `recv` drops them.
    pub(crate) fn recv_event(&mut self, nonblocking: bool) -> Result<Received<'_>> {
        loop {
            if self.events.next == self.events.got.len() && !self.read_events(nonblocking)? {
                return Ok(Received::Nothing);
            }
            let at = self.events.next;
            self.events.next += 1;
            let (len, port) = self.events.got[at];
            if port != 0 {
                drop_foreign(&mut self.n_foreign, port, len);
                continue;
            }
            let size = self.events.bufs.len() / EVENT_BATCH;
            if len > size {
                self.event_read = len.next_power_of_two();
                return Ok(Received::Truncated { len });
            }
            let start = at * size;
            return Ok(Received::Datagram(&self.events.bufs[start..start + len]));
        }
    }

    /// Whether an event waits for [`NlSocket::recv_event`], read already or still in the
    /// socket (a peek that never blocks; an overflow counts, its resync being due).
    pub(crate) fn events_waiting(&self) -> bool {
        if self.holds_events() {
            return true;
        }
        let mut scratch = [0u8; wire::NLMSG_HDRLEN];
        match self.sock.recv_from(
            &mut &mut scratch[..],
            libc::MSG_PEEK | libc::MSG_TRUNC | libc::MSG_DONTWAIT,
        ) {
            Ok(_) => true,
            Err(err) => err.raw_os_error() == Some(libc::ENOBUFS),
        }
    }

    /// Whether event datagrams already read wait to be handed out: the socket need not be
    /// readable for [`NlSocket::recv_event`] to have more.
    pub(crate) fn holds_events(&self) -> bool {
        self.events.next < self.events.got.len()
    }

    /// Reads up to [`EVENT_BATCH`] event datagrams into the batch, which held none left to
    /// hand out; false when there was none to read (or the receive timeout expired).
    fn read_events(&mut self, nonblocking: bool) -> Result<bool> {
        let EventBatch { bufs, got, next } = &mut self.events;
        got.clear();
        *next = 0;
        if bufs.len() != EVENT_BATCH * self.event_read {
            *bufs = vec![0; EVENT_BATCH * self.event_read];
        }
        let wait = if nonblocking {
            MsgFlags::MSG_DONTWAIT
        } else {
            MsgFlags::MSG_WAITFORONE
        };
        loop {
            let mut headers = MultiHeaders::<NetlinkAddr>::preallocate(EVENT_BATCH, None);
            let mut slices: Vec<[IoSliceMut<'_>; 1]> = bufs
                .chunks_exact_mut(self.event_read)
                .map(|buf| [IoSliceMut::new(buf)])
                .collect();
            match recvmmsg(
                self.sock.as_raw_fd(),
                &mut headers,
                slices.iter_mut(),
                MsgFlags::MSG_TRUNC | wait,
                None,
            ) {
                Ok(read) => {
                    got.extend(read.map(|msg| (msg.bytes, msg.address.map_or(0, |a| a.pid()))));
                    return Ok(!got.is_empty());
                }
                Err(Errno::EINTR) => continue,
                Err(errno) => {
                    recv_error::<()>(io::Error::from(errno))?;
                    return Ok(false);
                }
            }
        }
    }

    /// Sends the dump request in `request` (whose sequence number is `seq`) and calls
    /// `on_msg` for each object message of the answer. A failing `on_msg` does not stop the
    /// reading: the dump is drained to its end so no stale answer stays queued, then the
    /// first error is returned.
    ///
    /// Each datagram is read in one call when the kind's datagrams fit in [`MIN_READ`]
    /// ([`datagrams_fit_min_read`]), else after a peek at its size ([`NlSocket::recv`]).
    pub(crate) fn dump(
        &mut self,
        request: &[u8],
        seq: u32,
        mut on_msg: impl FnMut(&Msg<'_>) -> Result<()>,
    ) -> Result<DumpOutcome> {
        let whole = datagrams_fit_min_read(request);
        self.send(request)?;
        let port = self.port;
        let mut state = DumpState::default();
        loop {
            let datagram = self.recv_dump_datagram(whole)?;
            if let Some(end) = state.datagram(datagram, seq, port, &mut on_msg) {
                return end;
            }
        }
    }

    /// The next datagram of a dump: read in one call (`whole`, see
    /// [`datagrams_fit_min_read`]) or after a peek at its size; a receive timeout is
    /// [`Error::Timeout`].
    fn recv_dump_datagram(&mut self, whole: bool) -> Result<&[u8]> {
        if whole {
            recv_whole(&self.sock, &mut self.buf, &mut self.n_foreign)?;
            return Ok(&self.buf);
        }
        self.recv(false)?.ok_or(Error::Timeout)
    }

    /// [`NlSocket::dump`] with the receiving on a scoped second thread: the kernel fills each
    /// datagram of a dump inside the `recvmsg` that asks for it, so while this thread hands
    /// the messages of one datagram to `on_msg` (a printer formats them), the other is
    /// already in the kernel for the next. The two meet through [`PIPELINE_BUFFERS`] buffers
    /// that go round between them, so memory stays bounded whatever `on_msg`'s pace. Each
    /// datagram is read in one call (no peek): a route dump's datagrams are at most 32 KiB
    /// (see [`MIN_READ`]; only link dumps may need more), as are the buffers; a longer one
    /// is an error, as a truncated read is for [`NlSocket::recv`]. Same answer, errors and draining as `dump`; when the
    /// thread cannot be started, this is `dump`.
    pub(crate) fn dump_pipelined(
        &mut self,
        request: &[u8],
        seq: u32,
        mut on_msg: impl FnMut(&Msg<'_>) -> Result<()>,
    ) -> Result<DumpOutcome> {
        let port = self.port;
        let sock = &self.sock;
        let (full_tx, full_rx) = mpsc::sync_channel::<Result<Vec<u8>>>(PIPELINE_BUFFERS);
        let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(PIPELINE_BUFFERS);
        for _ in 0..PIPELINE_BUFFERS {
            // Allocated here, so the receiving thread allocates nothing (no malloc arena of
            // its own); untouched capacity costs no memory.
            let _ = free_tx.send(Vec::with_capacity(PIPELINE_READ));
        }
        let pipelined = std::thread::scope(|scope| {
            let receiver = std::thread::Builder::new()
                .name("netmirror-dump".into())
                .spawn_scoped(scope, move || {
                    let mut n_foreign = 0;
                    while let Ok(mut buf) = recv_spinning(&free_rx) {
                        let read = recv_whole(sock, &mut buf, &mut n_foreign);
                        let last = read.as_ref().map_or(true, |()| ends_dump(&buf, seq, port));
                        // The other side stopped listening: it returned.
                        if full_tx.send(read.map(|()| buf)).is_err() || last {
                            break;
                        }
                    }
                    n_foreign
                });
            let Ok(receiver) = receiver else {
                return None;
            };
            let answer = self.send(request).and_then(|()| {
                let mut state = DumpState::default();
                loop {
                    let buf = recv_spinning(&full_rx).map_err(|_| {
                        Error::socket(
                            "dump",
                            io::Error::other("the dump's receiving thread stopped"),
                        )
                    })??;
                    let end = state.datagram(&buf, seq, port, &mut on_msg);
                    // Never blocks: the channel holds every buffer there is.
                    let _ = free_tx.send(buf);
                    if let Some(end) = end {
                        return end;
                    }
                }
            });
            // A receiver still waiting for a buffer, or to hand one over, sees the channel
            // closed and ends.
            drop(free_tx);
            drop(full_rx);
            let n_foreign = receiver.join().unwrap_or(0);
            Some((answer, n_foreign))
        });
        match pipelined {
            Some((answer, n_foreign)) => {
                self.n_foreign += n_foreign;
                answer
            }
            None => {
                tracing::debug!("no thread for the dump's receiving: receiving on this one");
                self.dump(request, seq, on_msg)
            }
        }
    }
}

/// Takes the next item of `rx`; see [`spin_until`] for the wait.
fn recv_spinning<T>(rx: &mpsc::Receiver<T>) -> std::result::Result<T, mpsc::RecvError> {
    let mut taken = None;
    spin_until(|| match rx.try_recv() {
        Ok(item) => {
            taken = Some(Ok(item));
            true
        }
        Err(mpsc::TryRecvError::Disconnected) => {
            taken = Some(Err(mpsc::RecvError));
            true
        }
        Err(mpsc::TryRecvError::Empty) => false,
    });
    taken.unwrap_or_else(|| rx.recv())
}

/// Polls `ready` until it returns true (then true), yielding the processor between polls, for
/// at most [`SPIN_WAIT`] (then false: the caller sleeps).
///
/// The two threads of a dump hand over a chunk every few tens of microseconds. A thread that
/// sleeps on a lock or a channel in between lets its processor go idle, and under a hypervisor
/// an idle virtual processor halts: waking it for the next chunk goes through the host, which
/// can take longer than the chunk's work. Polling keeps both processors awake for the length
/// of a dump (`route show` of 600k IPv4 routes, on a 2-vCPU KVM guest without the guest's halt
/// polling: 1,100 context switches and 102 ms with sleeps, 25 and 72 ms with this). Yielding
/// between polls, rather than spinning in place, lets the other thread run when both share a
/// processor. Where this process may run on one processor only (its affinity, or a cgroup's
/// CPU quota), the other thread cannot run meanwhile and polling would only spend the quota:
/// then `ready` is asked once.
fn spin_until(mut ready: impl FnMut() -> bool) -> bool {
    // Mostly ready at the first look: no clock read for it.
    if ready() {
        return true;
    }
    static PARALLEL: OnceLock<bool> = OnceLock::new();
    if !*PARALLEL.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)) {
        return false;
    }
    let start = Instant::now();
    loop {
        std::thread::yield_now();
        if ready() {
            return true;
        }
        if start.elapsed() >= SPIN_WAIT {
            return false;
        }
    }
}

/// How long a thread of a dump polls for its peer's next chunk before it sleeps: longer than
/// the kernel takes to fill a datagram (about 80 µs for 240 IPv6 routes).
const SPIN_WAIT: Duration = Duration::from_micros(200);

/// How many datagram buffers go round between the threads of [`NlSocket::dump_pipelined`]:
/// one being filled while the other is read. Each costs the 32 KiB a datagram fills of it in
/// resident memory; more give no more overlap (the kernel fills one datagram per `recvmsg`).
const PIPELINE_BUFFERS: usize = 2;

/// The capacity of each buffer of [`NlSocket::dump_pipelined`]: the 32 KiB the kernel caps
/// a dump's datagrams at (it sizes them after the largest buffer passed to `recvmsg`, up to
/// 32 KiB less its own overhead), so that no byte of them stays untouched.
const PIPELINE_READ: usize = MIN_READ;

/// Receives the next datagram from the kernel into `buf` in one call, as
/// [`NlSocket::recv`] does with a peek first: datagrams from any other sender are dropped and
/// counted in `n_foreign`, a receive timeout is [`Error::Timeout`], a datagram longer than
/// `buf`'s capacity (at least [`MIN_READ`]) an error.
fn recv_whole(sock: &Socket, buf: &mut Vec<u8>, n_foreign: &mut u64) -> Result<()> {
    loop {
        buf.clear();
        buf.reserve(MIN_READ);
        let (len, from) = match sock.recv_from(buf, libc::MSG_TRUNC) {
            Ok(it) => it,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => {
                recv_error::<()>(err)?;
                return Err(Error::Timeout);
            }
        };
        if from.port_number() != 0 {
            drop_foreign(n_foreign, from.port_number(), len);
            continue;
        }
        if len > buf.len() {
            return Err(Error::malformed(format!(
                "datagram of {len} bytes truncated to {}",
                buf.len()
            )));
        }
        return Ok(());
    }
}

/// Whether every datagram of the dump that `request` asks for fits in [`MIN_READ`] bytes,
/// so that each can be read in one call ([`recv_whole`]) instead of a peek at its size and
/// a read. The kernel builds a dump's datagrams no larger than 32 KiB (less its own
/// overhead), and a message that does not fit in an empty one fails the dump, except for a
/// link dump: it sizes those for the longest link message (`rtnl_calcit`), which a link
/// with many virtual functions or ports makes longer. Any other request, or none that
/// parses, is read with the peek.
fn datagrams_fit_min_read(request: &[u8]) -> bool {
    Msgs::new(request)
        .next()
        .is_some_and(|msg| msg.is_ok_and(|msg| msg.kind != wire::RTM_GETLINK))
}

/// Counts (in `n_foreign`) and traces a datagram that another process sent (`sender_port`
/// is not the kernel's 0), which the caller has consumed and drops.
fn drop_foreign(n_foreign: &mut u64, sender_port: u32, len: usize) {
    *n_foreign += 1;
    tracing::warn!(
        sender_port,
        len,
        "dropped a netlink message not sent by the kernel"
    );
}

/// True when `datagram` ends the dump of `seq` to the socket of `port`: it holds that dump's
/// `NLMSG_DONE`, its error or overrun, or a message that does not parse. Exactly where
/// [`DumpState::datagram`] returns `Some`, without calling anything for the objects: what the
/// receiving thread of [`NlSocket::dump_pipelined`] stops after.
fn ends_dump(datagram: &[u8], seq: u32, port: u32) -> bool {
    for msg in Msgs::new(datagram) {
        let Ok(msg) = msg else {
            return true;
        };
        if msg.seq != seq || (msg.port != port && msg.port != 0) {
            continue;
        }
        match msg.kind {
            wire::NLMSG_DONE | wire::NLMSG_OVERRUN => return true,
            wire::NLMSG_ERROR if !matches!(wire::parse_error(&msg), Ok(None)) => return true,
            _ => {}
        }
    }
    false
}

/// What a dump has seen so far ([`NlSocket::dump`]): its outcome and the first error of
/// its `on_msg`.
#[derive(Default)]
struct DumpState {
    outcome: DumpOutcome,
    first_err: Option<Error>,
}

impl DumpState {
    /// Takes the messages of one datagram of the dump of `seq` to the socket of `port`:
    /// object messages go to `on_msg`. `Some` once the dump is over: its outcome, or its
    /// error (the kernel's, a malformed message's, or the first of `on_msg`).
    fn datagram(
        &mut self,
        datagram: &[u8],
        seq: u32,
        port: u32,
        on_msg: &mut impl FnMut(&Msg<'_>) -> Result<()>,
    ) -> Option<Result<DumpOutcome>> {
        for msg in Msgs::new(datagram) {
            let msg = match msg {
                Ok(msg) => msg,
                Err(err) => return Some(Err(err)),
            };
            if msg.seq != seq || (msg.port != port && msg.port != 0) {
                tracing::trace!(seq = msg.seq, "skipping a stale message");
                continue;
            }
            if msg.flags & wire::NLM_F_DUMP_INTR != 0 {
                self.outcome.interrupted = true;
            }
            if msg.flags & wire::NLM_F_DUMP_FILTERED != 0 {
                self.outcome.filtered = true;
            }
            match msg.kind {
                wire::NLMSG_DONE => {
                    return Some(match self.first_err.take() {
                        Some(err) => Err(err),
                        None => Ok(self.outcome),
                    });
                }
                wire::NLMSG_ERROR => match wire::parse_error(&msg) {
                    Ok(None) => {}
                    Ok(Some(err)) => return Some(Err(Error::Kernel(err))),
                    Err(err) => return Some(Err(err)),
                },
                wire::NLMSG_NOOP => {}
                wire::NLMSG_OVERRUN => return Some(Err(Error::Overrun)),
                _ => {
                    self.outcome.n_objects += 1;
                    if let Err(err) = on_msg(&msg) {
                        self.first_err.get_or_insert(err);
                    }
                }
            }
        }
        None
    }
}

/// How many messages the receiving thread of [`NlSocket::dump_parallel`] hands over at once:
/// about one datagram of IPv4 routes.
const CHUNK_LEN: usize = 512;

/// How many chunks may wait between the receiving thread and the consumer. With the chunk
/// being filled and the one being consumed, at most `CHUNKS_IN_FLIGHT + 2` chunks exist: the
/// memory between socket and consumer stays bounded whatever the consumer's pace (512 chunks
/// of IPv4 route messages are about 15 MB; the queue is that deep only while the consumer is
/// behind on a large dump, see [`BACKLOG_SHARE`]).
const CHUNKS_IN_FLIGHT: usize = 512;

/// A waiting receiver is woken only once a quarter of the queue is free, not at every chunk:
/// each wake-up is a futex call and, on a busy machine, a wait for a processor.
const WAKE_RECEIVER_AT: usize = CHUNKS_IN_FLIGHT * 3 / 4;

/// A waiting consumer is woken once this many chunks wait: soon, since an idle consumer is
/// lost time, but not for every chunk.
const WAKE_CONSUMER_AT: usize = 2;

/// The consumer's backlog grows with the dump: the receiver leaves its chunks unparsed
/// ([`Handed::Raw`], the consumer parses them) as long as no more chunks wait than this
/// share of those handed over so far (at least one, at most half the queue).
///
/// A full IPv4 dump ends with the kernel walking the whole route trie once more, for the local
/// table (which shares the trie of main until a policy rule splits them): about 45 ns per
/// route dumped before, during which no datagram comes (25 ms at 600k routes, 50 ms at 1M).
/// The backlog is what keeps the consumer busy through that walk instead of idle behind it.
/// Its chunks cost the consumer less than a full parse and index (about 230 ns a route) when
/// the receiver parsed them: with a fifth, the consumer ran dry 5–7 ms before the walk ended
/// at 600k routes (its waits timed), with a third about 1 ms. At 1M the cap (half the queue)
/// ends the backlog 11–13 ms before the walk does; a deeper queue raised the memory a route
/// takes after the load (the queue's last chunks are freed where nothing reuses them) without
/// a faster load.
const BACKLOG_SHARE: usize = 3;

/// The receiver also puts the objects of its next chunk in their `Arc`s ([`Handed::Shared`])
/// when this many chunks wait beyond the backlog: the consumer is behind, so the allocations
/// (and the page faults of their memory) are better done on the receiving thread.
const SHARED_BEYOND_BACKLOG: usize = 4;

/// What the receiving thread of [`NlSocket::dump_parallel`] hands to the consumer.
enum Handed<T> {
    /// Parsed objects, in kernel order.
    Objs(Vec<T>),
    /// Parsed objects in their `Arc`s, in kernel order.
    Shared(Vec<Arc<T>>),
    /// Object messages not parsed yet, in kernel order (the consumer parses them).
    Raw(RawChunk),
    /// A message that could not be parsed (the consumer traces and counts it).
    Malformed(Error),
}

/// The payloads of object messages, back to back, and where each one ends.
#[derive(Default)]
struct RawChunk {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl RawChunk {
    fn push(&mut self, payload: &[u8]) {
        self.bytes.extend_from_slice(payload);
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// The payloads, in order.
    fn payloads(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let payload = self.bytes.get(start..end).unwrap_or_default();
            start = end;
            payload
        })
    }
}

/// A consumed chunk going back to the receiver for reuse.
enum Emptied<T> {
    None,
    Objs(Vec<T>),
    Shared(Vec<Arc<T>>),
    Raw(RawChunk),
}

/// The bounded queue between the two threads of a dump, with emptied chunks coming back.
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
    /// Emptied raw chunks for the receiver to fill again.
    spare_raw: Vec<RawChunk>,
    /// Emptied vectors of `Arc`s for the receiver to fill again.
    spare_shared: Vec<Vec<Arc<T>>>,
    receiver_waits: bool,
    consumer_waits: bool,
    /// How many items the receiver queued so far.
    n_pushed: usize,
    /// The receiver is done: nothing more will come.
    done: bool,
    /// The consumer is gone (it panicked): nothing is taken any more.
    gone: bool,
}

/// What [`Handoff::push`] learnt about the consumer, and so what the receiver makes of its
/// next chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pushed {
    /// The consumer is gone.
    Gone,
    /// Queued; the consumer's backlog is short (see [`BACKLOG_SHARE`]): leave the next chunk
    /// unparsed.
    Starving,
    /// Queued; the consumer has work waiting: parse the next chunk.
    Fed,
    /// Queued; the consumer is behind: parse the next chunk and allocate its objects.
    Behind,
}

impl<T> Handoff<T> {
    fn new() -> Self {
        Handoff {
            state: Mutex::new(HandoffState {
                queue: VecDeque::with_capacity(CHUNKS_IN_FLIGHT + 1),
                spare: Vec::new(),
                spare_raw: Vec::new(),
                spare_shared: Vec::new(),
                receiver_waits: false,
                consumer_waits: false,
                n_pushed: 0,
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

    /// Queues `item`, waiting while the queue is full.
    fn push(&self, item: Handed<T>) -> Pushed {
        let mut state = self.lock();
        while state.queue.len() >= CHUNKS_IN_FLIGHT && !state.gone {
            state.receiver_waits = true;
            state = self
                .room
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        if state.gone {
            return Pushed::Gone;
        }
        state.queue.push_back(item);
        if state.consumer_waits && state.queue.len() >= WAKE_CONSUMER_AT {
            state.consumer_waits = false;
            self.ready.notify_one();
        }
        state.n_pushed += 1;
        let backlog = (state.n_pushed / BACKLOG_SHARE).clamp(1, CHUNKS_IN_FLIGHT / 2);
        if state.consumer_waits || state.queue.len() <= backlog {
            Pushed::Starving
        } else if state.queue.len() >= backlog + SHARED_BEYOND_BACKLOG {
            Pushed::Behind
        } else {
            Pushed::Fed
        }
    }

    /// An emptied vector to fill, or a new one.
    fn spare(&self) -> Vec<T> {
        self.lock()
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_LEN))
    }

    /// An emptied raw chunk to fill, or a new one.
    fn spare_raw(&self) -> RawChunk {
        self.lock().spare_raw.pop().unwrap_or_default()
    }

    /// An emptied vector of `Arc`s to fill, or a new one.
    fn spare_shared(&self) -> Vec<Arc<T>> {
        self.lock()
            .spare_shared
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_LEN))
    }

    /// The next item, waiting while the queue is empty; `None` once the receiver is done and
    /// everything was taken. `emptied` (a consumed chunk) is kept for reuse. While the queue is
    /// empty `idle` is called, again and again as long as it returns true (it did some work),
    /// before the thread sleeps.
    fn pop(&self, emptied: Emptied<T>, idle: &mut dyn FnMut() -> bool) -> Option<Handed<T>> {
        let mut state = self.lock();
        match emptied {
            Emptied::Objs(objs) if state.spare.len() < 2 => state.spare.push(objs),
            Emptied::Raw(raw) if state.spare_raw.len() < 2 => state.spare_raw.push(raw),
            Emptied::Shared(objs) if state.spare_shared.len() < 2 => state.spare_shared.push(objs),
            _ => {}
        }
        loop {
            if let Some(item) = state.queue.pop_front() {
                if state.receiver_waits && state.queue.len() <= WAKE_RECEIVER_AT {
                    state.receiver_waits = false;
                    self.room.notify_one();
                }
                return Some(item);
            }
            if state.done {
                return None;
            }
            // Nothing to take: do the caller's idle work (unlocked), then poll a while,
            // before sleeping.
            drop(state);
            let again = idle()
                || spin_until(|| {
                    let state = self.lock();
                    !state.queue.is_empty() || state.done
                });
            state = self.lock();
            if again || !state.queue.is_empty() || state.done {
                continue;
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
    /// The work between socket and index goes to whichever thread has time: while the
    /// consumer's backlog is short (it grows with the dump, [`BACKLOG_SHARE`]), the receiver
    /// hands over its chunks of messages unparsed and the consumer parses them; when a few
    /// more chunks wait, the receiver parses; when the consumer is further behind, the
    /// receiver also puts each object in its `Arc` ([`Chunk::Shared`]), so the allocations
    /// and the page faults of their memory leave the consumer's thread. Early in a load the
    /// consumer's index is small and quick and the kernel is the slower side; later the
    /// consumer's cache misses make it the slower one; at the end of an IPv4 dump the kernel
    /// walks its trie while the consumer works off its backlog.
    ///
    /// The threads meet through a bounded queue of chunks that come back for reuse, so memory
    /// stays bounded. Messages `parse` refuses go to `on_malformed` (on the calling thread);
    /// they do not stop the dump. Receive semantics are those of [`NlSocket::recv`]: sizes
    /// peeked, foreign senders dropped.
    pub(crate) fn dump_parallel<T: Send + Sync>(
        &mut self,
        request: &[u8],
        seq: u32,
        parse: &(dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
        sink: &mut dyn FnMut(Chunk<'_, T>),
        on_malformed: &mut dyn FnMut(Error),
    ) -> Result<DumpOutcome> {
        run_parallel(
            |filling| self.dump(request, seq, |msg| filling.add(msg.payload, parse)),
            parse,
            sink,
            on_malformed,
        )
    }
}

/// The two threads of [`NlSocket::dump_parallel`], apart from the socket: `produce` runs on a
/// scoped receiving thread and feeds the payloads of object messages to a [`Filling`], while
/// this thread takes the chunks and hands them to `sink` in order. When the queue is empty,
/// `sink` gets [`Chunk::Idle`] before the thread sleeps.
fn run_parallel<T: Send + Sync, R: Send>(
    produce: impl FnOnce(&mut Filling<'_, T>) -> Result<R> + Send,
    parse: &(dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
    sink: &mut dyn FnMut(Chunk<'_, T>),
    on_malformed: &mut dyn FnMut(Error),
) -> Result<R> {
    let handoff = Handoff::new();
    let handoff = &handoff;
    std::thread::scope(|scope| {
        let receiver = std::thread::Builder::new()
            .name("netmirror-dump".into())
            .spawn_scoped(scope, move || {
                let _finish = OnDrop(|| handoff.finish());
                let mut filling = Filling::new(handoff);
                let outcome = produce(&mut filling);
                filling.flush();
                outcome
            })
            .map_err(|e| Error::socket("spawn the dump's receiving thread", e))?;
        {
            let _leave = OnDrop(|| handoff.leave());
            let mut emptied = Emptied::None;
            let mut parsed: Vec<T> = Vec::new();
            loop {
                let mut idle = || {
                    let mut worked = false;
                    sink(Chunk::Idle(&mut worked));
                    worked
                };
                let Some(handed) =
                    handoff.pop(std::mem::replace(&mut emptied, Emptied::None), &mut idle)
                else {
                    break;
                };
                emptied = match handed {
                    Handed::Objs(mut objs) => {
                        sink(Chunk::Objs(&mut objs));
                        objs.clear();
                        Emptied::Objs(objs)
                    }
                    Handed::Shared(mut objs) => {
                        sink(Chunk::Shared(&mut objs));
                        objs.clear();
                        Emptied::Shared(objs)
                    }
                    Handed::Raw(mut raw) => {
                        for payload in raw.payloads() {
                            match parse(payload) {
                                Ok(Some(obj)) => parsed.push(obj),
                                Ok(None) => {}
                                Err(err) => on_malformed(err),
                            }
                        }
                        sink(Chunk::Objs(&mut parsed));
                        parsed.clear();
                        raw.clear();
                        Emptied::Raw(raw)
                    }
                    Handed::Malformed(err) => {
                        on_malformed(err);
                        Emptied::None
                    }
                };
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

/// The chunk the receiving thread of [`NlSocket::dump_parallel`] fills: one kind at a time,
/// chosen after each hand-over by how far the consumer is from running dry.
struct Filling<'h, T> {
    handoff: &'h Handoff<T>,
    mode: Pushed,
    raw: RawChunk,
    objs: Vec<T>,
    shared: Vec<Arc<T>>,
}

impl<'h, T> Filling<'h, T> {
    fn new(handoff: &'h Handoff<T>) -> Self {
        Filling {
            handoff,
            // The consumer has nothing yet: it parses the first chunk itself.
            mode: Pushed::Starving,
            raw: RawChunk::default(),
            objs: Vec::new(),
            shared: Vec::new(),
        }
    }

    /// Adds the payload of one object message; hands the chunk over once full.
    fn add(
        &mut self,
        payload: &[u8],
        parse: &(dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
    ) -> Result<()> {
        let full = match self.mode {
            Pushed::Starving | Pushed::Gone => {
                self.raw.push(payload);
                self.raw.len() >= CHUNK_LEN
            }
            Pushed::Fed | Pushed::Behind => {
                match parse(payload) {
                    Ok(Some(obj)) if self.mode == Pushed::Behind => self.shared.push(Arc::new(obj)),
                    Ok(Some(obj)) => self.objs.push(obj),
                    Ok(None) => {}
                    // A gone consumer only means nobody counts it.
                    Err(err) => drop(self.handoff.push(Handed::Malformed(err))),
                }
                self.objs.len() + self.shared.len() >= CHUNK_LEN
            }
        };
        if !full {
            return Ok(());
        }
        self.mode = self.hand_over();
        if self.mode == Pushed::Gone {
            return Err(Error::socket(
                "dump",
                io::Error::other("the dump's consumer is gone"),
            ));
        }
        Ok(())
    }

    /// Hands over whatever was filled (only one kind is ever non-empty).
    fn hand_over(&mut self) -> Pushed {
        let mut pushed = Pushed::Fed;
        if !self.raw.is_empty() {
            let raw = std::mem::replace(&mut self.raw, self.handoff.spare_raw());
            pushed = self.handoff.push(Handed::Raw(raw));
        }
        if !self.objs.is_empty() {
            let objs = std::mem::replace(&mut self.objs, self.handoff.spare());
            pushed = self.handoff.push(Handed::Objs(objs));
        }
        if !self.shared.is_empty() {
            let shared = std::mem::replace(&mut self.shared, self.handoff.spare_shared());
            pushed = self.handoff.push(Handed::Shared(shared));
        }
        pushed
    }

    /// Hands over the last, partly filled chunk.
    fn flush(mut self) {
        self.hand_over();
    }
}

impl NlSocket {
    /// Reads one answer datagram into `buf` with a single `recvfrom`; returns its length.
    /// Datagrams not sent by the kernel are dropped and counted, as [`NlSocket::recv`] does.
    pub(crate) fn recv_answer(&mut self, buf: &mut [u8]) -> Result<usize> {
        use rustix::net::netlink::SocketAddrNetlink;
        use rustix::net::{RecvFlags, recvfrom};
        loop {
            let (_, len, from) = match recvfrom(&*self, &mut *buf, RecvFlags::TRUNC) {
                Ok(it) => it,
                Err(rustix::io::Errno::INTR) => continue,
                // The socket's receive timeout expired.
                Err(rustix::io::Errno::AGAIN) => return Err(Error::Timeout),
                Err(rustix::io::Errno::NOBUFS) => return Err(Error::Overrun),
                Err(err) => return Err(Error::socket("recv", err.into())),
            };
            let sender = from
                .and_then(|addr| SocketAddrNetlink::try_from(addr).ok())
                .map(|addr| addr.pid());
            if sender != Some(0) {
                self.n_foreign += 1;
                tracing::warn!(
                    ?sender,
                    len,
                    "dropped a netlink message not sent by the kernel"
                );
                continue;
            }
            if len > buf.len() {
                return Err(Error::malformed(format!(
                    "batch answer of {len} bytes truncated to {}",
                    buf.len()
                )));
            }
            return Ok(len);
        }
    }

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
