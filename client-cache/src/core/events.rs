//! Events: the consumer's bounded queue. A batch's events are queued at its commit (or, while
//! the consumer is behind, only counted, see [`resync`](super::resync)); the consumer takes
//! them one at a time, and an object added and gone again before the consumer took its
//! addition is skipped with everything about it up to its removal.

use super::Core;
use crate::event::Event;

impl Core {
    /// Queue a batch's events, or, while the consumer is behind, only count them.
    pub(super) fn queue(&mut self, out: Vec<Event>) {
        match &mut self.shadow {
            // The consumer is behind: the cache moves on, the events wait for the resync.
            Some(shadow) => {
                for ev in out {
                    shadow.miss(ev);
                }
            }
            None => self.events.extend(out),
        }
    }

    /// The events queued and not yet taken, oldest first.
    pub(crate) fn queued_iter(&self) -> impl Iterator<Item = &Event> {
        self.events.iter()
    }

    /// How many events wait for the consumer.
    pub(crate) fn queued(&self) -> usize {
        self.events.len()
    }

    /// The next event for the consumer: the queue's, then, if the consumer fell behind, an
    /// [`Event::Overrun`], the changes from what it knew to now, and [`Event::Resynced`].
    ///
    /// A consumer that lags behind the cache takes an [`Event::Added`] when the object may
    /// already be gone again (its removal queued behind): such an addition is skipped, and so
    /// is every later event about that object up to its removal, so that what the consumer
    /// is told adds up (it looks the object up when it is told it was added).
    pub(crate) fn pop_event(&mut self) -> Option<Event> {
        loop {
            let ev = match self.events.pop_front() {
                Some(ev) => ev,
                None => {
                    let shadow = self.shadow.take()?;
                    if shadow.missed() == 0 {
                        return None;
                    }
                    self.resync(shadow);
                    continue;
                }
            };
            let Some(path) = ev.path() else {
                return Some(ev);
            };
            if let Event::Added { path } = &ev {
                let visible = self
                    .store
                    .id(path)
                    .is_some_and(|id| self.store.slot(id).visible);
                if !visible {
                    self.unseen.insert(path.clone());
                    continue;
                }
                self.unseen.remove(path);
                return Some(ev);
            }
            if self.unseen.is_empty() || !self.unseen.contains(path) {
                return Some(ev);
            }
            if let Event::Removed { path, .. } = &ev {
                self.unseen.remove(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::core::test_support::*;

    const I: &str = "org.example.I";

    #[test]
    fn an_object_gone_before_the_consumer_took_its_addition_is_skipped() {
        let mut core = loaded_core(&[]);
        drain(&mut core);
        core.handle(&interfaces_added("/o/1", &[(I, &[("A", 1)])]));
        core.commit();
        core.handle(&properties_changed_from(OWNER, "/o/1", I, &[("A", 2)], &[]));
        core.commit();
        core.handle(&interfaces_removed("/o/1", &[I]));
        core.commit();
        core.handle(&interfaces_added("/o/2", &[(I, &[])]));
        core.commit();
        assert_eq!(core.queued(), 4);
        // Added, changed and removed all skipped: the consumer never sees /o/1.
        assert_eq!(
            drain(&mut core),
            [Event::Added {
                path: "/o/2".into()
            }]
        );
    }

    #[test]
    fn a_full_queue_ends_in_an_overrun_and_a_resync() {
        let mut cfg = config();
        cfg.max_events = 2;
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        answer_managed_objects(&mut core, &[("/o/1", &[(I, &[("A", 0)])])]);
        core.commit();
        assert_eq!(core.queued(), 2, "Added and Loaded");
        for v in 1..=5 {
            core.begin_batch();
            core.handle(&properties_changed_from(OWNER, "/o/1", I, &[("A", v)], &[]));
            core.commit();
        }
        assert_eq!(
            core.queued(),
            2,
            "nothing queued while the consumer is behind"
        );
        let events = drain(&mut core);
        assert_eq!(
            events,
            [
                Event::Added {
                    path: "/o/1".into()
                },
                Event::Loaded,
                Event::Overrun { missed: 5 },
                Event::PropertyChanged {
                    path: "/o/1".into(),
                    interface: I.into(),
                    property: "A".into(),
                    old: crate::Value::U32(0),
                    new: crate::Value::U32(5),
                },
                Event::Resynced { changes: 1 },
            ]
        );
        assert_eq!(core.diagnostics().overruns, 1);
    }
}
