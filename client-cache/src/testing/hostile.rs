//! [`HostileService`]: an ObjectManager service that misbehaves on demand, for testing what a
//! client does when a service never answers, answers with an error or the wrong signature,
//! floods it with signals, or announces property names without end.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex};
use std::thread;

use futures_util::StreamExt;
use zbus::message::Type;
use zbus::{Connection, Message, MessageStream, OwnedObjectPath, OwnedVariant};

/// Properties of one interface.
pub type Props = BTreeMap<String, OwnedVariant>;
/// Interfaces of one object, with their properties.
pub type Ifaces = BTreeMap<String, Props>;
/// An `a{sa{sv}}` reply, such as NetworkManager's `GetSettings`.
pub type Settings = BTreeMap<String, Props>;

const OM: &str = "org.freedesktop.DBus.ObjectManager";
const PROPS: &str = "org.freedesktop.DBus.Properties";

/// How the service answers a method (by member name, any interface and path).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// As a well-behaved service would (the default).
    Normally,
    /// Never: the call stays unanswered.
    Never,
    /// With a D-Bus error of this name and message.
    Error {
        /// The error name.
        name: String,
        /// Its message.
        message: String,
    },
    /// With a body of the wrong signature: an empty `a{sv}` (an empty `as` for `GetAll`, whose
    /// reply is an `a{sv}`).
    WrongSignature,
    /// Not yet: the call is kept (see [`HostileService::held`]) for the test to answer.
    Hold,
}

#[derive(Debug, Default)]
struct State {
    objects: BTreeMap<String, Ifaces>,
    answers: HashMap<String, Answer>,
    /// Replies to per-object methods (`GetSettings`), by member and path.
    bodies: HashMap<String, HashMap<String, Settings>>,
    held: Vec<Message>,
}

/// An ObjectManager service on a raw zbus connection, owning a bus name, that serves
/// `GetManagedObjects` (at its manager path), `GetAll`, `Get` and `Introspect` from a table and
/// misbehaves as the test says (see [`Answer`]).
///
/// ```no_run
/// use netmirror_client_cache::testing::{Answer, HostileService, PrivateBus};
///
/// let bus = PrivateBus::start()?;
/// let service = HostileService::start(bus.address(), "org.example.Hostile", "/")?;
/// service.answer("GetManagedObjects", Answer::Never);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct HostileService {
    conn: Connection,
    name: String,
    manager: String,
    state: Arc<Mutex<State>>,
    server: Option<thread::JoinHandle<()>>,
}

/// Runs `f` to completion on a thread of its own (tests may call the fixture from inside their
/// own `block_on`).
fn on_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn io_err(what: &str, err: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("hostile service: {what}: {err}"))
}

impl HostileService {
    /// Connects to the bus at `address`, takes `name`, and serves an ObjectManager at
    /// `manager` with no objects yet.
    pub fn start(address: &str, name: &str, manager: &str) -> io::Result<Self> {
        let (conn, stream) = on_thread(|| {
            zbus::block_on(async {
                let conn = zbus::connection::Builder::address(address)
                    .build()
                    .await
                    .map_err(|e| io_err("connect", e))?;
                let stream = MessageStream::from(&conn);
                conn.request_name(name)
                    .await
                    .map_err(|e| io_err("request name", e))?;
                Ok::<_, io::Error>((conn, stream))
            })
        })?;
        let state = Arc::new(Mutex::new(State::default()));
        let server = {
            let (conn, state, manager) = (conn.clone(), state.clone(), manager.to_owned());
            thread::Builder::new()
                .name("hostile-service".into())
                .spawn(move || zbus::block_on(serve(conn, state, manager, stream)))?
        };
        Ok(Self {
            conn,
            name: name.to_owned(),
            manager: manager.to_owned(),
            state,
            server: Some(server),
        })
    }

    /// The service's unique name on the bus.
    pub fn unique_name(&self) -> String {
        self.conn
            .unique_name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    }

    /// How to answer calls of `member` from now on.
    pub fn answer(&self, member: &str, answer: Answer) {
        self.lock().answers.insert(member.to_owned(), answer);
    }

    /// The reply to `member` (a method with no arguments returning `a{sa{sv}}`, such as
    /// NetworkManager's `GetSettings`) on the object at `path`.
    pub fn set_reply(&self, member: &str, path: &str, body: Settings) {
        self.lock()
            .bodies
            .entry(member.to_owned())
            .or_default()
            .insert(path.to_owned(), body);
    }

