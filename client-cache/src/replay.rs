//! Replaying a recorded conversation: a fresh core, driven exactly as the live cache's was,
//! without a bus.
//!
//! Record with [`CacheBuilder::record_to`](crate::CacheBuilder::record_to) (the format is
//! described in the recorder's module, `record.rs`, and in ARCHITECTURE.md), then:
//!
//! ```no_run
//! use netmirror_client_cache::{Registry, replay::Replay};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let replay = Replay::open("load.nmrec")?;
//! // The recording's configuration, with the declarations the live cache had.
//! let builder = replay.builder().registry(Registry::network_manager());
//! let replayed = replay.run(builder)?;
//! for (path, object) in replayed.objects() {
//!     println!("{path}: {} interfaces", object.interfaces().count());
//! }
//! println!("{} events", replayed.events().len());
//! # Ok(())
//! # }
//! ```
//!
//! The replay feeds the core every recorded message, batch by batch, takes the events when the
//! live consumer took them, and times out the calls that timed out live. The core's calls are
//! matched with the recorded ones in order: a call that differs (destination, path, interface,
//! member or body), one missing, a timeout of a call the replay does not have waiting, or a
//! reconcile that starts in one and not the other is a [`ReplayError::Diverged`] naming the
//! step. Recorded replies are given the replayed calls' serials.
//!
//! One thing a replay cannot reproduce: zbus gives a message rebuilt from its bytes no receive
//! position, and a load of one object ([`Scope::Path`], or a [`Lookup`]) compares the positions
//! of its `GetAll` replies with those of signals that arrived meanwhile. A replay meeting such a
//! signal stops with [`ReplayError::Unsupported`] rather than guess; complete loads (the
//! default) replay exactly.
#![allow(unsafe_code)]

use std::{
    collections::VecDeque,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use zbus::message::{Message, Type};
use zbus::wire::{Endian, serialized};

use crate::{
    CacheBuilder, Event, FetchSpec, Lookup, Object, RefreshOn, Scope,
    core::Core,
    debug::Diagnostics,
    record::{self, registry_fingerprint},
};

/// Why a recording cannot be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The file cannot be read.
    #[error("cannot read recording {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a recording, or not of a version this crate reads.
    #[error("not a netmirror cache recording (version {})", record::VERSION)]
    NotARecording,
    /// The file ends inside the header or a record (the recording was cut short).
    #[error("recording truncated at byte {offset}: {what} needs {needed} more bytes")]
    Truncated {
        /// Where the missing bytes should start.
        offset: usize,
        /// What was being read.
        what: &'static str,
        /// How many bytes are missing.
        needed: usize,
    },
    /// The file holds something a recording cannot.
    #[error("corrupt recording at byte {offset}: {what}")]
    Corrupt {
        /// Where.
        offset: usize,
        /// What is wrong.
        what: String,
    },
    /// The configuration given for the replay differs from the recording's.
    #[error("the replay's configuration differs from the recording's: {0}")]
    Config(String),
    /// The replayed core did something else than the recorded one.
    #[error("the replay diverged from the recording at record {record}: {what}")]
    Diverged {
        /// The record (counted from 0).
        record: usize,
        /// What differs.
        what: String,
    },
    /// The recording holds something a replay cannot reproduce (see the module's docs).
    #[error("cannot replay record {record}: {what}")]
    Unsupported {
        /// The record (counted from 0).
        record: usize,
        /// Why.
        what: String,
    },
}

type Result<T> = std::result::Result<T, ReplayError>;

/// A recording's configuration: what the cache that made it was built with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedConfig {
    /// The service.
    pub service: String,
    /// The ObjectManager's path.
    pub manager_path: String,
    /// Whether the connection was a bus (rather than peer-to-peer).
    pub bus: bool,
    /// What was loaded.
    pub scope: Scope,
    /// The per-object fetches.
    pub fetches: Vec<FetchSpec>,
    /// The call timeout.
    pub timeout: Duration,
    /// The bound of the event queue.
    pub max_events: usize,
    /// The fingerprint of the interface declarations, and their number.
    pub registry: (u64, u32),
}

