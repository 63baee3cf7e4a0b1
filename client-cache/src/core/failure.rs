//! Calls that fail: deadlines, and a load that cannot finish.

use std::sync::Arc;
use std::time::Instant;

use super::{BUS, Call, Core, load::Load};
use crate::{
    debug::WarningKind,
    error::{CallError, CallFailure},
    object::Fetch,
    store::ObjId,
};

impl Core {
    /// The load cannot finish: say why (once), and wait for the owner to change.
    pub(super) fn fail(&mut self, call: &Call, dest: &str, path: &str, cause: CallFailure) {
        let service = if dest == self.cfg.service || dest == BUS {
            dest.to_owned()
        } else {
            format!("{} ({dest})", self.cfg.service)
        };
        let error = CallError {
            method: call.method(&self.cfg.fetches),
            service,
            path: path.to_owned(),
            cause,
        };
        self.rep.trace(format_args!("load failed: {error}"));
        if std::mem::take(&mut self.reconciling) {
            // The cache stays as the signals left it (they applied during the reconcile);
            // only the check failed: say so, and let the next suspicion try again.
            self.load = Load::Done;
            self.batch.dirty = true;
            self.batch.failed = Some(error);
            return;
        }
        self.load = Load::Failed;
        self.load_announce = false;
        self.batch.loaded = false;
        self.batch.dirty = true;
        self.batch.failed = Some(error.clone());
        self.failure = Some(error);
    }

    /// A fetch failed for another reason than an error reply (timeout, malformed reply): during
    /// the load, the load fails; afterwards the object keeps a failed fetch, with a warning.
    pub(super) fn fetch_failed(&mut self, id: ObjId, path: Arc<str>, cause: CallFailure) {
        // During a reconcile the cache is loaded and announced: a fetch that fails then is
        // the object's, not the reconcile's.
        let announced =
            (matches!(self.load, Load::Done) || self.reconciling) && !self.load_announce;
        if !announced {
            let dest = self.service_dest();
            self.fail(&Call::Fetch(id, path.clone()), &dest, &path, cause);
            return;
        }
        self.rep.warn(
            WarningKind::CallFailed,
            format_args!("fetch for {path}: {cause}"),
        );
        // A refetch asked for meanwhile is dropped with the failed one.
        self.store_fetch(id, Fetch::Failed(cause.to_string().into()));
    }

    /// When the earliest call on its way times out.
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(&(at, serial)) = self.deadlines.front() {
            if self.pending.contains_key(&serial) {
                return Some(at);
            }
            self.deadlines.pop_front();
        }
        None
    }

    /// The deadline of call `serial` while it waits for its reply (the recorder notes which
    /// calls a timeout ended, and the replayer times out the same ones).
    pub(crate) fn deadline_of(&self, serial: u32) -> Option<Instant> {
        if !self.pending.contains_key(&serial) {
            return None;
        }
        self.deadlines
            .iter()
            .find(|(_, s)| *s == serial)
            .map(|(at, _)| *at)
    }

    /// Time out every call whose deadline is `now` or earlier.
    pub(crate) fn expire(&mut self, now: Instant) {
        while let Some(&(at, serial)) = self.deadlines.front() {
            if at > now {
                break;
            }
            self.deadlines.pop_front();
            let Some(p) = self.pending.remove(&serial) else {
                continue;
            };
            if p.generation != self.generation {
                continue;
            }
            let cause = CallFailure::Timeout(self.cfg.timeout);
            match p.call {
                Call::RemoveMatch => self.rep.trace(format_args!("RemoveMatch: {cause}")),
                Call::Fetch(id, path) => {
                    let current = self.store.slot(id).path == path
                        && self
                            .store
                            .slot(id)
                            .obj
                            .as_ref()
                            .is_some_and(|o| o.fetch_serial == serial);
                    if current {
                        self.fetch_failed(id, path, cause);
                    }
                }
                call => self.fail(&call, &p.dest, &p.path, cause),
            }
        }
    }
}
