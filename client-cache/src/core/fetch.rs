//! Per-object calls ([`FetchSpec`](super::FetchSpec)): made for every object with the
//! fetch's interface before the object becomes visible, and again on the interface's refresh
//! signal (once more after the reply when a refresh arrives while one is on its way).

use std::sync::Arc;

use zbus::message::Message;

use super::{
    Call, Core,
    decode::{ErrorReply, body_value, body_value_keeping, reply_serial},
};
use crate::{debug::WarningKind, object::Fetch, store::ObjId};

impl Core {
    /// A signal of the owner that is none of the ObjectManager's: a fetch's refresh signal
    /// fetches again (or marks the fetch on its way to be repeated).
    pub(super) fn on_refresh_signal(&mut self, path: &str, iface: &str, member: &str) {
        let refresh = self
            .cfg
            .fetches
            .iter()
            .any(|f| f.interface == iface && f.refresh.as_deref() == Some(member));
        if refresh {
            self.fetch_again(path);
        }
    }

    /// Fetches the object at `path` again, if it has a fetch's interface (or marks the fetch
    /// on its way to be repeated).
    pub(super) fn fetch_again(&mut self, path: &str) {
        let Some(id) = self
            .store
            .id(path)
            .filter(|&id| self.store.slot(id).obj.is_some())
        else {
            return;
        };
        let on_its_way = self
            .store
            .slot(id)
            .obj
            .as_ref()
            .is_some_and(|o| o.fetch_serial != 0);
        if on_its_way {
            if let Some(o) = self.store.slot_mut(id).obj.as_mut() {
                o.refetch = true;
            }
        } else {
            self.send_fetch(id);
        }
    }

    pub(super) fn send_fetch(&mut self, id: ObjId) {
        let path = self.store.slot(id).path.clone();
        let Some(obj) = self.store.slot(id).obj.as_ref() else {
            return;
        };
        let Some(spec) = self
            .cfg
            .fetches
            .iter()
            .find(|f| obj.has_interface(&f.interface))
            .cloned()
        else {
            return;
        };
        let dest = self.service_dest();
        let before = self.out.len();
        self.call(
            &dest,
            &path,
            &spec.interface,
            &spec.method,
            &[],
            Call::Fetch(id, path.clone()),
        );
        let Some(serial) = self
            .out
            .get(before)
            .map(|m| m.primary_header().serial_num().get())
        else {
            return;
        };
        if let Some(o) = self.store.slot_mut(id).obj.as_mut() {
            o.fetch_serial = serial;
            o.refetch = false;
            // A new object waits for its data; a refreshing one keeps its old data meanwhile.
            if o.fetch == Fetch::None {
                o.fetch = Fetch::Pending;
            }
        }
    }

    /// A fetch's reply: kept with the object (a failure too), unless a newer fetch is on its way.
    pub(super) fn on_fetch(
        &mut self,
        id: ObjId,
        path: Arc<str>,
        msg: &Message,
        error: Option<&ErrorReply>,
    ) {
        let slot = self.store.slot(id);
        let serial = reply_serial(msg);
        let current =
            slot.path == path && slot.obj.as_ref().is_some_and(|o| o.fetch_serial == serial);
        if !current {
            return;
        }
        let decoded = || match &self.cfg.keep_fetched {
            Some(keep) => body_value_keeping(msg, keep),
            None => body_value(msg),
        };
        let fetched = match error {
            Some(e) => {
                // A permission check is the caller's business, not a protocol problem.
                if !e.is_denied() {
                    self.rep.warn(
                        WarningKind::CallFailed,
                        format_args!("fetch for {path}: {}", e.name),
                    );
                }
                Fetch::Failed(e.name.as_str().into())
            }
            None => match decoded() {
                Ok(v) => Fetch::Done(v),
                Err(e) => {
                    self.rep.warn(
                        WarningKind::Malformed,
                        format_args!("fetch for {path}: {e}"),
                    );
                    Fetch::Failed("malformed reply".into())
                }
            },
        };
        if self.store_fetch(id, fetched) == Some(true) {
            self.send_fetch(id);
        }
    }

    /// Puts a fetch's outcome in object `id` (a visible object's former result goes to the
    /// batch, for its event). Returns whether another fetch was asked for meanwhile (the ask is
    /// cleared), or `None` when the object is gone.
    pub(super) fn store_fetch(&mut self, id: ObjId, fetched: Fetch) -> Option<bool> {
        let visible = self.store.slot(id).visible;
        let obj = self.store.slot_mut(id).obj.as_mut()?;
        obj.fetch_serial = 0;
        let old = std::mem::replace(&mut obj.fetch, fetched);
        let refetch = std::mem::take(&mut obj.refetch);
        if visible {
            let old = match old {
                Fetch::Done(v) => Some(v),
                _ => None,
            };
            self.batch.refetched.push((id, old));
        }
        self.store.touch(id);
        self.batch.dirty = true;
        Some(refetch)
    }
}