/// One step of the recorded driver.
#[derive(Debug)]
enum Step {
    Start,
    Begin,
    Message { answers: u32, msg: Message },
    Commit,
    Call(Message),
    Expire(Vec<u32>),
    Reconcile(bool),
    Pop(u32),
}

/// A recording, read and checked (every record, every message), ready to replay.
#[derive(Debug)]
pub struct Replay {
    config: RecordedConfig,
    steps: Vec<Step>,
}

/// Reads a recording's bytes, each read checked against the end.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let rest = self.bytes.len() - self.pos;
        if rest < n {
            return Err(ReplayError::Truncated {
                offset: self.bytes.len(),
                what,
                needed: n - rest,
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        let b = self.take(8, what)?;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn str(&mut self, what: &'static str) -> Result<String> {
        let at = self.pos;
        let n = self.u32(what)? as usize;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| ReplayError::Corrupt {
            offset: at,
            what: format!("{what} is not UTF-8"),
        })
    }

    fn bool(&mut self, what: &'static str) -> Result<bool> {
        let at = self.pos;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(ReplayError::Corrupt {
                offset: at,
                what: format!("{what} is {b}, not 0 or 1"),
            }),
        }
    }
}

/// The message in `bytes` (at `offset` in the file), checked as zbus checks one it receives.
fn message(bytes: &[u8], offset: usize) -> Result<Message> {
    let corrupt = |what: String| ReplayError::Corrupt { offset, what };
    // The primary header (12 bytes) and the fields' length say how long the message is: it
    // must be exactly the record's bytes.
    if bytes.len() < 16 {
        return Err(corrupt(format!("a message of {} bytes", bytes.len())));
    }
    let endian = match bytes[0] {
        b'l' => Endian::Little,
        b'B' => Endian::Big,
        b => return Err(corrupt(format!("a message of byte order {b:#x}"))),
    };
    let u32_at = |at: usize| {
        let b = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
        match endian {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    };
    let body_len = u64::from(u32_at(4));
    let fields_len = u64::from(u32_at(12));
    let header_len = (16 + fields_len).div_ceil(8) * 8;
    if header_len + body_len != bytes.len() as u64 {
        return Err(corrupt(format!(
            "a message whose header says {} bytes, in a record of {}",
            header_len + body_len,
            bytes.len()
        )));
    }
    let data = serialized::Data::new(bytes.to_vec(), serialized::Context::new(endian, 0));
    // SAFETY: `from_bytes` parses and checks the whole header (every field's type, name and
    // path syntax, the required fields, the padding, the file descriptors it announces), as
    // zbus's socket reader does for a message it receives; it is `unsafe` because the body is
    // not checked against its signature there. The same holds for every message a connection
    // receives (zbus checks bodies only as a bus): the body is only ever read through checked
    // decoders (zvariant's deserializer, the dbus-meta wire reader), which fail cleanly on bad
    // bytes, as they do for a hostile peer's message.
    let msg = unsafe { Message::from_bytes(data) }
        .map_err(|e| corrupt(format!("not a D-Bus message: {e}")))?;
    if msg.header().unix_fds().unwrap_or(0) > 0 {
        return Err(corrupt(
            "a message carrying file descriptors (not recordable)".into(),
        ));
    }
    Ok(msg)
}

/// `msg` with its reply-serial field set to `serial` (a copy: only those 4 bytes change).
fn with_reply_serial(msg: &Message, serial: u32) -> Option<Message> {
    let bytes = msg.data().bytes();
    let endian = msg.data().context().endian();
    let read = |at: usize| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(match endian {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    };
    let end = 16 + read(12)? as usize;
    let mut at = 16;
    // Header fields: (code, variant) structures, each 8-aligned; the variant's signature is one
    // basic type: a string or object path (4-aligned u32 length, bytes, 0), a signature (u8
    // length, bytes, 0), or a u32 (4-aligned).
    while at < end {
        let code = *bytes.get(at)?;
        let sig_len = *bytes.get(at + 1)? as usize;
        let sig = *bytes.get(at + 2)?;
        let mut pos = at + 2 + sig_len + 1;
        match sig {
            b's' | b'o' => {
                pos = pos.div_ceil(4) * 4;
                pos += 4 + read(pos)? as usize + 1;
            }
            b'g' => pos += 1 + *bytes.get(pos)? as usize + 1,
            b'u' => {
                pos = pos.div_ceil(4) * 4;
                if code == 5 {
                    let mut out = bytes.to_vec();
                    let new = match endian {
                        Endian::Little => serial.to_le_bytes(),
                        Endian::Big => serial.to_be_bytes(),
                    };
                    out.get_mut(pos..pos + 4)?.copy_from_slice(&new);
                    let data = serialized::Data::new(out, msg.data().context());
                    // SAFETY: the bytes of a message `from_bytes` accepted, with a u32 field's
                    // value changed: the header stays valid (see `message`).
                    return unsafe { Message::from_bytes(data) }.ok();
                }
                pos += 4;
            }
            _ => return None,
        }
        at = pos.div_ceil(8) * 8;
    }
    None
}

impl Replay {
    /// Reads and checks the recording at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| ReplayError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_bytes(&bytes)
    }

    /// Reads and checks a recording.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut c = Cursor { bytes, pos: 0 };
        let magic = c.take(8, "the magic bytes")?;
        if magic != record::MAGIC {
            return Err(ReplayError::NotARecording);
        }
        if c.u32("the version")? != record::VERSION {
            return Err(ReplayError::NotARecording);
        }
        let service = c.str("the service")?;
        let manager_path = c.str("the manager's path")?;
        let bus = c.bool("the bus flag")?;
        let at = c.pos;
        let scope = match c.u8("the scope")? {
            0 => Scope::All,
            1 => Scope::Path(c.str("the scope's path")?),
            2 => Scope::Lookup(Lookup {
                path: c.str("the lookup's path")?,
                interface: c.str("the lookup's interface")?,
                method: c.str("the lookup's method")?,
                arg: c.str("the lookup's argument")?,
                fallback: (
                    c.str("the lookup's fallback interface")?,
                    c.str("the lookup's fallback property")?,
                ),
            }),
            b => {
                return Err(ReplayError::Corrupt {
                    offset: at,
                    what: format!("scope {b}"),
                });
            }
        };
        let n = c.u32("the number of fetches")?;
        let mut fetches = Vec::new();
        for _ in 0..n {
            let interface = c.str("a fetch's interface")?;
            let method = c.str("a fetch's method")?;
            let has = c.bool("a fetch's refresh flag")?;
            let refresh = c.str("a fetch's refresh signal")?;
            let refresh_on = if c.bool("a fetch's refresh-on flag")? {
                let interface = c.str("a refresh-on interface")?;
                let property = c.str("a refresh-on property")?;
                let reference = c.str("a refresh-on reference")?;
                let n = c.u32("the number of refresh-on values")?;
                let values = (0..n)
                    .map(|_| c.u32("a refresh-on value"))
                    .collect::<Result<Vec<u32>>>()?;
                Some(RefreshOn {
                    interface,
                    property,
                    reference,
                    values,
                })
            } else {
                None
            };
            fetches.push(FetchSpec {
                interface,
                method,
                refresh: has.then_some(refresh),
                refresh_on,
            });
        }
        let timeout = Duration::from_millis(c.u64("the timeout")?);
        let max_events = usize::try_from(c.u64("the event bound")?).unwrap_or(usize::MAX);
        let registry = (
            c.u64("the declarations' fingerprint")?,
            c.u32("the number of declarations")?,
        );
        let config = RecordedConfig {
            service,
            manager_path,
            bus,
            scope,
            fetches,
            timeout,
            max_events,
            registry,
        };
        let mut steps = Vec::new();
        while c.pos < bytes.len() {
            let at = c.pos;
            let kind = c.u8("a record's kind")?;
            let len = c.u32("a record's length")? as usize;
            let payload = c.take(len, "a record")?;
            let corrupt = |what: String| ReplayError::Corrupt { offset: at, what };
            let empty = |step: Step| {
                if payload.is_empty() {
                    Ok(step)
                } else {
                    Err(corrupt(format!(
                        "record {:?} with {len} bytes, not 0",
                        kind as char
                    )))
                }
            };
            let mut p = Cursor {
                bytes: payload,
                pos: 0,
            };
            let step = match kind {
                record::START => empty(Step::Start)?,
                record::BEGIN => empty(Step::Begin)?,
                record::COMMIT => empty(Step::Commit)?,
                record::MESSAGE => {
                    let answers = p.u32("a message's call").map_err(|_| {
                        corrupt("a message record shorter than its call number".into())
                    })?;
                    let msg = message(&payload[4..], at + 9)?;
                    Step::Message { answers, msg }
                }
                record::CALL => {
                    let msg = message(payload, at + 5)?;
                    if msg.message_type() != Type::MethodCall {
                        return Err(corrupt(format!(
                            "a sent message of type {:?}, not a call",
                            msg.message_type()
                        )));
                    }
                    Step::Call(msg)
                }
                record::EXPIRE => {
                    let n = p.u32("the number of calls timed out").map_err(|_| {
                        corrupt("a timeout record without its number of calls".into())
                    })? as usize;
                    if payload.len() != 4 + 4 * n {
                        return Err(corrupt(format!(
                            "a timeout record of {n} calls in {len} bytes"
                        )));
                    }
                    let mut calls = Vec::with_capacity(n);
                    for _ in 0..n {
                        calls.push(p.u32("a call timed out")?);
                    }
                    Step::Expire(calls)
                }
                record::RECONCILE => {
                    if len != 1 || payload[0] > 1 {
                        return Err(corrupt("a reconcile record not of one 0 or 1".into()));
                    }
                    Step::Reconcile(payload[0] == 1)
                }
                record::POP => {
                    if len != 4 {
                        return Err(corrupt(format!("an events record of {len} bytes, not 4")));
                    }
                    Step::Pop(p.u32("events taken")?)
                }
                other => return Err(corrupt(format!("unknown record kind {other:#x}"))),
            };
            steps.push(step);
        }
        // Every reply must answer a call recorded before it, with that call's serial.
        let mut serials = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            let bad = |what: String| ReplayError::Corrupt {
                offset: 0,
                what: format!("record {i}: {what}"),
            };
            match step {
                Step::Call(m) => serials.push(m.primary_header().serial_num().get()),
                Step::Message { answers, msg } if *answers > 0 => {
                    let call = *answers as usize - 1;
                    let Some(&serial) = serials.get(call) else {
                        return Err(bad(format!("a reply to call {call}, not sent yet")));
                    };
                    if msg.header().reply_serial().map(|s| s.get()) != Some(serial) {
                        return Err(bad(format!("a reply to call {call} of another serial")));
                    }
                }
                Step::Expire(calls) => {
                    if let Some(&c) = calls.iter().find(|&&c| c as usize >= serials.len()) {
                        return Err(bad(format!("a timeout of call {c}, not sent yet")));
                    }
                }
                _ => {}
            }
        }
        Ok(Self { config, steps })
    }

    /// The recording's configuration.
    pub fn config(&self) -> &RecordedConfig {
        &self.config
    }

    /// A builder with the recording's configuration (service, ObjectManager path, scope,
    /// fetches, timeout, event bound), without interface declarations: add the ones the live
    /// cache had with [`CacheBuilder::registry`].
    pub fn builder(&self) -> CacheBuilder {
        let c = &self.config;
        let mut b = CacheBuilder::new(c.service.as_str())
            .manager_path(c.manager_path.as_str())
            .timeout(c.timeout)
            .max_queued_events(c.max_events);
        b.cfg.scope = c.scope.clone();
        b.cfg.fetches = c.fetches.clone();
        b
    }

    /// Drives a fresh core with `builder`'s configuration (which must be the recording's, see
    /// [`Replay::builder`]) through the recorded conversation.
    pub fn run(&self, builder: CacheBuilder) -> Result<Replayed> {
        let cfg = builder.cfg;
        let rec = &self.config;
        let differs = |what: &str, ours: String, theirs: String| {
            Err(ReplayError::Config(format!(
                "{what}: {ours} here, {theirs} in the recording"
            )))
        };
        if cfg.service != rec.service {
            return differs("service", cfg.service, rec.service.clone());
        }
        if cfg.manager_path != rec.manager_path {
            return differs("manager path", cfg.manager_path, rec.manager_path.clone());
        }
        if cfg.scope != rec.scope {
            return differs(
                "scope",
                format!("{:?}", cfg.scope),
                format!("{:?}", rec.scope),
            );
        }
        if cfg.fetches != rec.fetches {
            return differs(
                "fetches",
                format!("{:?}", cfg.fetches),
                format!("{:?}", rec.fetches),
            );
        }
        let ours = registry_fingerprint(&cfg.registry);
        if ours != rec.registry {
            return differs(
                "interface declarations",
                format!("{} ({:#x})", ours.1, ours.0),
                format!("{} ({:#x})", rec.registry.1, rec.registry.0),
            );
        }
        let by_path = !matches!(cfg.scope, Scope::All);
        let mut core = Core::new(cfg, rec.bus);
        let mut made: VecDeque<Message> = VecDeque::new();
        // The replay's serial of each recorded call.
        let mut serials: Vec<u32> = Vec::new();
        // GetAll calls not answered yet (a per-object load).
        let mut get_all_open: Vec<usize> = Vec::new();
        let mut events = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            let diverged = |what: String| ReplayError::Diverged { record: i, what };
            match step {
                Step::Start => core.start(),
                Step::Begin => core.begin_batch(),
                Step::Commit => core.commit(),
                Step::Message { answers, msg } => {
                    let reply = matches!(msg.message_type(), Type::MethodReturn | Type::Error);
                    let msg = if reply {
                        let serial = match answers.checked_sub(1) {
                            Some(call) => {
                                let call = call as usize;
                                get_all_open.retain(|&c| c != call);
                                serials[call]
                            }
                            // Not a reply to the cache: a serial none of its calls has.
                            None => u32::MAX,
                        };
                        with_reply_serial(msg, serial).ok_or_else(|| ReplayError::Corrupt {
                            offset: 0,
                            what: format!("record {i}: a reply without a reply serial"),
                        })?
                    } else {
                        if by_path
                            && !get_all_open.is_empty()
                            && msg.message_type() == Type::Signal
                            && msg
                                .header()
                                .sender()
                                .is_some_and(|s| s.as_str() != "org.freedesktop.DBus")
                        {
                            return Err(ReplayError::Unsupported {
                                record: i,
                                what: "a signal arrived while a per-object load waited for \
                                       its GetAll replies, and a replay has no receive \
                                       positions to order them by"
                                    .into(),
                            });
                        }
                        msg.clone()
                    };
                    core.handle(&msg);
                }
                Step::Call(recorded) => {
                    made.extend(std::mem::take(&mut core.out));
                    let n = serials.len();
                    let Some(ours) = made.pop_front() else {
                        return Err(diverged(format!(
                            "the recording sent call {n} ({}), the replay nothing",
                            describe(recorded)
                        )));
                    };
                    if let Some(what) = call_difference(recorded, &ours) {
                        return Err(diverged(format!(
                            "call {n} differs: {what}: recorded {}, replayed {}",
                            describe(recorded),
                            describe(&ours)
                        )));
                    }
                    if ours
                        .header()
                        .member()
                        .is_some_and(|m| m.as_str() == "GetAll")
                    {
                        get_all_open.push(n);
                    }
                    serials.push(ours.primary_header().serial_num().get());
                }
                Step::Expire(calls) => {
                    let mut latest = None;
                    for &c in calls {
                        let at = core.deadline_of(serials[c as usize]).ok_or_else(|| {
                            diverged(format!("call {c} timed out live, and is not waiting here"))
                        })?;
                        latest = latest.max(Some(at));
                    }
                    if let Some(at) = latest {
                        // Deadlines follow the order calls are sent: the same calls time out.
                        core.expire(at);
                        if let Some(&c) = calls
                            .iter()
                            .find(|&&c| core.deadline_of(serials[c as usize]).is_some())
                        {
                            return Err(diverged(format!("call {c} did not time out")));
                        }
                    }
                }
                Step::Reconcile(started) => {
                    let ours = core.reconcile();
                    if ours != *started {
                        return Err(diverged(format!(
                            "a reconcile {} live, {} here",
                            if *started { "started" } else { "did not start" },
                            if ours { "started" } else { "did not start" },
                        )));
                    }
                }
                Step::Pop(n) => {
                    // A `pop` that finds no event changes nothing, so neither would the rest
                    // of the record's: stop at the first (a damaged count of four billion
                    // would otherwise spin for minutes).
                    for _ in 0..*n {
                        let Some(ev) = core.pop_event() else { break };
                        events.push(ev);
                    }
                }
            }
        }
        made.extend(std::mem::take(&mut core.out));
        Ok(Replayed {
            core,
            events,
            unsent: made.len(),
        })
    }
}