    /// Puts objects in the table without a signal (what the next `GetManagedObjects` returns).
    pub fn set_objects(&self, objects: impl IntoIterator<Item = (String, Ifaces)>) {
        self.lock().objects.extend(objects);
    }

    /// The calls held so far by [`Answer::Hold`], taken.
    pub fn held(&self) -> Vec<Message> {
        std::mem::take(&mut self.lock().held)
    }

    /// Answers a held call with `body`.
    pub fn reply<B>(&self, call: &Message, body: &B) -> io::Result<()>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType + Sync,
    {
        let hdr = call.header();
        on_thread(|| zbus::block_on(self.conn.reply(&hdr, body)))
            .map(drop)
            .map_err(|e| io_err("reply", e))
    }

    /// A snapshot of the table: what `GetManagedObjects` would return now.
    pub fn objects(&self) -> BTreeMap<String, Ifaces> {
        self.lock().objects.clone()
    }

    /// Adds `count` objects `PREFIX/0`, `PREFIX/1`, ... with `ifaces` each, one
    /// `InterfacesAdded` per object, as fast as the bus takes them.
    pub fn flood_added(&self, prefix: &str, count: usize, ifaces: &Ifaces) -> io::Result<()> {
        on_thread(|| {
            zbus::block_on(async {
                for i in 0..count {
                    let p = format!("{prefix}/{i}");
                    let path = OwnedObjectPath::try_from(p.as_str()).map_err(|e| io_err(&p, e))?;
                    // As a service does: the table changes, then the signal says so.
                    self.lock().objects.insert(p, ifaces.clone());
                    self.emit_added(path, ifaces).await?;
                }
                Ok(())
            })
        })
    }

    /// Gives the object at `path` the interfaces `ifaces` (an object that had none is new),
    /// with one `InterfacesAdded`, as udisks2 does when a block device gets a filesystem.
    pub fn add_interfaces(&self, path: &str, ifaces: &Ifaces) -> io::Result<()> {
        let object_path = OwnedObjectPath::try_from(path).map_err(|e| io_err(path, e))?;
        on_thread(|| {
            zbus::block_on(async {
                self.lock()
                    .objects
                    .entry(path.to_owned())
                    .or_default()
                    .extend(ifaces.clone());
                self.emit_added(object_path, ifaces).await
            })
        })
    }

    /// Sends `InterfacesAdded` for `path` with `ifaces`.
    async fn emit_added(&self, path: OwnedObjectPath, ifaces: &Ifaces) -> io::Result<()> {
        self.conn
            .emit_signal(
                None::<&str>,
                self.manager.as_str(),
                OM,
                "InterfacesAdded",
                &(path, ifaces),
            )
            .await
            .map_err(|e| io_err("emit", e))
    }

    /// Removes objects with one `InterfacesRemoved` each.
    pub fn flood_removed(&self, paths: &[String]) -> io::Result<()> {
        on_thread(|| {
            zbus::block_on(async {
                for p in paths {
                    let Some(gone) = self.lock().objects.remove(p) else {
                        continue;
                    };
                    let ifaces: Vec<String> = gone.into_keys().collect();
                    let path = OwnedObjectPath::try_from(p.as_str()).map_err(|e| io_err(p, e))?;
                    self.conn
                        .emit_signal(
                            None::<&str>,
                            self.manager.as_str(),
                            OM,
                            "InterfacesRemoved",
                            &(path, ifaces),
                        )
                        .await
                        .map_err(|e| io_err("emit", e))?;
                }
                Ok(())
            })
        })
    }

    /// On the object at `path` (which must have `iface`), announces `count` new properties
    /// named `PREFIX0`, `PREFIX1`, ... one at a time, each invalidated by the next signal: a
    /// service whose property names never end. The table ends as it began.
    pub fn churn_property_names(
        &self,
        path: &str,
        iface: &str,
        prefix: &str,
        count: usize,
    ) -> io::Result<()> {
        self.churn_property_name_batches(path, iface, prefix, count, 1)
    }

