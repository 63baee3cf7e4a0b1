//! Unit tests of NMClient's visibility rule for profiles.

use super::object_visible;
use crate::{Object, Value, object::Fetch};

#[test]
fn a_profile_is_visible_once_its_settings_could_be_read() {
    let pending = Object {
        fetch: Fetch::Pending,
        ..Object::default()
    };
    assert!(!object_visible(&pending, Some("alice")));
    let denied = Object {
        fetch: Fetch::Failed("org.freedesktop.NetworkManager.Settings.PermissionDenied".into()),
        ..Object::default()
    };
    assert!(
        !object_visible(&denied, Some("alice")),
        "the daemon hid it from us"
    );
    let read = Object {
        fetch: Fetch::Done(Value::Unset),
        ..Object::default()
    };
    assert!(object_visible(&read, Some("alice")));
}