#[cfg(test)]
mod tests {
    use crate::core::{FetchSpec, RefreshOn, test_support::*};
    use crate::{Value, object::Fetch};

    const S: &str = "org.example.Settings";

    fn fetching_core() -> crate::core::Core {
        let mut cfg = config();
        cfg.fetches.push(FetchSpec {
            interface: S.into(),
            method: "GetSettings".into(),
            refresh: Some("Updated".into()),
            refresh_on: None,
        });
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        core
    }

    fn updated(path: &str) -> zbus::Message {
        signal(path, S, "Updated").sender(OWNER).build(&()).unwrap()
    }

    fn fetched(core: &crate::core::Core, path: &str) -> Option<Fetch> {
        let id = core.store.id(path)?;
        Some(core.store.slot(id).obj.as_ref()?.fetch.clone())
    }

    #[test]
    fn an_object_waits_for_its_fetch_and_refreshes_on_its_signal() {
        let mut core = fetching_core();
        let gmo = take_call(&mut core, "GetManagedObjects");
        core.out.clear();
        core.handle(
            &reply_to(&gmo)
                .build(&(managed_objects(&[("/s/1", &[(S, &[])])]),))
                .unwrap(),
        );
        core.commit();
        // Not visible, and not loaded, until the fetch is in.
        assert!(drain(&mut core).is_empty());
        assert_eq!(fetched(&core, "/s/1"), Some(Fetch::Pending));
        let get = take_call(&mut core, "GetSettings");
        core.handle(&reply_to(&get).build(&(7u32,)).unwrap());
        core.commit();
        assert_eq!(
            drain(&mut core),
            [
                Event::Added {
                    path: "/s/1".into()
                },
                Event::Loaded
            ]
        );
        assert_eq!(fetched(&core, "/s/1"), Some(Fetch::Done(Value::U32(7))));
        // The refresh signal fetches again; a second one while it is on its way is remembered.
        core.handle(&updated("/s/1"));
        core.handle(&updated("/s/1"));
        core.commit();
        let get = take_call(&mut core, "GetSettings");
        assert!(core.out.is_empty(), "one fetch at a time");
        core.handle(&reply_to(&get).build(&(8u32,)).unwrap());
        core.commit();
        assert_eq!(
            drain(&mut core),
            [Event::Refetched {
                path: "/s/1".into(),
                old: Some(Value::U32(7)),
                new: Some(Value::U32(8))
            }]
        );
        let again = take_call(&mut core, "GetSettings");
        // Denied: kept as a failed fetch, without a warning.
        core.handle(&error_to(
            &again,
            OWNER,
            "org.freedesktop.DBus.Error.AccessDenied",
        ));
        core.commit();
        assert_eq!(
            fetched(&core, "/s/1"),
            Some(Fetch::Failed(
                "org.freedesktop.DBus.Error.AccessDenied".into()
            ))
        );
        assert_eq!(core.diagnostics().warnings, 0);
    }

    #[test]
    fn a_referring_objects_state_entering_or_leaving_a_value_fetches_again() {
        use std::collections::HashMap;
        use zbus::{ObjectPath, Variant};
        const A: &str = "org.example.Active";
        let mut cfg = config();
        cfg.fetches.push(FetchSpec {
            interface: S.into(),
            method: "GetSettings".into(),
            refresh: None,
            refresh_on: Some(RefreshOn {
                interface: A.into(),
                property: "State".into(),
                reference: "Connection".into(),
                values: vec![2],
            }),
        });
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        let gmo = take_call(&mut core, "GetManagedObjects");
        core.out.clear();
        let profile = ObjectPath::try_from("/s/1").unwrap();
        let mut objects: HashMap<ObjectPath<'_>, HashMap<&str, HashMap<&str, Variant<'_>>>> =
            HashMap::new();
        objects.insert(profile.clone(), HashMap::from([(S, HashMap::new())]));
        objects.insert(
            ObjectPath::try_from("/a/1").unwrap(),
            HashMap::from([(
                A,
                HashMap::from([
                    ("State", Variant::from(1u32)),
                    ("Connection", Variant::from(profile)),
                ]),
            )]),
        );
        core.handle(&reply_to(&gmo).build(&(objects,)).unwrap());
        core.commit();
        let get = take_call(&mut core, "GetSettings");
        core.handle(&reply_to(&get).build(&(7u32,)).unwrap());
        core.commit();
        drain(&mut core);
        // Into 2, the same 2 again, out of 2, and between other values.
        for (state, fetches) in [(2, true), (2, false), (3, true), (4, false), (1, false)] {
            core.handle(&properties_changed_from(
                OWNER,
                "/a/1",
                A,
                &[("State", state)],
                &[],
            ));
            core.commit();
            if fetches {
                let get = take_call(&mut core, "GetSettings");
                assert_eq!(get.header().path().map(|p| p.as_str()), Some("/s/1"));
                core.handle(&reply_to(&get).build(&(state,)).unwrap());
                core.commit();
                assert_eq!(fetched(&core, "/s/1"), Some(Fetch::Done(Value::U32(state))));
            }
            assert!(
                !queued_members(&core).iter().any(|m| m == "GetSettings"),
                "state {state}: {:?}",
                queued_members(&core)
            );
        }
        assert_eq!(core.diagnostics().warnings, 0);
    }