/// A call, for messages.
fn describe(msg: &Message) -> String {
    let h = msg.header();
    format!(
        "{} {} {}.{}",
        h.destination().map(|d| d.to_string()).unwrap_or_default(),
        h.path().map(|p| p.as_str()).unwrap_or(""),
        h.interface().map(|i| i.as_str()).unwrap_or(""),
        h.member().map(|m| m.as_str()).unwrap_or(""),
    )
}

/// What differs between a recorded call and the replay's, if anything.
fn call_difference(recorded: &Message, ours: &Message) -> Option<&'static str> {
    let (a, b) = (recorded.header(), ours.header());
    if a.destination() != b.destination() {
        return Some("destination");
    }
    if a.path() != b.path() {
        return Some("path");
    }
    if a.interface() != b.interface() {
        return Some("interface");
    }
    if a.member() != b.member() {
        return Some("member");
    }
    let (x, y) = (recorded.body(), ours.body());
    if x.signature() != y.signature() || x.data().bytes() != y.data().bytes() {
        return Some("arguments");
    }
    None
}

/// The outcome of a replay: the cache's state at the end of the recording, and the events the
/// live consumer took.
pub struct Replayed {
    core: Core,
    events: Vec<Event>,
    unsent: usize,
}

impl std::fmt::Debug for Replayed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replayed")
            .field("objects", &self.len())
            .field("events", &self.events.len())
            .field("owner", &self.owner())
            .finish_non_exhaustive()
    }
}

