//! Recording a cache's conversation with its service (opt in with
//! [`CacheBuilder::record_to`](crate::CacheBuilder::record_to)); the
//! [`replay`](crate::replay) module drives a fresh core from it.
//!
//! # The format (version 2)
//!
//! Every integer is little-endian; a *string* is a `u32` length then that many bytes of UTF-8.
//!
//! - The magic bytes `NMCACHE\x01`, then the `u32` version (2).
//! - The header: the cache's configuration, which the replay must use too. The service (string),
//!   the ObjectManager's path (string), whether the connection is a bus (`u8`), the scope (`u8`
//!   0 = everything; 1 = one path, then the path; 2 = a lookup, then its path, interface,
//!   method, argument, fallback interface and fallback property), the fetches (`u32` count,
//!   then per fetch its interface, method, `u8` whether it has a refresh signal and that
//!   signal's name, a string, empty when it has none, then `u8` whether it has a
//!   [`RefreshOn`](crate::RefreshOn), and if so its interface, property and reference
//!   (strings) and its values (`u32` count, then each `u32`)), the call timeout (`u64` milliseconds),
//!   the bound of the event queue (`u64`), and a fingerprint of the interface declarations
//!   (`u64` FNV-1a of every declared interface, property, signature and target, in name order)
//!   with their number (`u32`).
//! - Then records to the end of the file, each a kind byte, a `u32` length and that many bytes:
//!
//! | kind | what the cache did                                  | payload                          |
//! |------|-----------------------------------------------------|----------------------------------|
//! | `S`  | started (subscribe, find the owner, or load)        | none                             |
//! | `B`  | began a batch                                       | none                             |
//! | `M`  | handled a message it received                       | `u32` answers, the message       |
//! | `C`  | committed the batch (settle, queue events)          | none                             |
//! | `O`  | sent a call                                         | the message                      |
//! | `E`  | timed calls out                                     | `u32` count, that many call indices |
//! | `R`  | was asked to reconcile                              | `u8` whether one started         |
//! | `P`  | handed out events (the consumer's `pop`s)           | `u32` how many                   |
//!
//! A message is its D-Bus wire bytes, exactly as received or sent (the bus's own framing, so
//! `busctl`-level tools and zbus read it). Calls are numbered from 0 in the order sent; `answers`
//! is 1 + the number of the call a reply answers, or 0 for every other message (signals, and
//! replies to calls the cache did not make). Serials are the connection's: the replayer sends
//! its own calls with its own serials, so it matches its calls with the recorded ones in order
//! (destination, path, interface, member and body must agree) and rewrites each reply's
//! reply-serial to its own call's.
//!
//! The records say everything the driver did to the core, in order, so the replay is
//! deterministic: the batch boundaries (which decide what the events of a batch are), the
//! timeouts (which calls each ended), the events the consumer took (an overrun depends on
//! how far behind it was).

use std::{
    fs::File,
    io::{self, BufWriter, Write},
    path::{Path, PathBuf},
};

use hashbrown::HashMap;
use zbus::message::{Message, Type};

use crate::{
    core::{Config, Core, Scope},
    meta::Registry,
};

/// The first bytes of a recording.
pub(crate) const MAGIC: &[u8; 8] = b"NMCACHE\x01";
/// The version of the format this crate writes and reads (2: fetches carry `refresh_on`).
pub(crate) const VERSION: u32 = 2;

pub(crate) const START: u8 = b'S';
pub(crate) const BEGIN: u8 = b'B';
pub(crate) const MESSAGE: u8 = b'M';
pub(crate) const COMMIT: u8 = b'C';
pub(crate) const CALL: u8 = b'O';
pub(crate) const EXPIRE: u8 = b'E';
pub(crate) const RECONCILE: u8 = b'R';
pub(crate) const POP: u8 = b'P';

/// The calls kept are pruned when there are at least this many.
const MIN_PRUNE: usize = 1024;