    #[test]
    fn kept_entries_are_those_a_whole_reply_has() {
        use std::collections::BTreeMap;
        use zbus::Variant;
        let keep: &[(&str, &[&str])] = &[
            ("connection", &["id", "type", "interface-name"]),
            ("ipv4", &["method"]),
            ("proxy", &["method"]),
            ("bond", &["options"]),
        ];
        let mut cfg = config();
        cfg.fetches.push(FetchSpec {
            interface: S.into(),
            method: "GetSettings".into(),
            refresh: None,
            refresh_on: None,
        });
        cfg.keep_fetched = crate::CacheBuilder::new("x")
            .keep_fetched(keep)
            .cfg
            .keep_fetched;
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        let gmo = take_call(&mut core, "GetManagedObjects");
        core.out.clear();
        core.handle(
            &reply_to(&gmo)
                .build(&(managed_objects(&[
                    ("/s/1", &[(S, &[])]),
                    ("/s/2", &[(S, &[])]),
                ]),))
                .unwrap(),
        );
        core.commit();
        let mut settings: BTreeMap<&str, BTreeMap<&str, Variant<'_>>> = BTreeMap::new();
        let connection = settings.entry("connection").or_default();
        connection.insert("id", Variant::from("c-1"));
        connection.insert(
            "uuid",
            Variant::from("95d44725-2959-49db-a659-339bec8becd9"),
        );
        connection.insert("type", Variant::from("vlan"));
        connection.insert("autoconnect", Variant::from(false));
        connection.insert("permissions", Variant::from(vec!["user:x"]));
        let ipv4 = settings.entry("ipv4").or_default();
        let mut address = BTreeMap::new();
        address.insert("address", Variant::from("192.0.2.1"));
        address.insert("prefix", Variant::from(24u32));
        ipv4.insert("address-data", Variant::from(vec![address]));
        ipv4.insert("dns", Variant::from(vec![1u32, 2]));
        ipv4.insert("method", Variant::from("manual"));
        ipv4.insert("route-metric", Variant::from(-1i64));
        settings.entry("proxy").or_default();
        settings
            .entry("vlan")
            .or_default()
            .insert("id", Variant::from(7u32));
        // The calls go out in no set order: each reply names the object of its call.
        let get = take_call(&mut core, "GetSettings");
        let settings_path = get.header().path().map(|p| p.to_string()).unwrap();
        let reply = reply_to(&get).build(&(&settings,)).unwrap();
        core.handle(&reply);
        // A reply of another type is kept whole.
        let get = take_call(&mut core, "GetSettings");
        let other_path = get.header().path().map(|p| p.to_string()).unwrap();
        assert_ne!(settings_path, other_path);
        core.handle(&reply_to(&get).build(&(7u32,)).unwrap());
        core.commit();
        // What the whole reply decodes to, less what is not kept.
        let Value::Dict(mut whole) = crate::core::decode::body_value(&reply).unwrap() else {
            panic!("not a dictionary");
        };
        whole.entries.retain_mut(|(outer, inner)| {
            let Some((_, keys)) = keep.iter().find(|(k, _)| Some(*k) == outer.as_str()) else {
                return false;
            };
            let Value::Dict(inner) = inner else {
                panic!("not a dictionary");
            };
            inner
                .entries
                .retain(|(key, _)| keys.iter().any(|k| Some(*k) == key.as_str()));
            !inner.entries.is_empty()
        });
        assert_eq!(whole.entries.len(), 2, "{whole:?}");
        assert_eq!(
            fetched(&core, &settings_path),
            Some(Fetch::Done(Value::Dict(whole)))
        );
        assert_eq!(
            fetched(&core, &other_path),
            Some(Fetch::Done(Value::U32(7)))
        );
        assert_eq!(core.diagnostics().warnings, 0);
    }
}
