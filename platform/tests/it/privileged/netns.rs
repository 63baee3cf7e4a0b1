//! `NetNs`: a throwaway network namespace is uniquely named, holds what the test made in it,
//! runs code inside, and is gone after drop, also after a panic.

use std::net::UdpSocket;
use std::os::unix::fs::MetadataExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use netmirror_platform::testing::{NETNS_PREFIX, NetNs, Veth};

use crate::support::{bounded, netns_names};

const LIMIT: Duration = Duration::from_secs(30);

/// The inode of the network namespace the calling thread is in.
fn current_netns_inode() -> u64 {
    std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino()
}

#[test]
fn is_uniquely_named_holds_only_lo_and_is_deleted_on_drop() {
    bounded(LIMIT, || {
        let first = NetNs::new().unwrap();
        let second = NetNs::new().unwrap();
        assert!(first.name().starts_with(NETNS_PREFIX), "{}", first.name());
        assert_ne!(first.name(), second.name());
        assert_eq!(
            first.path(),
            std::path::Path::new("/run/netns").join(first.name())
        );
        assert!(netns_names().contains(&first.name().to_owned()));

        let links = first.ip(&["-o", "link", "show"]).unwrap();
        assert_eq!(links.lines().count(), 1, "{links}");
        assert!(links.contains("lo:") && links.contains("UP"), "{links}");

        let (name, path) = (first.name().to_owned(), first.path().to_owned());
        drop(first);
        assert!(!path.exists());
        assert!(!netns_names().contains(&name));
        assert!(netns_names().contains(&second.name().to_owned()));
    });
}

#[test]
fn run_executes_inside_and_passes_panics_on() {
    bounded(LIMIT, || {
        let ns = NetNs::new().unwrap();
        let inode = std::fs::metadata(ns.path()).unwrap().ino();
        assert_eq!(ns.run(current_netns_inode).unwrap(), inode);
        assert_ne!(
            current_netns_inode(),
            inode,
            "the caller stays where it was"
        );
        assert_eq!(
            std::fs::metadata(format!("/proc/self/fd/{}", {
                use std::os::fd::AsRawFd;
                ns.fd().as_raw_fd()
            }))
            .unwrap()
            .ino(),
            inode
        );

        let panicked = catch_unwind(AssertUnwindSafe(|| ns.run(|| panic!("inside"))));
        assert!(panicked.is_err());
    });
}

#[test]
fn veth_pairs_carry_traffic_between_namespaces() {
    bounded(LIMIT, || {
        let server = NetNs::new().unwrap();
        let client = NetNs::builder()
            .veth(
                Veth::new("veth-c", "veth-s")
                    .address("192.0.2.2/24")
                    .address("2001:db8::2/64")
                    .peer_address("192.0.2.1/24")
                    .peer_in(&server),
            )
            .start()
            .unwrap();
        let local = NetNs::builder()
            .veth(Veth::new("veth0", "veth1").address("198.51.100.1/24"))
            .start()
            .unwrap();

        let client_addrs = client.ip(&["-o", "addr", "show", "dev", "veth-c"]).unwrap();
        assert!(client_addrs.contains("192.0.2.2/24"), "{client_addrs}");
        assert!(client_addrs.contains("2001:db8::2/64"), "{client_addrs}");
        let server_links = server.ip(&["-o", "link", "show", "veth-s"]).unwrap();
        assert!(server_links.contains("UP"), "{server_links}");
        let local_links = local.ip(&["-o", "link", "show"]).unwrap();
        assert!(local_links.contains("veth0@veth1") && local_links.contains("veth1@veth0"));

        // A datagram from the client's namespace reaches a socket in the server's.
        let socket = server
            .run(|| UdpSocket::bind("192.0.2.1:0"))
            .unwrap()
            .unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let target = socket.local_addr().unwrap();
        client
            .run(move || {
                let sender = UdpSocket::bind("192.0.2.2:0")?;
                sender.send_to(b"hello", target)
            })
            .unwrap()
            .unwrap();
        let mut buf = [0; 16];
        let (len, from) = socket.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"hello");
        assert_eq!(from.ip().to_string(), "192.0.2.2");

        // The host has none of these links.
        let host = std::process::Command::new("ip")
            .args(["-o", "link"])
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&host.stdout).contains("veth-c"));
    });
}

