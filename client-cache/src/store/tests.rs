//! Unit tests of references and readiness: late targets, cycles, chains, placeholders.

use std::sync::Arc;

use super::*;
use crate::{
    Value,
    meta::InterfaceDecl,
    object::{Interface, Object},
};

fn decl() -> Arc<InterfaceDecl> {
    Arc::new(InterfaceDecl::new(
        "t.Node",
        [("Peers", "ao", Some("t.Node"))],
    ))
}

fn obj(peers: &[&str]) -> Object {
    let mut iface = Interface::new("t.Node".into(), Some(decl()));
    iface.slots[0] = Value::Paths(peers.iter().map(|p| Box::<str>::from(*p)).collect());
    Object {
        ifaces: [iface].into_iter().collect(),
        ..Object::default()
    }
}

fn store() -> Store {
    Store {
        resolve: true,
        ..Store::default()
    }
}

fn put(s: &mut Store, path: &str, peers: &[&str]) -> ObjId {
    let id = s.ensure(path);
    s.set_object(id, obj(peers));
    id
}

fn ready(s: &Store, path: &str) -> bool {
    s.id(path).is_some_and(|id| s.slot(id).ready)
}

#[test]
fn a_chain_is_ready_only_when_its_last_link_is_there() {
    let mut s = store();
    put(&mut s, "/a", &["/b"]);
    put(&mut s, "/b", &["/c"]);
    s.update_readiness();
    assert!(
        !ready(&s, "/a") && !ready(&s, "/b"),
        "/c is missing, transitively"
    );
    put(&mut s, "/c", &[]);
    let (region, touched) = s.update_readiness();
    assert_eq!(touched, 1);
    assert_eq!(
        region.len(),
        3,
        "only /c and what references it is looked at"
    );
    assert!(ready(&s, "/a") && ready(&s, "/b") && ready(&s, "/c"));
}

#[test]
fn cycles_are_ready_and_knocked_out_together() {
    let mut s = store();
    put(&mut s, "/x", &["/y"]);
    put(&mut s, "/y", &["/x", "/x"]);
    s.update_readiness();
    assert!(ready(&s, "/x") && ready(&s, "/y"));
    put(&mut s, "/y", &["/x", "/z"]);
    s.update_readiness();
    assert!(
        !ready(&s, "/x") && !ready(&s, "/y"),
        "the cycle now waits for /z"
    );
    assert!(
        s.slot(s.id("/z").unwrap()).obj.is_none(),
        "/z is a placeholder"
    );
    put(&mut s, "/z", &[]);
    s.update_readiness();
    assert!(ready(&s, "/x") && ready(&s, "/y"));
}

#[test]
fn placeholders_go_once_nothing_references_them() {
    let mut s = store();
    let a = put(&mut s, "/a", &["/gone", "/gone"]);
    assert_eq!(s.slot(s.id("/gone").unwrap()).refs_in.count(a), Some(2));
    s.update_readiness();
    s.set_object(a, obj(&[]));
    s.update_readiness();
    s.collect();
    assert!(s.id("/gone").is_none());
    let b = s.ensure("/b");
    assert_eq!(b, 1, "the freed slot is reused");
}

#[test]
fn removing_a_target_knocks_out_its_referrers() {
    let mut s = store();
    put(&mut s, "/a", &["/b"]);
    let b = put(&mut s, "/b", &[]);
    s.update_readiness();
    assert!(ready(&s, "/a"));
    assert!(s.take_object(b).is_some());
    s.update_readiness();
    assert!(!ready(&s, "/a"));
    assert_eq!(s.len_present(), 1);
}

#[test]
fn a_hub_with_many_referrers_moves_to_a_map_and_back_to_empty() {
    let mut s = store();
    let ids: Vec<ObjId> = (0..50)
        .map(|i| put(&mut s, &format!("/r{i}"), &["/hub"]))
        .collect();
    put(&mut s, "/hub", &[]);
    s.update_readiness();
    let hub = s.id("/hub").unwrap();
    assert_eq!(s.slot(hub).refs_in.ids().count(), 50);
    for id in ids {
        s.set_object(id, obj(&[]));
    }
    assert!(s.slot(hub).refs_in.is_empty());
}
