//! Tests that need root: they start the real NetworkManager daemon in its own namespaces.

mod fixtures;
mod introspect_conformance;
mod nm_actions;
mod nm_cache;
mod nm_names;
mod nm_sequence;
mod replay;

/// NetworkManager's `GetManagedObjects` reply, asked on `conn` (a client of its own, apart
/// from the cache under test).
async fn get_managed_objects(conn: &zbus::Connection) -> zbus::Message {
    conn.call_method(
        Some(netmirror_client_cache::testing::NM_BUS_NAME),
        "/org/freedesktop",
        Some("org.freedesktop.DBus.ObjectManager"),
        "GetManagedObjects",
        &(),
    )
    .await
    .expect("GetManagedObjects")
}
