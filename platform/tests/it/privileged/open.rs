//! A platform opens in another namespace by name, path or fd, and the calling thread stays
//! where it was; a namespace that does not exist is a clear error.

use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use netmirror_platform::testing::NetNs;
use netmirror_platform::{Config, Error, Netns, Platform};

use super::support::netns_with_veth;
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(60);

fn thread_netns() -> u64 {
    std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino()
}

fn link_names(platform: &Platform) -> Vec<String> {
    let mut names: Vec<String> = platform
        .links()
        .execute()
        .unwrap()
        .items
        .iter()
        .map(|link| link.name().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn opens_by_name_path_and_fd_without_moving_the_caller() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let before = thread_netns();
        let fd = ns.fd().try_clone_to_owned().unwrap();
        for netns in [
            Netns::name(ns.name()),
            Netns::path(ns.path()),
            Netns::fd(fd.as_fd().try_clone_to_owned().unwrap()),
        ] {
            let platform = Platform::open(Config::new().with_netns(netns)).unwrap();
            assert_eq!(link_names(&platform), ["lo", "nmx0", "nmx1"]);
            assert_eq!(thread_netns(), before);
        }
        // The sockets stay in the namespace after the helper thread is gone.
        let platform = Platform::open(Config::new().with_netns(Netns::name(ns.name()))).unwrap();
        let other = NetNs::new().unwrap();
        assert_eq!(link_names(&platform), ["lo", "nmx0", "nmx1"]);
        drop(other);
    });
}

#[test]
fn a_missing_namespace_is_a_clear_error() {
    bounded(LIMIT, || {
        let err = Platform::open(Config::new().with_netns(Netns::name("nmx-does-not-exist")))
            .unwrap_err();
        match &err {
            Error::Netns { netns, source } => {
                assert_eq!(netns, "nmx-does-not-exist");
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("unexpected error {other:?}"),
        }
        assert!(Platform::open(Config::new().with_netns(Netns::name("../etc"))).is_err());
    });
}

/// Issue 15: `--netns` pointing at a FIFO hung forever in `open` (no `O_NONBLOCK`); a regular
/// file or another kind of namespace must be refused too, at once.
#[test]
fn what_is_not_a_network_namespace_is_refused_without_blocking() {
    bounded(Duration::from_secs(20), || {
        let dir = tempfile::Builder::new()
            .prefix("netmirror-test-netns")
            .tempdir()
            .unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "not a namespace").unwrap();
        for path in [fifo, plain, std::path::PathBuf::from("/proc/self/ns/mnt")] {
            let err = Platform::open(Config::new().with_netns(Netns::path(&path))).unwrap_err();
            assert!(
                matches!(&err, Error::NotNetns { netns } if *netns == path.display().to_string()),
                "{}: {err:?}",
                path.display()
            );
            assert_eq!(
                err.to_string(),
                format!("{} is not a network namespace", path.display())
            );
        }
    });
}

/// Issue 15: a namespace deleted while a program holds a socket in it lives on unseen; the
/// watch tells that its name no longer leads to it.
#[test]
fn a_watch_sees_the_namespace_deleted() {
    bounded(LIMIT, || {
        let ns = NetNs::new().unwrap();
        let watch = Netns::name(ns.name()).watch().unwrap();
        let platform = Platform::open(Config::new().with_netns(watch.netns())).unwrap();
        assert_eq!(link_names(&platform), ["lo"]);
        assert!(!watch.deleted());
        assert!(!Netns::Current.watch().unwrap().deleted());
        let status = std::process::Command::new("ip")
            .args(["netns", "delete", ns.name()])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(watch.deleted());
        // The socket still works: the kernel keeps the namespace for it.
        assert_eq!(link_names(&platform), ["lo"]);
        // A new namespace under the same name is another one.
        let status = std::process::Command::new("ip")
            .args(["netns", "add", ns.name()])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(watch.deleted());
        // `ns` deletes the new one on drop.
    });
}