    /// As [`churn_property_names`](Self::churn_property_names), `batch` names per signal:
    /// each `PropertiesChanged` announces the next `batch` new names and invalidates the
    /// previous signal's, as fast as the bus takes them. The table ends as it began.
    pub fn churn_property_name_batches(
        &self,
        path: &str,
        iface: &str,
        prefix: &str,
        count: usize,
        batch: usize,
    ) -> io::Result<()> {
        let batch = batch.max(1);
        on_thread(|| {
            zbus::block_on(async {
                let mut previous: Vec<String> = Vec::new();
                let mut next = 0;
                loop {
                    let mut props: HashMap<String, OwnedVariant> = HashMap::new();
                    let end = (next + batch).min(count);
                    for i in next..end {
                        props.insert(format!("{prefix}{i}"), OwnedVariant::from(i as u32));
                    }
                    next = end;
                    if props.is_empty() && previous.is_empty() {
                        return Ok(());
                    }
                    let invalidated = std::mem::take(&mut previous);
                    self.conn
                        .emit_signal(
                            None::<&str>,
                            path,
                            PROPS,
                            "PropertiesChanged",
                            &(iface, &props, invalidated),
                        )
                        .await
                        .map_err(|e| io_err("emit", e))?;
                    previous = props.into_keys().collect();
                }
            })
        })
    }

    /// Leaves the bus (the connection closes) and stops serving.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        let conn = self.conn.clone();
        let name = self.name.clone();
        on_thread(|| {
            let _ = zbus::block_on(conn.release_name(name.as_str()));
            let _ = zbus::block_on(conn.close());
        });
        if let Some(t) = self.server.take() {
            let _ = t.join();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for HostileService {
    fn drop(&mut self) {
        if self.server.is_some() {
            self.shut_down();
        }
    }
}

/// A reply body of any type, built into a method return.
trait ErasedBody {
    fn reply_to(&self, call: &zbus::message::Header<'_>) -> zbus::Result<Message>;
}

impl<T: serde::Serialize + zbus::zvariant::DynamicType> ErasedBody for T {
    fn reply_to(&self, call: &zbus::message::Header<'_>) -> zbus::Result<Message> {
        Message::method_return(call).build(self)
    }
}

fn object_path(p: &str) -> Option<OwnedObjectPath> {
    OwnedObjectPath::try_from(p).ok()
}

async fn serve(
    conn: Connection,
    state: Arc<Mutex<State>>,
    manager: String,
    mut stream: MessageStream,
) {
    while let Some(Ok(msg)) = stream.next().await {
        if msg.message_type() != Type::MethodCall {
            continue;
        }
        let hdr = msg.header();
        let member = hdr.member().map(|m| m.to_string()).unwrap_or_default();
        let path = hdr.path().map(|p| p.to_string()).unwrap_or_default();
        let answer = {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            let answer = st.answers.get(&member).cloned().unwrap_or(Answer::Normally);
            if answer == Answer::Hold {
                st.held.push(msg.clone());
            }
            answer
        };
        let ret = |body: &dyn ErasedBody| body.reply_to(&hdr);
        let error = |name: &str, text: String| Message::error(&hdr, name).build(&(text,));
        let reply = match answer {
            Answer::Never | Answer::Hold => continue,
            Answer::Error { name, message } => error(&name, message),
            Answer::WrongSignature if member == "GetAll" => ret(&(Vec::<String>::new(),)),
            Answer::WrongSignature => {
                let body: HashMap<String, OwnedVariant> = HashMap::new();
                ret(&(body,))
            }
            Answer::Normally => {
                let st = state.lock().unwrap_or_else(|p| p.into_inner());
                let arg = || msg.body().deserialize::<(String,)>().map(|t| t.0).ok();
                match member.as_str() {
                    "GetManagedObjects" if path == manager => {
                        let objects: HashMap<OwnedObjectPath, &Ifaces> = st
                            .objects
                            .iter()
                            .filter_map(|(k, v)| Some((object_path(k)?, v)))
                            .collect();
                        ret(&(objects,))
                    }
                    "GetAll" => match st.objects.get(&path).and_then(|o| o.get(&arg()?)) {
                        Some(props) => ret(&(props,)),
                        None => error(
                            "org.freedesktop.DBus.Error.UnknownInterface",
                            "no such interface".into(),
                        ),
                    },
                    "Introspect" => {
                        let mut xml = String::from("<node>");
                        for name in st.objects.get(&path).into_iter().flat_map(|o| o.keys()) {
                            xml.push_str(&format!("<interface name=\"{name}\"/>"));
                        }
                        xml.push_str("</node>");
                        ret(&(xml,))
                    }
                    other => match st.bodies.get(other).and_then(|b| b.get(&path)) {
                        Some(body) => ret(&(body,)),
                        None => error(
                            "org.freedesktop.DBus.Error.UnknownMethod",
                            format!("no method {other} at {path}"),
                        ),
                    },
                }
            }
        };
        let result = match reply {
            Ok(reply) => conn.send(&reply).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            tracing::debug!("hostile service: reply failed: {e}");
        }
    }
}
