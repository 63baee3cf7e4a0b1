//! The public API as the platform cache uses it: insert or replace, look up, iterate a
//! partition, mark and sweep.

use std::sync::Arc;

use netmirror_dedup_index::{Change, DedupIndex, IndexType, Object, Placement};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Addr {
    ifindex: u32,
    addr: u32,
    flags: u32,
}

impl Object for Addr {
    type Id = (u32, u32);

    fn id(&self) -> (u32, u32) {
        (self.ifindex, self.addr)
    }
}

struct ByIfindex;

impl IndexType<Addr> for ByIfindex {
    type Partition = u32;

    fn partition(&self, addr: &Addr) -> Option<u32> {
        Some(addr.ifindex)
    }
}

fn addr(ifindex: u32, addr: u32, flags: u32) -> Addr {
    Addr {
        ifindex,
        addr,
        flags,
    }
}

#[test]
fn resync_reports_old_new_and_removed() {
    let mut index = DedupIndex::new();
    let by_ifindex = index.add_index(ByIfindex);
    for n in 0..10 {
        index
            .insert(addr(n % 2 + 1, n, 0), Placement::Append)
            .unwrap();
    }
    index.mark_all();
    assert!(index.entries().all(|entry| entry.is_dirty()));

    let mut changes = Vec::new();
    for n in (0..10).filter(|n| n % 3 != 0) {
        changes.push(
            index
                .insert(addr(n % 2 + 1, n, u32::from(n == 4)), Placement::Append)
                .unwrap(),
        );
    }
    let replaced: Vec<_> = changes
        .iter()
        .filter_map(|c| c.old().map(|old| (old.addr, c.new().flags)))
        .collect();
    assert_eq!(replaced, [(4, 1)]);
    assert_eq!(
        changes
            .iter()
            .filter(|c| matches!(c, Change::Unchanged(_)))
            .count(),
        5
    );
    assert_eq!(index.is_dirty(&(1, 0)), Some(true));
    assert_eq!(index.is_dirty(&(2, 1)), Some(false));

    let removed: Vec<u32> = index.sweep().iter().map(|a| a.addr).collect();
    assert_eq!(removed, [0, 3, 6, 9]);
    let on_1: Vec<u32> = index
        .partition(by_ifindex, &1)
        .unwrap()
        .iter()
        .map(|a| a.addr)
        .collect();
    assert_eq!(on_1, [2, 4, 8]);
    let entry = index.get_in(by_ifindex, &(1, 4)).unwrap();
    assert!(!entry.is_dirty());
    assert_eq!(entry.obj().flags, 1);
}

#[test]
fn outside_handles_outlive_the_index() {
    let mut index = DedupIndex::new();
    let held = index
        .insert(addr(1, 1, 0), Placement::Append)
        .unwrap()
        .into_obj();
    drop(index);
    assert_eq!(Arc::strong_count(&held), 1);
    assert_eq!(*held, addr(1, 1, 0));
}

/// A named object whose id is a `String`, found by `&str` as a `HashMap<String, _>` is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    name: String,
    value: u32,
}

impl Object for Named {
    type Id = String;
    fn id(&self) -> String {
        self.name.clone()
    }
}

fn named(name: &str, value: u32) -> Named {
    Named {
        name: name.into(),
        value,
    }
}

#[test]
fn lookups_take_a_borrowed_id() {
    let mut index: DedupIndex<Named> = [named("a", 1), named("b", 2)].into_iter().collect();
    assert!(index.contains("a"));
    assert_eq!(index.get("b").map(|obj| obj.value), Some(2));
    assert!(index.get_entry("b").is_some());
    assert!(index.get("c").is_none());
    // The owned form still works.
    assert!(index.contains(&"a".to_string()));
    assert_eq!(index.remove("a").map(|obj| obj.value), Some(1));
    assert!(!index.contains("a"));
}

#[test]
fn collect_and_extend_insert_in_order_and_replace_by_id() {
    let mut index: DedupIndex<Named> = [named("a", 1), named("b", 2), named("a", 3)]
        .into_iter()
        .collect();
    // The second `a` replaced the first in place.
    let seen: Vec<(String, u32)> = index
        .iter()
        .map(|obj| (obj.name.clone(), obj.value))
        .collect();
    assert_eq!(seen, [("a".into(), 3), ("b".into(), 2)]);
    index.extend([named("c", 4), named("b", 5)]);
    let seen: Vec<(String, u32)> = index
        .iter()
        .map(|obj| (obj.name.clone(), obj.value))
        .collect();
    assert_eq!(seen, [("a".into(), 3), ("b".into(), 5), ("c".into(), 4)]);
    assert_eq!(index.len(), 3);
}

/// A device named by a `String` it holds: it lends its id, and counts the ids it had to build.
#[derive(Debug, PartialEq, Eq)]
struct Device {
    name: String,
    mtu: u32,
}

static IDS_BUILT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Object for Device {
    type Id = String;

    fn id(&self) -> String {
        IDS_BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.name.clone()
    }

    fn id_ref(&self) -> Option<&String> {
        Some(&self.name)
    }
}

#[test]
fn lent_ids_are_not_built_by_inserts_lookups_or_replaces() {
    let device = |i: u32, mtu| Device {
        name: format!("eth{i}"),
        mtu,
    };
    let mut devices = DedupIndex::new();
    // Enough entries for the id table to grow several times and for probes to meet others.
    for i in 0..1000 {
        devices.insert(device(i, 1500), Placement::Append).unwrap();
    }
    let change = devices.insert(device(7, 9000), Placement::Append).unwrap();
    assert_eq!(change.old().map(|old| old.mtu), Some(1500));
    assert!(matches!(
        devices.insert(device(7, 9000), Placement::Append).unwrap(),
        Change::Unchanged(_)
    ));
    let change = devices.replace(device(8, 1280)).unwrap();
    assert_eq!(change.new().mtu, 1280);
    assert!(devices.find_equal(&device(8, 1280)).is_some());
    assert_eq!(devices.get("eth999").map(|d| d.mtu), Some(1500));
    assert_eq!(devices.get("eth7").map(|d| d.mtu), Some(9000));
    assert!(!devices.contains("eth1000"));
    assert_eq!(devices.len(), 1000);
    assert_eq!(IDS_BUILT.load(std::sync::atomic::Ordering::Relaxed), 0);
}