impl Replayed {
    /// The events the live cache handed out, in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The events the live cache had queued and not handed out when the recording ended.
    pub fn pending_events(&self) -> impl Iterator<Item = &Event> {
        self.core.queued_iter()
    }

    /// Every visible object, with its path, in no particular order.
    pub fn objects(&self) -> impl Iterator<Item = (&str, &Object)> {
        let store = &self.core.store;
        store.present().filter_map(move |id| {
            let slot = store.slot(id);
            slot.visible
                .then_some(())
                .and_then(|()| Some((&*slot.path, slot.obj.as_ref()?)))
        })
    }

    /// The visible object at `path`.
    pub fn object(&self, path: &str) -> Option<&Object> {
        let store = &self.core.store;
        let slot = store.slot(store.id(path)?);
        slot.visible.then_some(())?;
        slot.obj.as_ref()
    }

    /// The path of every visible object, shared.
    pub fn paths(&self) -> Vec<Arc<str>> {
        let store = &self.core.store;
        store
            .present()
            .filter(|&id| store.slot(id).visible)
            .map(|id| store.slot(id).path.clone())
            .collect()
    }

    /// How many objects are visible.
    pub fn len(&self) -> usize {
        self.objects().count()
    }

    /// Whether no object is visible.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The unique name of the service's owner at the end.
    pub fn owner(&self) -> Option<&str> {
        self.core.owner()
    }

    /// Whether the last (re)load was complete at the end.
    pub fn is_loaded(&self) -> bool {
        self.core.is_loaded()
    }

    /// The core's counters and warnings at the end.
    pub fn diagnostics(&self) -> &Diagnostics {
        self.core.diagnostics()
    }

    /// Calls the core had made but the live cache had not sent when the recording ended.
    pub fn unsent_calls(&self) -> usize {
        self.unsent
    }
}
