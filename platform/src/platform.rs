//! [`Platform`]: a handle on one network namespace's rtnetlink, for dumps, filtered queries
//! and batches. [`Config`] is its builder-lite configuration.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::netns::{NETNS_RUN_DIR, Netns};
use crate::socket::{DumpOutcome, NlSocket, RcvbufOutcome};
use crate::wire::{self, Msg, MsgWriter, Nlas};

/// How a platform (or a cache) is opened.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) netns: Netns,
    pub(crate) rcvbuf: usize,
    pub(crate) strict_check: bool,
    pub(crate) dump_attempts: u32,
    pub(crate) timeout: Duration,
    pub(crate) resync_backoff: Duration,
    pub(crate) link_refresh: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// The defaults: the caller's namespace, a 128 MiB event receive buffer, strict checking
    /// on, 8 dump attempts, 30 s timeout, 100 ms initial resync back-off, links re-read every
    /// 5 s while one is down.
    pub fn new() -> Self {
        Config {
            netns: Netns::Current,
            rcvbuf: 128 << 20,
            strict_check: true,
            dump_attempts: 8,
            timeout: Duration::from_secs(30),
            resync_backoff: Duration::from_millis(100),
            link_refresh: Some(Duration::from_secs(5)),
        }
    }

    /// Opens the sockets in `netns`.
    pub fn with_netns(mut self, netns: Netns) -> Self {
        self.netns = netns;
        self
    }

    /// The receive buffer for the cache's event socket. Sized for bursts: a queued IPv4
    /// route event takes about 832 bytes, so a 100k-event burst needs about 83 MB.
    /// `SO_RCVBUFFORCE` is used when permitted (`CAP_NET_ADMIN`), else `SO_RCVBUF`, which
    /// `net.core.rmem_max` caps.
    pub fn with_rcvbuf(mut self, bytes: usize) -> Self {
        self.rcvbuf = bytes;
        self
    }

    /// Whether to ask for `NETLINK_GET_STRICT_CHK` (kernel-side dump filters).
    pub fn with_strict_check(mut self, on: bool) -> Self {
        self.strict_check = on;
        self
    }

    /// How many times a dump interrupted by concurrent changes (`NLM_F_DUMP_INTR`) is tried.
    pub fn with_dump_attempts(mut self, attempts: u32) -> Self {
        self.dump_attempts = attempts.max(1);
        self
    }

    /// How long to wait for each answer of the kernel.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The first delay before a resync after an overflow; doubled while overflows go on.
    /// Clamped to at least 1 ms: a resync must never run in a tight loop.
    pub fn with_resync_backoff(mut self, backoff: Duration) -> Self {
        self.resync_backoff = backoff.max(Duration::from_millis(1));
        self
    }

    /// How often a [`Cache`](crate::Cache) reads its links again (`None`: never; 5 s by
    /// default), for the changes the kernel does not announce. It announces no change it
    /// makes to a link that is down through `netdev_state_change`: its group, alias, link
    /// mode, GSO limits and kind settings (a bridge's `hello_time`, `stp_state`, ...) change
    /// silently there. And on any link, up or down, a write to the
    /// `net.ipv6.conf.IFACE.addr_gen_mode` sysctl changes the link's `inet6_addr_gen_mode`
    /// without a word. The re-read reports what changed as events; it costs one link dump
    /// (no route, address or rule is read). Clamped to at least 10 ms.
    pub fn with_link_refresh(mut self, every: Option<Duration>) -> Self {
        self.link_refresh = every.map(|every| every.max(Duration::from_millis(10)));
        self
    }
}

/// A handle on the rtnetlink of one network namespace.
///
/// Requests are values: `platform.routes().table(Table(100)).execute()`. All methods take `&self`;
/// requests on one platform are serialised on its socket.
#[derive(Debug)]
pub struct Platform {
    pub(crate) sock: Mutex<NlSocket>,
    pub(crate) config: Config,
    strict: bool,
    rcvbuf: RcvbufOutcome,
}

