//! The newtypes print, parse and convert as `ip` and netlink-packet-route do.

use super::*;

#[test]
fn they_print_as_ip_does() {
    assert_eq!(Ifindex(3).to_string(), "3");
    assert_eq!("3".parse::<Ifindex>().unwrap(), Ifindex(3));
    assert!("0".parse::<Ifindex>().is_err());
    assert_eq!(Table::MAIN.to_string(), "main");
    assert_eq!(Table::LOCAL.to_string(), "local");
    assert_eq!(Table(3_000_000_000).to_string(), "3000000000");
    assert_eq!(Protocol::BOOT.to_string(), "boot");
    assert_eq!(Protocol::KERNEL.to_string(), "kernel");
    assert_eq!(Protocol::RA.to_string(), "ra");
    assert_eq!(Scope::UNIVERSE.to_string(), "global");
    assert_eq!(Scope::LINK.to_string(), "link");
    assert_eq!(Scope::HOST.to_string(), "host");
    assert_eq!(Scope(77).to_string(), "77");
    assert_eq!(RouteType::UNICAST.to_string(), "unicast");
    assert_eq!(RouteType::BLACKHOLE.to_string(), "blackhole");
    assert_eq!(RouteType::THROW.to_string(), "throw");
}

#[test]
fn they_parse_what_ip_accepts() {
    assert_eq!("main".parse::<Table>().unwrap(), Table::MAIN);
    assert_eq!("100".parse::<Table>().unwrap(), Table(100));
    assert_eq!("static".parse::<Protocol>().unwrap(), Protocol::STATIC);
    assert_eq!("universe".parse::<Scope>().unwrap(), Scope::UNIVERSE);
    assert_eq!("global".parse::<Scope>().unwrap(), Scope::UNIVERSE);
    assert_eq!(
        "prohibit".parse::<RouteType>().unwrap(),
        RouteType::PROHIBIT
    );
    for err in [
        "nosuch".parse::<Table>().unwrap_err(),
        "nosuch".parse::<Protocol>().unwrap_err(),
        "nosuch".parse::<Scope>().unwrap_err(),
        "nosuch".parse::<RouteType>().unwrap_err(),
    ] {
        assert!(err.to_string().contains("`nosuch`"), "{err}");
    }
    // A number that does not fit is refused, never cut short.
    assert!("256".parse::<Protocol>().is_err());
}

#[test]
fn they_convert_to_and_from_netlink_packet_route() {
    assert_eq!(NprProtocol::from(Protocol::BOOT), NprProtocol::Boot);
    assert_eq!(Protocol::from(NprProtocol::Ra), Protocol::RA);
    assert_eq!(Protocol::from(NprProtocol::Other(77)), Protocol(77));
    assert_eq!(NprScope::from(Scope::LINK), NprScope::Link);
    assert_eq!(Scope::from(NprScope::Host), Scope::HOST);
    assert_eq!(NprType::from(RouteType::BLACKHOLE), NprType::BlackHole);
    assert_eq!(RouteType::from(NprType::Unicast), RouteType::UNICAST);
    for raw in 0..=255u8 {
        assert_eq!(
            Protocol::from(NprProtocol::from(Protocol(raw))),
            Protocol(raw)
        );
        assert_eq!(Scope::from(NprScope::from(Scope(raw))), Scope(raw));
        assert_eq!(
            RouteType::from(NprType::from(RouteType(raw))),
            RouteType(raw)
        );
    }
}

#[test]
fn they_are_as_small_as_the_kernel_fields() {
    assert_eq!(std::mem::size_of::<Ifindex>(), 4);
    assert_eq!(std::mem::size_of::<Table>(), 4);
    assert_eq!(std::mem::size_of::<Protocol>(), 1);
    assert_eq!(std::mem::size_of::<Scope>(), 1);
    assert_eq!(std::mem::size_of::<RouteType>(), 1);
}
