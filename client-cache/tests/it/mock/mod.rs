//! A mock ObjectManager service on a raw zbus connection: it answers `GetManagedObjects`,
//! `Introspect` and `GetAll` from a table the test controls, emits the signals the test asks for,
//! and misbehaves on demand (wrong types, vanishing in the middle of a load).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    thread,
};

use futures_util::StreamExt;
use netmirror_client_cache::{InterfaceDecl, Registry};
use zbus::{Connection, MessageStream, OwnedObjectPath, OwnedVariant, Variant, message::Type};

pub(crate) const SERVICE: &str = "org.example.Mock";
pub(crate) const NODE: &str = "org.example.Node";
pub(crate) const OTHER: &str = "org.example.Undeclared";

pub(crate) type Props = BTreeMap<String, OwnedVariant>;
pub(crate) type Ifaces = BTreeMap<String, Props>;

/// The declaration the tests decode `org.example.Node` with: `Peer` and `Peers` reference other
/// nodes.
pub(crate) fn registry() -> Registry {
    Registry::generic().with(InterfaceDecl::new(
        NODE,
        [
            ("Name", "s", None),
            ("Count", "u", None),
            ("Peer", "o", Some(NODE)),
            ("Peers", "ao", Some(NODE)),
        ],
    ))
}

pub(crate) fn v<'a>(x: impl Into<Variant<'a>>) -> OwnedVariant {
    OwnedVariant::try_from(x.into()).expect("no fds")
}

pub(crate) fn path(p: &str) -> OwnedObjectPath {
    OwnedObjectPath::try_from(p).expect("valid path")
}

/// A node with a name, and optional references.
pub(crate) fn node(name: &str, peer: Option<&str>, peers: &[&str]) -> Ifaces {
    let mut props = Props::new();
    props.insert("Name".into(), v(name));
    props.insert("Count".into(), v(1u32));
    if let Some(p) = peer {
        props.insert("Peer".into(), v(path(p)));
    }
    if !peers.is_empty() {
        props.insert(
            "Peers".into(),
            v(peers.iter().map(|p| path(p)).collect::<Vec<_>>()),
        );
    }
    let mut ifaces = Ifaces::new();
    ifaces.insert(NODE.into(), props);
    ifaces
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) objects: BTreeMap<String, Ifaces>,
    /// On the next GetManagedObjects: release the name first, reply (late) afterwards.
    pub(crate) vanish_on_load: bool,
    /// On the next GetManagedObjects: change `/a`'s Count to 42 and signal it, then reply.
    pub(crate) signal_before_reply: bool,
    pub(crate) loads: usize,
}

pub(crate) struct Mock {
    pub(crate) conn: Connection,
    pub(crate) state: Arc<Mutex<State>>,
    /// Held while the state changes and its signal is sent, and while a GetManagedObjects
    /// reply is built and sent: the mock behaves as a single-threaded service, whose reply
    /// never goes out after a signal of a change the reply does not hold.
    wire: Arc<Mutex<()>>,
    responder: Option<thread::JoinHandle<()>>,
}

impl Mock {
    /// Connect to `address`, serve `objects`, and take the name [`SERVICE`].
    pub(crate) fn start(address: &str, objects: BTreeMap<String, Ifaces>) -> Mock {
        Self::start_with(
            address,
            State {
                objects,
                ..State::default()
            },
        )
    }

    pub(crate) fn start_with(address: &str, state: State) -> Mock {
        let state = Arc::new(Mutex::new(state));
        // On a thread of its own: tests may start a mock from inside their own `block_on`.
        let (conn, stream) = std::thread::scope(|s| {
            s.spawn(|| {
                zbus::block_on(async {
                    let conn = zbus::connection::Builder::address(address)
                        .build()
                        .await
                        .expect("connect");
                    let stream = MessageStream::from(&conn);
                    conn.request_name(SERVICE).await.expect("name");
                    (conn, stream)
                })
            })
            .join()
            .expect("mock setup")
        });
        let wire = Arc::new(Mutex::new(()));
        let (c, s, w) = (conn.clone(), state.clone(), wire.clone());
        let responder = thread::spawn(move || zbus::block_on(serve(c, s, w, stream)));
        Mock {
            conn,
            state,
            wire,
            responder: Some(responder),
        }
    }

    pub(crate) fn unique_name(&self) -> String {
        self.conn
            .unique_name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    }

    /// Emit a signal, from a thread of its own so that tests may call this from inside their
    /// own `block_on`.
    fn emit(
        &self,
        path_: &str,
        iface: &str,
        member: &str,
        body: &(impl serde::Serialize + zbus::wire::DynamicType + Sync),
    ) {
        std::thread::scope(|s| {
            s.spawn(|| {
                zbus::block_on(
                    self.conn
                        .emit_signal(None::<&str>, path_, iface, member, body),
                )
                .expect("emit")
            });
        });
    }

    pub(crate) fn add(&self, p: &str, ifaces: Ifaces) {
        let _wire = self.wire.lock().unwrap();
        self.state
            .lock()
            .unwrap()
            .objects
            .entry(p.into())
            .or_default()
            .extend(ifaces.clone());
        self.emit(
            "/",
            "org.freedesktop.DBus.ObjectManager",
            "InterfacesAdded",
            &(path(p), ifaces),
        );
    }