/// A fingerprint of the interface declarations and their number: a replay with other
/// declarations would decode differently.
pub(crate) fn registry_fingerprint(registry: &Registry) -> (u64, u32) {
    let mut decls: Vec<_> = registry.iter().collect();
    decls.sort_by(|a, b| a.name.cmp(&b.name));
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes.iter().chain([0xff].iter()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for decl in &decls {
        eat(decl.name.as_bytes());
        for p in decl.properties.iter() {
            eat(p.name.as_bytes());
            eat(p.signature.as_bytes());
            eat(p.target.as_deref().unwrap_or("").as_bytes());
        }
    }
    (hash, u32::try_from(decls.len()).unwrap_or(u32::MAX))
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put_u32(buf, len_u32(s.len()));
    buf.extend_from_slice(s.as_bytes());
}

fn put_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

fn len_u32(n: usize) -> u32 {
    // D-Bus messages are at most 128 MiB, names far less.
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The header of a recording of a cache configured with `cfg`.
pub(crate) fn header(cfg: &Config, bus: bool) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend_from_slice(MAGIC);
    put_u32(&mut buf, VERSION);
    put_str(&mut buf, &cfg.service);
    put_str(&mut buf, &cfg.manager_path);
    buf.push(u8::from(bus));
    match &cfg.scope {
        Scope::All => buf.push(0),
        Scope::Path(p) => {
            buf.push(1);
            put_str(&mut buf, p);
        }
        Scope::Lookup(l) => {
            buf.push(2);
            for s in [
                &l.path,
                &l.interface,
                &l.method,
                &l.arg,
                &l.fallback.0,
                &l.fallback.1,
            ] {
                put_str(&mut buf, s);
            }
        }
    }
    put_u32(&mut buf, len_u32(cfg.fetches.len()));
    for f in &cfg.fetches {
        put_str(&mut buf, &f.interface);
        put_str(&mut buf, &f.method);
        buf.push(u8::from(f.refresh.is_some()));
        put_str(&mut buf, f.refresh.as_deref().unwrap_or(""));
        match &f.refresh_on {
            None => buf.push(0),
            Some(on) => {
                buf.push(1);
                put_str(&mut buf, &on.interface);
                put_str(&mut buf, &on.property);
                put_str(&mut buf, &on.reference);
                put_u32(&mut buf, len_u32(on.values.len()));
                for &value in &on.values {
                    put_u32(&mut buf, value);
                }
            }
        }
    }
    let millis = u64::try_from(cfg.timeout.as_millis()).unwrap_or(u64::MAX);
    buf.extend_from_slice(&millis.to_le_bytes());
    buf.extend_from_slice(&(cfg.max_events as u64).to_le_bytes());
    let (fingerprint, n) = registry_fingerprint(&cfg.registry);
    buf.extend_from_slice(&fingerprint.to_le_bytes());
    put_u32(&mut buf, n);
    buf
}

/// Writes what a cache does to its core, as it does it (see the module's docs).
///
/// Recording never changes what the cache does: a write that fails is logged once, recording
/// stops, and [`ObjectCache::finish_recording`](crate::ObjectCache::finish_recording) returns
/// the error.
pub(crate) struct Recorder {
    out: BufWriter<File>,
    path: PathBuf,
    error: Option<io::Error>,
    /// The number of each call sent, by serial.
    calls: HashMap<u32, u32>,
    next_call: u32,
    /// Calls that may still time out: (serial, number).
    open: Vec<(u32, u32)>,
    /// `pop`s not written yet (consecutive ones make one record).
    pops: u32,
    /// Forget the calls answered once this many are kept.
    prune_at: usize,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .field("calls", &self.next_call)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Creates (or truncates) `path` and writes the header.
    pub(crate) fn create(path: &Path, cfg: &Config, bus: bool) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 16, File::create(path)?);
        out.write_all(&header(cfg, bus))?;
        Ok(Self {
            out,
            path: path.to_owned(),
            error: None,
            calls: HashMap::new(),
            next_call: 0,
            open: Vec::new(),
            pops: 0,
            prune_at: MIN_PRUNE,
        })
    }

    fn write(&mut self, kind: u8, parts: &[&[u8]]) {
        if self.error.is_some() {
            return;
        }
        let pops = std::mem::take(&mut self.pops);
        let mut go = || -> io::Result<()> {
            if pops > 0 {
                self.out.write_all(&[POP])?;
                self.out.write_all(&4u32.to_le_bytes())?;
                self.out.write_all(&pops.to_le_bytes())?;
            }
            if kind == POP {
                return Ok(());
            }
            let len: usize = parts.iter().map(|p| p.len()).sum();
            self.out.write_all(&[kind])?;
            self.out.write_all(&len_u32(len).to_le_bytes())?;
            for p in parts {
                self.out.write_all(p)?;
            }
            Ok(())
        };
        if let Err(e) = go() {
            tracing::warn!(path = %self.path.display(), "recording stopped: {e}");
            self.error = Some(e);
        }
    }

    pub(crate) fn start(&mut self) {
        self.write(START, &[]);
    }

    pub(crate) fn begin_batch(&mut self) {
        self.write(BEGIN, &[]);
    }

    pub(crate) fn commit(&mut self) {
        self.write(COMMIT, &[]);
        // A batch is a natural point to make the file whole up to here.
        if self.error.is_none()
            && let Err(e) = self.out.flush()
        {
            tracing::warn!(path = %self.path.display(), "recording stopped: {e}");
            self.error = Some(e);
        }
    }

    /// A message the core is about to handle.
    pub(crate) fn message(&mut self, msg: &Message) {
        let answers = match msg.message_type() {
            Type::MethodReturn | Type::Error => msg
                .header()
                .reply_serial()
                .and_then(|s| self.calls.get(&s.get()))
                .map_or(0, |n| n + 1),
            _ => 0,
        };
        self.write(MESSAGE, &[&answers.to_le_bytes(), msg.data().bytes()]);
    }

    /// Calls the cache is about to send, in order.
    pub(crate) fn calls(&mut self, out: &[Message]) {
        for msg in out {
            let serial = msg.primary_header().serial_num().get();
            let n = self.next_call;
            self.next_call += 1;
            self.calls.insert(serial, n);
            self.open.push((serial, n));
            self.write(CALL, &[msg.data().bytes()]);
        }
    }

    /// After a batch: once many calls are kept, forget those the core no longer waits for (a
    /// later reply to one is nothing to it, and is recorded as answering no call), so that a
    /// long recording keeps only the calls on their way. Amortised O(1) per call.
    pub(crate) fn prune(&mut self, core: &Core) {
        if self.open.len() < self.prune_at {
            return;
        }
        self.open
            .retain(|&(serial, _)| core.deadline_of(serial).is_some());
        self.calls
            .retain(|&serial, _| core.deadline_of(serial).is_some());
        self.prune_at = (self.open.len() * 2).max(MIN_PRUNE);
    }

    /// Before the core times calls out: forget the calls that cannot time out any more.
    pub(crate) fn before_expire(&mut self, core: &Core) {
        self.open
            .retain(|&(serial, _)| core.deadline_of(serial).is_some());
    }

    /// After the core timed calls out: which ones it did.
    pub(crate) fn after_expire(&mut self, core: &Core) {
        let mut expired = Vec::new();
        self.open.retain(|&(serial, n)| {
            let gone = core.deadline_of(serial).is_none();
            if gone {
                expired.push(n);
            }
            !gone
        });
        let mut payload = Vec::with_capacity(4 + 4 * expired.len());
        put_u32(&mut payload, len_u32(expired.len()));
        for n in expired {
            put_u32(&mut payload, n);
        }
        self.write(EXPIRE, &[&payload]);
    }

    pub(crate) fn reconcile(&mut self, started: bool) {
        self.write(RECONCILE, &[&[u8::from(started)]]);
    }

    /// The consumer took (or asked for) an event.
    pub(crate) fn pop(&mut self) {
        self.pops = self.pops.saturating_add(1);
    }

    /// Writes what is buffered; the first error met while recording, if any.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        self.write(POP, &[]);
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        self.out.flush()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            tracing::warn!(path = %self.path.display(), "recording incomplete: {e}");
        }
    }
}
