//! Owner tracking: who owns the service's name now (`GetNameOwner`, then `NameOwnerChanged`),
//! and which messages come from that owner. A new owner (a restart) removes everything, with
//! events, and loads again; replies to the old owner's calls are stale from then on.

use std::sync::Arc;

use zbus::message::{Header, Message};

use super::{BUS, Call, Core, decode::ErrorReply, load::Load};
use crate::{debug::WarningKind, event::Event, store::ObjId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Owner {
    /// Not known yet (GetNameOwner on its way).
    Unknown,
    Absent,
    /// The unique name (empty on a peer-to-peer connection, where the peer is the owner).
    Present(Arc<str>),
}

impl Core {
    /// The owner's unique name, if the service is there.
    pub(crate) fn owner(&self) -> Option<&str> {
        match &self.owner {
            Owner::Present(o) => Some(o),
            _ => None,
        }
    }

    /// The reply to `GetNameOwner`: an error means nobody owns the name.
    pub(super) fn on_name_owner(&mut self, msg: &Message, error: Option<&ErrorReply>) {
        if error.is_some() {
            self.set_owner(None);
            return;
        }
        match msg.body().deserialize::<(zbus::names::UniqueName<'_>,)>() {
            Ok((name,)) => self.set_owner(Some(name.as_str().into())),
            Err(e) => {
                self.rep
                    .warn(WarningKind::Malformed, format_args!("GetNameOwner: {e}"));
                self.set_owner(None);
            }
        }
    }

    /// The bus's `NameOwnerChanged`; returns whether the owner of the service changed.
    pub(super) fn on_name_owner_changed(&mut self, msg: &Message, hdr: &Header<'_>) -> bool {
        if hdr.sender().map(|s| s.as_str()) != Some(BUS) {
            self.rep.diag.foreign_messages += 1;
            return false;
        }
        let body = msg.body();
        let Ok((name, _old, new)) = body.deserialize::<(
            zbus::names::BusName<'_>,
            zbus::Optional<zbus::names::UniqueName<'_>>,
            zbus::Optional<zbus::names::UniqueName<'_>>,
        )>() else {
            self.rep
                .warn(WarningKind::Malformed, "NameOwnerChanged with a bad body");
            return false;
        };
        if name.as_str() != self.cfg.service {
            return false;
        }
        if self.owner == Owner::Unknown {
            // GetNameOwner's reply is on its way and newer: it decides.
            self.rep.diag.superseded_signals += 1;
            return false;
        }
        self.set_owner(new.as_ref().map(|n| n.as_str().into()));
        true
    }

    /// Whether `hdr`'s message comes from the current owner (counted as foreign otherwise).
    pub(super) fn sent_by_owner(&mut self, hdr: &Header<'_>) -> bool {
        let sender = hdr.sender().map(|s| s.as_str());
        match (&self.owner, sender) {
            (Owner::Present(o), _) if o.is_empty() => true,
            (Owner::Present(o), Some(s)) if **o == *s => true,
            _ => {
                self.rep.diag.foreign_messages += 1;
                self.rep.trace(format_args!(
                    "ignoring {:?}.{:?} from {:?}: not the owner of {}",
                    hdr.interface().map(|i| i.as_str()),
                    hdr.member().map(|m| m.as_str()),
                    sender,
                    self.cfg.service
                ));
                false
            }
        }
    }

    pub(super) fn set_owner(&mut self, new: Option<Arc<str>>) {
        let new_state = new.clone().map_or(Owner::Absent, Owner::Present);
        if new_state == self.owner {
            return;
        }
        let initial = self.owner == Owner::Unknown;
        self.rep.trace(format_args!(
            "owner of {}: {:?} -> {:?}",
            self.cfg.service, self.owner, new
        ));
        // Removal events for everything, from the old owner.
        let ids: Vec<ObjId> = self.store.present().collect();
        for id in ids {
            self.remove_object(id);
        }
        self.unsubscribe();
        self.generation += 1;
        // Replies to the old owner's calls are stale now (and the bus answers them anyway).
        self.pending
            .retain(|_, p| !matches!(p.call, Call::Fetch(..) | Call::GetAll(..)));
        self.owner = new_state;
        self.load = Load::Idle;
        self.reconciling = false;
        if !initial || new.is_none() {
            self.batch.owner = Some(Event::OwnerChanged { owner: new.clone() });
        }
        self.batch.dirty = true;
        match new {
            Some(owner) => {
                let rules = self.owner_rules(&owner);
                self.resubscribe(rules);
                self.begin_load();
            }
            None => self.batch.loaded = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_support::*;

    #[test]
    fn get_name_owner_then_load() {
        let mut core = bus_core(config());
        core.start();
        assert_eq!(queued_members(&core), ["AddMatch", "GetNameOwner"]);
        answer_name_owner(&mut core, OWNER);
        take_call(&mut core, "AddMatch");
        assert_eq!(core.owner(), Some(OWNER));
        assert_eq!(
            sent_members(&mut core),
            ["AddMatch", "AddMatch", "GetManagedObjects"]
        );
    }

    #[test]
    fn no_owner_is_a_complete_empty_load() {
        let mut core = bus_core(config());
        core.start();
        let call = take_call(&mut core, "GetNameOwner");
        let err = error_to(&call, BUS, "org.freedesktop.DBus.Error.NameHasNoOwner");
        assert!(core.handle(&err), "the owner decides: commit now");
        core.commit();
        assert_eq!(core.owner(), None);
        assert!(core.is_loaded());
        assert_eq!(
            drain(&mut core),
            [Event::OwnerChanged { owner: None }, Event::Loaded]
        );
    }

    #[test]
    fn name_owner_changed_removes_everything_and_loads_again() {
        let mut core = loaded_core(&[("/o/1", &[("org.example.I", &[("A", 1u32)])])]);
        assert_eq!(drain(&mut core).last(), Some(&Event::Loaded));
        // The service restarts: first it leaves, then a new owner comes.
        let gone = name_owner_changed(SERVICE, OWNER, "");
        assert!(core.handle(&gone));
        core.commit();
        let events = drain(&mut core);
        assert!(
            matches!(&events[0], Event::Removed { path, .. } if &**path == "/o/1"),
            "{events:?}"
        );
        assert_eq!(events[1], Event::OwnerChanged { owner: None });
        assert_eq!(core.owner(), None);
        // The old owner's rules are removed.
        assert_eq!(sent_members(&mut core), ["RemoveMatch", "RemoveMatch"]);
        let back = name_owner_changed(SERVICE, "", ":1.77");
        assert!(core.handle(&back));
        core.commit();
        assert_eq!(
            drain(&mut core),
            [Event::OwnerChanged {
                owner: Some(":1.77".into())
            }]
        );
        assert_eq!(
            sent_members(&mut core),
            ["AddMatch", "AddMatch", "GetManagedObjects"]
        );
        assert!(!core.is_loaded(), "loading from the new owner");
    }

    #[test]
    fn name_owner_changed_of_another_name_or_not_from_the_bus_is_ignored() {
        let mut core = loaded_core(&[("/o/1", &[("org.example.I", &[("A", 1u32)])])]);
        drain(&mut core);
        assert!(!core.handle(&name_owner_changed("org.other", OWNER, "")));
        let forged = signal("/org/freedesktop/DBus", BUS, "NameOwnerChanged")
            .sender(":1.99")
            .build(&(SERVICE, OWNER, ""))
            .unwrap();
        assert!(!core.handle(&forged));
        core.commit();
        assert_eq!(core.owner(), Some(OWNER));
        assert_eq!(core.diagnostics().foreign_messages, 1);
        assert!(drain(&mut core).is_empty());
    }

    #[test]
    fn signals_from_another_sender_are_foreign() {
        let mut core = loaded_core(&[("/o/1", &[("org.example.I", &[("A", 1u32)])])]);
        drain(&mut core);
        let forged = properties_changed_from(":1.99", "/o/1", "org.example.I", &[("A", 2u32)], &[]);
        core.handle(&forged);
        core.commit();
        assert!(drain(&mut core).is_empty());
        assert_eq!(core.diagnostics().foreign_messages, 1);
    }
}