#[test]
fn commands_run_inside_and_are_ended_on_drop() {
    bounded(LIMIT, || {
        let ns = NetNs::new().unwrap();
        let links = ns.command("ip").args(["-o", "link"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&links.stdout).lines().count(), 1);

        let mut sleeper = ns.command("sleep").arg("60").spawn().unwrap();
        // Wait until `ip netns exec` has moved it in.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !std::process::Command::new("ip")
            .args(["netns", "pids", ns.name()])
            .output()
            .unwrap()
            .stdout
            .iter()
            .any(u8::is_ascii_digit)
        {
            assert!(std::time::Instant::now() < deadline, "sleep never entered");
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(ns);
        let status = sleeper.wait().unwrap();
        assert!(
            !status.success(),
            "the process left inside was killed: {status}"
        );
    });
}

#[test]
fn a_panicking_test_still_deletes_its_namespace() {
    let mut name = String::new();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let ns = NetNs::new().unwrap();
        name = ns.name().to_owned();
        panic!("a failing test");
    }));
    assert!(result.is_err());
    assert!(name.starts_with(NETNS_PREFIX));
    assert!(!netns_names().contains(&name));
}

/// Makes namespaces with veth pairs. With `NETMIRROR_DELIBERATE_FAILURE=1` it then panics, and
/// `cargo xtask ci` checks that no `nmx-` namespace is left; otherwise it checks the same itself
/// after drop.
#[test]
fn deliberate_failure_leaves_nothing_behind() {
    let deliberate = std::env::var("NETMIRROR_DELIBERATE_FAILURE").is_ok_and(|v| v == "1");
    let names = bounded(LIMIT, move || {
        let first = NetNs::new().unwrap();
        let second = NetNs::builder()
            .veth(Veth::new("veth0", "veth1").peer_in(&first))
            .start()
            .unwrap();
        let names = [first.name().to_owned(), second.name().to_owned()];
        if deliberate {
            panic!("deliberate failure (NETMIRROR_DELIBERATE_FAILURE=1), with namespaces up");
        }
        names
    });
    let left = netns_names();
    for name in names {
        assert!(!left.contains(&name), "{name} outlived its fixture");
    }
}

/// `Platform::netns_names` gives the namespaces this one has ids for by those ids, as
/// `ip netns list-id` lists them: here the namespace a veth peer went to, under the id the
/// link reports as its `link_netnsid`; nothing in a namespace that has no ids.
#[test]
fn netns_names_are_ip_netns_list_id() {
    use netmirror_platform::{Config, Netns, Platform};
    bounded(LIMIT, || {
        let other = NetNs::new().unwrap();
        let ns = NetNs::builder()
            .veth(Veth::new("veth0", "veth1").peer_in(&other))
            .start()
            .unwrap();
        let platform = Platform::open(Config::new().with_netns(Netns::name(ns.name()))).unwrap();
        let names = platform.netns_names().unwrap();
        let listed: Vec<(i32, String)> = ns
            .ip(&["netns", "list-id"])
            .unwrap()
            .lines()
            .filter_map(|line| {
                let (id, rest) = line.strip_prefix("nsid ")?.split_once(' ')?;
                let name = rest
                    .strip_prefix("(iproute2 netns name: ")?
                    .strip_suffix(')')?;
                Some((id.parse().ok()?, name.to_owned()))
            })
            .collect();
        assert_eq!(names.clone().into_iter().collect::<Vec<_>>(), listed);
        let veth = platform.links().name("veth0").execute().unwrap();
        let id = veth.items[0]
            .link_netnsid()
            .expect("a peer in another namespace");
        assert_eq!(names.get(&id).map(String::as_str), Some(other.name()));
        let alone = NetNs::new().unwrap();
        let platform = Platform::open(Config::new().with_netns(Netns::name(alone.name()))).unwrap();
        assert_eq!(platform.netns_names().unwrap(), Default::default());
    });
}
