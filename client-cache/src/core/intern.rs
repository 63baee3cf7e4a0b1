//! Interface and property names, interned: every object shares one `Arc<str>` per name, and the
//! names nothing uses any more are freed as the set grows.

use std::sync::Arc;

use hashbrown::HashSet;

use super::Core;

/// The interned names are pruned when there are at least this many.
const MIN_PRUNE: usize = 1024;

/// A set of shared names.
#[derive(Debug)]
pub(super) struct Names {
    set: HashSet<Arc<str>>,
    /// Prune once the set holds this many.
    prune_at: usize,
}

impl Default for Names {
    fn default() -> Self {
        Self {
            set: HashSet::new(),
            prune_at: MIN_PRUNE,
        }
    }
}

impl Names {
    /// The shared copy of `s` (made on first sight).
    pub(super) fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.set.get(s) {
            return a.clone();
        }
        let a: Arc<str> = s.into();
        self.set.insert(a.clone());
        a
    }

    /// Free the names nothing uses any more (a service may announce new property names
    /// forever): amortised O(1) per name, as the set is swept only after it doubled.
    pub(super) fn prune(&mut self) {
        if self.set.len() < self.prune_at {
            return;
        }
        self.set.retain(|name| Arc::strong_count(name) > 1);
        self.set.shrink_to_fit();
        self.prune_at = (self.set.len() * 2).max(MIN_PRUNE);
    }

    pub(super) fn len(&self) -> usize {
        self.set.len()
    }
}

impl Core {
    /// How many names are interned.
    pub(crate) fn interned_names(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shared_copy_per_name() {
        let mut names = Names::default();
        let a = names.intern("org.example.I");
        let b = names.intern("org.example.I");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(names.len(), 1);
        let c = names.intern("State");
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn unused_names_are_freed_once_the_set_doubled() {
        let mut names = Names::default();
        let kept: Vec<Arc<str>> = (0..10).map(|i| names.intern(&format!("kept{i}"))).collect();
        for i in 0..MIN_PRUNE {
            drop(names.intern(&format!("gone{i}")));
        }
        assert_eq!(names.len(), MIN_PRUNE + 10);
        names.prune();
        assert_eq!(names.len(), kept.len(), "only the names in use stay");
        // The kept ones are still the shared copies.
        assert!(Arc::ptr_eq(&kept[3], &names.intern("kept3")));
        // Below the threshold nothing is swept.
        drop(names.intern("transient"));
        names.prune();
        assert_eq!(names.len(), kept.len() + 1);
    }
}