    pub(crate) fn remove(&self, p: &str, ifaces: &[&str]) {
        let _wire = self.wire.lock().unwrap();
        {
            let mut st = self.state.lock().unwrap();
            if let Some(o) = st.objects.get_mut(p) {
                for i in ifaces {
                    o.remove(*i);
                }
                if o.is_empty() {
                    st.objects.remove(p);
                }
            }
        }
        let names: Vec<&str> = ifaces.to_vec();
        self.emit(
            "/",
            "org.freedesktop.DBus.ObjectManager",
            "InterfacesRemoved",
            &(path(p), names),
        );
    }

    pub(crate) fn change(&self, p: &str, iface: &str, props: Props) {
        let _wire = self.wire.lock().unwrap();
        if let Some(o) = self
            .state
            .lock()
            .unwrap()
            .objects
            .get_mut(p)
            .and_then(|o| o.get_mut(iface))
        {
            o.extend(props.clone());
        }
        self.emit(
            p,
            "org.freedesktop.DBus.Properties",
            "PropertiesChanged",
            &(iface, props, Vec::<String>::new()),
        );
    }

    /// Leave the bus: the connection closes.
    pub(crate) fn stop(mut self) {
        let conn = self.conn.clone();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _ = zbus::block_on(conn.release_name(SERVICE));
                let _ = zbus::block_on(conn.clone().close());
            });
        });
        if let Some(t) = self.responder.take() {
            let _ = t.join();
        }
    }
}

// `wire` is a std mutex held across the reply's await on purpose: the test's own threads take
// it synchronously, and this future runs alone on the mock's thread, where no holder of the
// lock waits on another.
#[allow(clippy::await_holding_lock)]
async fn serve(
    conn: Connection,
    state: Arc<Mutex<State>>,
    wire: Arc<Mutex<()>>,
    mut stream: MessageStream,
) {
    while let Some(Ok(msg)) = stream.next().await {
        if msg.message_type() != Type::MethodCall {
            continue;
        }
        let hdr = msg.header();
        let member = hdr.member().map(|m| m.to_string()).unwrap_or_default();
        let p = hdr.path().map(|p| p.to_string()).unwrap_or_default();
        match member.as_str() {
            "GetManagedObjects" if p == "/" => {
                // Until the reply is sent (the thread is the mock's own, see `Mock::wire`).
                let _wire = wire.lock().unwrap();
                let (objects, vanish) = {
                    let mut st = state.lock().unwrap();
                    st.loads += 1;
                    let vanish = std::mem::take(&mut st.vanish_on_load);
                    let objects: std::collections::HashMap<OwnedObjectPath, Ifaces> = st
                        .objects
                        .iter()
                        .map(|(k, v)| (path(k), v.clone()))
                        .collect();
                    (objects, vanish)
                };
                if vanish {
                    let _ = conn.release_name(SERVICE).await;
                }
                let early = std::mem::take(&mut state.lock().unwrap().signal_before_reply);
                let mut objects = objects;
                if early {
                    let mut props = Props::new();
                    props.insert("Count".into(), v(42u32));
                    if let Some(node) = objects.get_mut(&path("/a")).and_then(|o| o.get_mut(NODE)) {
                        node.extend(props.clone());
                    }
                    let body = (NODE, props, Vec::<String>::new());
                    let _ = conn
                        .emit_signal(
                            None::<&str>,
                            "/a",
                            "org.freedesktop.DBus.Properties",
                            "PropertiesChanged",
                            &body,
                        )
                        .await;
                }
                let _ = conn.reply(&hdr, &(objects,)).await;
            }
            "Introspect" => {
                let names: Vec<String> = state
                    .lock()
                    .unwrap()
                    .objects
                    .get(&p)
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                let mut xml = String::from("<node>");
                for name in names {
                    xml.push_str(&format!("<interface name=\"{name}\"></interface>"));
                }
                xml.push_str(
                    "<interface name=\"org.freedesktop.DBus.Properties\"></interface></node>",
                );
                let _ = conn.reply(&hdr, &(xml,)).await;
            }
            "GetAll" => {
                let iface: String = msg
                    .body()
                    .deserialize::<(String,)>()
                    .map(|t| t.0)
                    .unwrap_or_default();
                let props = state
                    .lock()
                    .unwrap()
                    .objects
                    .get(&p)
                    .and_then(|o| o.get(&iface))
                    .cloned();
                match props {
                    Some(props) => {
                        let _ = conn.reply(&hdr, &(props,)).await;
                    }
                    None => {
                        let _ = conn
                            .reply_error(
                                &hdr,
                                "org.freedesktop.DBus.Error.UnknownInterface",
                                &("no such interface",),
                            )
                            .await;
                    }
                }
            }
            _ => {
                let _ = conn
                    .reply_error(
                        &hdr,
                        "org.freedesktop.DBus.Error.UnknownMethod",
                        &("unknown",),
                    )
                    .await;
            }
        }
    }
}