/// What [`Platform::dump_retry_parallel`] hands to its sink.
pub(crate) enum Chunk<'a, T> {
    /// Parsed objects, in kernel order; the sink may take them (the vector is reused).
    Objs(&'a mut Vec<T>),
    /// Parsed objects already in their `Arc`s (allocated by the receiving thread while the
    /// consumer was behind), in kernel order; the sink may take them.
    Shared(&'a mut Vec<Arc<T>>),
    /// Nothing has arrived yet: the sink may do a little idle work (and set the flag if it
    /// did some, to be asked again) before the thread sleeps.
    Idle(&'a mut bool),
    /// The attempt was interrupted: forget what it delivered, a new attempt follows.
    Restart,
}

/// What a dump with retries did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpReport {
    /// How many attempts were interrupted (`NLM_F_DUMP_INTR`) and thrown away.
    pub n_interrupted: u32,
    /// True when the kernel applied the request's filters (`NLM_F_DUMP_FILTERED`).
    pub filtered_by_kernel: bool,
    /// True when an interrupted attempt was kept rather than done again (its visitor had
    /// already passed its objects on): the answer may be inconsistent, as `ip` warns.
    pub kept_interrupted: bool,
}

/// The receive buffer of the request socket (iproute2's size). The kernel builds a dump's
/// datagrams inside our reads, and builds one more whenever the queued ones take at most half
/// the buffer; a read is a peek and then a read, so with a large buffer the kernel runs ahead
/// of us by up to half of it (16 MB of datagrams with 32 MB), which we then read back cold,
/// and the 25 ms walk of the whole trie it makes for the local table lands mid-dump, while
/// the consumer has nothing queued. Measured on 600k routes: 1.67x the raw dump with 32 MB,
/// 1.51x with 1 MB. A batch enlarges the buffer for its acks while it runs.
pub(crate) const DUMP_RCVBUF: usize = 1 << 20;

impl Platform {
    /// Opens a platform as `config` says.
    pub fn open(config: Config) -> Result<Self> {
        let mut sock = config.netns.run_in(NlSocket::open)?;
        let strict = config.strict_check && sock.set_strict_check(true);
        let rcvbuf = sock.set_rcvbuf(DUMP_RCVBUF);
        // SO_RCVTIMEO takes zero as "forever": keep a zero timeout a (tiny) timeout.
        sock.set_timeout(Some(config.timeout.max(Duration::from_micros(1))))?;
        Ok(Platform {
            sock: Mutex::new(sock),
            config,
            strict,
            rcvbuf,
        })
    }

    /// Opens a platform in the caller's namespace with the default configuration.
    pub fn new() -> Result<Self> {
        Platform::open(Config::new())
    }

    /// True when the kernel accepted `NETLINK_GET_STRICT_CHK`, so dump filters run there.
    pub fn strict_check(&self) -> bool {
        self.strict
    }

    /// What the request socket's receive buffer request achieved.
    pub fn rcvbuf(&self) -> RcvbufOutcome {
        self.rcvbuf
    }

    /// The configuration this platform was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The namespaces named under `/run/netns` (`ip netns add`) that this platform's namespace
    /// has an id for (`ip netns list-id`), by that id: where a link's parent is when its
    /// [`Link::link_netnsid`](crate::Link::link_netnsid) is one of them, the name `ip` prints
    /// as `link-netns NAME`. A name that is not a namespace, cannot be opened, or has no id
    /// here is left out; when two names lead to one namespace, the first in name order is
    /// kept. Asks the kernel once per name (`RTM_GETNSID`), so call it when an id is to be
    /// named, not per link.
    pub fn netns_names(&self) -> Result<BTreeMap<i32, String>> {
        let mut names: Vec<String> = match std::fs::read_dir(NETNS_RUN_DIR) {
            Ok(entries) => entries
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .collect(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(Error::Netns {
                    netns: NETNS_RUN_DIR.to_owned(),
                    source,
                });
            }
        };
        names.sort();
        let mut ids = BTreeMap::new();
        for name in names {
            // Not a namespace, or gone meanwhile: `ip` skips it too.
            let Ok(Some(fd)) = Netns::name(name.clone()).open() else {
                continue;
            };
            if let Some(id) = self.netns_id(fd.as_raw_fd())? {
                ids.entry(id).or_insert(name);
            }
        }
        Ok(ids)
    }

    /// This namespace's id for the namespace of the open file `fd` (`RTM_GETNSID` with
    /// `NETNSA_FD`); `None` when it has none.
    fn netns_id(&self, fd: i32) -> Result<Option<i32>> {
        const RTM_GETNSID: u16 = 90;
        const NETNSA_NSID: u16 = 1;
        const NETNSA_FD: u16 = 3;
        let mut id = None;
        let res = self.request(
            |buf, seq| {
                let mut msg =
                    MsgWriter::new(buf, RTM_GETNSID, wire::NLM_F_REQUEST | wire::NLM_F_ACK, seq);
                // struct rtgenmsg: the family, AF_UNSPEC.
                msg.raw(&[0]);
                msg.attr_u32(NETNSA_FD, fd as u32);
                msg.finish();
            },
            |msg| {
                let attrs = msg.payload.get(4..).unwrap_or_default();
                if let Some((_, value)) = Nlas::new(attrs).find(|(kind, _)| *kind == NETNSA_NSID) {
                    id = wire::nla_u32(value).map(|id| id as i32);
                }
                Ok(())
            },
        );
        match res {
            Ok(()) => Ok(id.filter(|id| *id >= 0)),
            // The file is not a network namespace after all.
            Err(Error::Kernel(err)) if err.errno == libc::EINVAL => Ok(None),
            Err(err) => Err(err),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, NlSocket> {
        self.sock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends the dump request built by `build` (given a sequence number) and feeds each
    /// object message to `on_msg`. When an attempt comes back interrupted, `on_interrupted`
    /// decides whether it is done again (`on_interrupted` returns `Ok(true)` after
    /// forgetting what the attempt delivered) or kept as it is (`Ok(false)`: the report's
    /// `kept_interrupted` says so); a printer that has already written the attempt's first
    /// objects cannot take them back. `pipelined`: with [`NlSocket::dump_pipelined`], the
    /// datagrams are received on a scoped second thread while `on_msg` runs on this one, for
    /// the dumps of many objects whose `on_msg` does real work (`route show` formats each
    /// route): the kernel's work for the next datagram overlaps it.
    pub(crate) fn dump_visit(
        &self,
        build: impl Fn(&mut Vec<u8>, u32),
        pipelined: bool,
        on_msg: impl FnMut(&Msg<'_>) -> Result<()>,
        on_interrupted: impl FnMut() -> Result<bool>,
    ) -> Result<DumpReport> {
        self.retry(
            build,
            &mut (on_msg, on_interrupted),
            |sock, request, seq, (on_msg, _)| {
                if pipelined {
                    sock.dump_pipelined(request, seq, &mut *on_msg)
                } else {
                    sock.dump(request, seq, &mut *on_msg)
                }
            },
            |(_, on_interrupted)| on_interrupted(),
        )
    }

    /// [`Platform::dump_visit`] with [`NlSocket::dump_parallel`]: the dump is received and
    /// parsed on a scoped second thread while `sink` consumes the objects in chunks on this
    /// one. When an attempt comes back interrupted, `sink` gets [`Chunk::Restart`] and the
    /// dump is done again, up to the configured number of attempts.
    pub(crate) fn dump_retry_parallel<T: Send + Sync>(
        &self,
        build: impl Fn(&mut Vec<u8>, u32),
        parse: &(dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
        mut sink: impl FnMut(Chunk<'_, T>),
        mut on_malformed: impl FnMut(Error),
    ) -> Result<DumpReport> {
        self.retry(
            build,
            &mut (&mut sink, &mut on_malformed),
            |sock, request, seq, (sink, on_malformed)| {
                sock.dump_parallel(request, seq, parse, *sink, *on_malformed)
            },
            |(sink, _)| {
                sink(Chunk::Restart);
                Ok(true)
            },
        )
    }

    /// The attempts of a dump: sends the request `build` makes for each attempt's sequence
    /// number through `attempt`, and after an interrupted one calls `restart`, up to the
    /// configured number of attempts (or until `restart` says to keep the interrupted
    /// attempt). `state` is what both of them feed.
    fn retry<S>(
        &self,
        build: impl Fn(&mut Vec<u8>, u32),
        state: &mut S,
        mut attempt: impl FnMut(&mut NlSocket, &[u8], u32, &mut S) -> Result<DumpOutcome>,
        mut restart: impl FnMut(&mut S) -> Result<bool>,
    ) -> Result<DumpReport> {
        let mut sock = self.lock();
        let mut report = DumpReport::default();
        let mut request = Vec::with_capacity(64);
        for n in 1..=self.config.dump_attempts {
            let seq = sock.next_seq();
            request.clear();
            build(&mut request, seq);
            let outcome = attempt(&mut sock, &request, seq, state)?;
            report.filtered_by_kernel |= outcome.filtered;
            if !outcome.interrupted {
                return Ok(report);
            }
            report.n_interrupted += 1;
            tracing::debug!(
                attempt = n,
                "dump interrupted by concurrent changes, retrying"
            );
            if !restart(state)? {
                report.kept_interrupted = true;
                return Ok(report);
            }
        }
        Err(Error::DumpInterrupted {
            attempts: self.config.dump_attempts,
        })
    }

    /// Sends the single (non-dump) request built by `build`, asking for an ack, and feeds
    /// the answer's object messages to `on_msg` until the ack.
    pub(crate) fn request(
        &self,
        build: impl Fn(&mut Vec<u8>, u32),
        on_msg: impl FnMut(&Msg<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut sock = self.lock();
        let seq = sock.next_seq();
        let mut request = Vec::with_capacity(64);
        build(&mut request, seq);
        sock.request(&request, seq, on_msg)
    }

    /// The receive buffer the request socket got (for diagnostics): sized for dumps; a batch
    /// enlarges it while it runs.
    pub fn set_request_rcvbuf(&self, bytes: usize) -> RcvbufOutcome {
        self.lock().set_rcvbuf(bytes)
    }
}

/// The kernel's own route counters for one namespace, read to size the cache's route index
/// before a large dump has arrived (growing the index as routes come costs a rehash of every
/// held route at each doubling). `/proc/net/fib_triestat` gives the IPv4 prefixes per table
/// (the kernel walks its tries to answer: about 50 ms at 600k routes, so the cache asks on a
/// thread of its own while the dump runs); `/proc/net/rt6_stats` counts IPv6 routes.
///
/// The files are opened inside the namespace (a proc file keeps answering for the namespace
/// it was opened in). An estimate only sizes memory: a wrong one costs speed or memory,
/// never correctness.
#[derive(Debug)]
pub(crate) struct FibCounters {
    v4: Option<File>,
    v6: Option<File>,
}

impl FibCounters {
    /// Opens the counters of the calling thread's namespace; a file that cannot be opened is
    /// left out.
    pub(crate) fn open() -> Self {
        let open = |name: &str| File::open(format!("/proc/thread-self/net/{name}")).ok();
        FibCounters {
            v4: open("fib_triestat"),
            v6: open("rt6_stats"),
        }
    }

    /// About how many routes (IPv4 and IPv6, every table) a full route dump returns, or
    /// `None` when neither counter can be read.
    pub(crate) fn estimate_routes(&self) -> Option<usize> {
        let read = |file: Option<&File>| -> Option<String> {
            let mut file = file?;
            file.seek(SeekFrom::Start(0)).ok()?;
            let mut text = String::new();
            file.read_to_string(&mut text).ok()?;
            Some(text)
        };
        let v4 = read(self.v4.as_ref()).map(|text| triestat_prefixes(&text));
        let v6 = read(self.v6.as_ref()).and_then(|text| rt6_entries(&text));
        match (v4, v6) {
            (None, None) => None,
            (v4, v6) => Some(v4.unwrap_or(0) + v6.unwrap_or(0)),
        }
    }
}

/// The number of IPv4 prefixes (routes) of every table in `/proc/net/fib_triestat`. A table
/// that shares its trie with another one shows the same statistics (the local and main
/// tables are merged until a rule needs them apart) and is counted once.
pub(crate) fn triestat_prefixes(text: &str) -> usize {
    let is_header = |line: &str| {
        line == "Main:" || line == "Local:" || (line.starts_with("Id ") && line.ends_with(':'))
    };
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for line in text.lines() {
        if is_header(line) {
            blocks.push(Vec::new());
        } else if let Some(block) = blocks.last_mut() {
            block.push(line);
        }
    }
    let mut total = 0;
    for (i, block) in blocks.iter().enumerate() {
        if blocks[..i].contains(block) {
            continue;
        }
        total += block
            .iter()
            .find_map(|line| line.trim().strip_prefix("Prefixes:"))
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0);
    }
    total
}

/// The number of IPv6 routes in `/proc/net/rt6_stats` (its fourth field, `fib_rt_entries`, in
/// hexadecimal).
pub(crate) fn rt6_entries(text: &str) -> Option<usize> {
    let field = text.split_whitespace().nth(3)?;
    usize::from_str_radix(field, 16).ok()
}

#[cfg(test)]
mod tests;
