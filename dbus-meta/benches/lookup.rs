//! Lookups and decoding: interface by name in the NetworkManager registry, property by name,
//! checking and decoding single values, and decoding a `GetManagedObjects`-sized reply straight
//! from wire data with the decoder ([`Reader`], compared with zbus's own owned-variant tree; the
//! bench ids keep their earlier names so that figures stay comparable).
//!
//! With `NETMIRROR_BENCH_QUICK=1` (set by `cargo xtask bench --quick`) the large reply has 100
//! objects instead of NetworkManager's 1066, to keep a quick run short.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use netmirror_dbus_meta::{Reader, nm};
use zbus::wire::LE;
use zbus::wire::serialized::{Context, Data};
use zbus::{ObjectPath, OwnedObjectPath, OwnedVariant};

fn lookups(c: &mut Criterion) {
    let names: Vec<&str> = nm::REGISTRY.interfaces().iter().map(|i| i.name()).collect();
    let mut group = c.benchmark_group("lookup");
    group.throughput(Throughput::Elements(names.len() as u64));
    group.bench_function("interface_by_name/53", |b| {
        b.iter(|| {
            for name in &names {
                black_box(nm::REGISTRY.interface(black_box(name)));
            }
        })
    });
    let device = &nm::device::IFACE;
    let props: Vec<&str> = device.properties().iter().map(|p| p.name()).collect();
    group.throughput(Throughput::Elements(props.len() as u64));
    group.bench_function(BenchmarkId::new("property_by_name", props.len()), |b| {
        b.iter(|| {
            for name in &props {
                black_box(device.property_index(black_box(name)));
            }
        })
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("registry_lookup/unknown_property", |b| {
        b.iter(|| {
            black_box(nm::REGISTRY.lookup(
                black_box("org.freedesktop.NetworkManager.Device"),
                black_box("SomeFutureProperty"),
            ))
        })
    });
    group.finish();
}

fn single_values(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    let state = nm::device::IFACE.property("State").expect("declared");
    let value = zbus::Variant::from(100_u32);
    group.bench_function("zvariant_value/u", |b| {
        b.iter(|| black_box(state.decode(black_box(&value))))
    });
    let iface = nm::device::IFACE.property("Interface").expect("declared");
    let value = zbus::Variant::from("enp0s31f6");
    group.bench_function("zvariant_value/s", |b| {
        b.iter(|| black_box(iface.decode(black_box(&value))))
    });
    let wrong = zbus::Variant::from(1_i32);
    group.bench_function("zvariant_value/mismatch", |b| {
        b.iter(|| black_box(iface.decode(black_box(&wrong))))
    });
    group.finish();
}

/// A device's properties roughly as NetworkManager sends them.
fn device_props(idx: usize) -> HashMap<&'static str, zbus::Variant<'static>> {
    let path = |text: String| zbus::Variant::from(OwnedObjectPath::try_from(text).expect("path"));
    HashMap::from([
        (
            "Udi",
            zbus::Variant::from(format!("/sys/devices/virtual/net/bond{idx}")),
        ),
        ("Path", zbus::Variant::from("")),
        ("Interface", zbus::Variant::from(format!("bond{idx}"))),
        ("IpInterface", zbus::Variant::from("")),
        ("Driver", zbus::Variant::from("bonding")),
        ("DriverVersion", zbus::Variant::from("")),
        ("FirmwareVersion", zbus::Variant::from("")),
        ("Capabilities", zbus::Variant::from(7_u32)),
        ("Ip4Address", zbus::Variant::from(0_u32)),
        ("State", zbus::Variant::from(20_u32)),
        ("StateReason", zbus::Variant::from((20_u32, 0_u32))),
        ("ActiveConnection", path("/".into())),
        ("Ip4Config", path("/".into())),
        ("Dhcp4Config", path("/".into())),
        ("Ip6Config", path("/".into())),
        ("Dhcp6Config", path("/".into())),
        ("Managed", zbus::Variant::from(true)),
        ("Autoconnect", zbus::Variant::from(true)),
        ("FirmwareMissing", zbus::Variant::from(false)),
        ("NmPluginMissing", zbus::Variant::from(false)),
        ("DeviceType", zbus::Variant::from(10_u32)),
        (
            "AvailableConnections",
            zbus::Variant::from(vec![
                ObjectPath::try_from(format!("/org/freedesktop/NetworkManager/Settings/{idx}"))
                    .expect("path"),
            ]),
        ),
        ("PhysicalPortId", zbus::Variant::from("")),
        ("Mtu", zbus::Variant::from(1500_u32)),
        ("Metered", zbus::Variant::from(0_u32)),
        (
            "LldpNeighbors",
            zbus::Variant::from(Vec::<HashMap<String, OwnedVariant>>::new()),
        ),
        ("Real", zbus::Variant::from(false)),
        ("Ip4Connectivity", zbus::Variant::from(0_u32)),
        ("Ip6Connectivity", zbus::Variant::from(0_u32)),
        ("InterfaceFlags", zbus::Variant::from(0_u32)),
        ("HwAddress", zbus::Variant::from("00:11:22:33:44:55")),
        ("Ports", zbus::Variant::from(Vec::<OwnedObjectPath>::new())),
    ])
}

/// Whether `cargo xtask bench --quick` asked for smaller sizes.
fn quick() -> bool {
    std::env::var_os("NETMIRROR_BENCH_QUICK").is_some_and(|value| value == "1")
}

fn managed_objects(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_managed_objects");
    let large = if quick() { 100 } else { 1066 };
    for n_objects in [10_usize, large] {
        let objects: HashMap<OwnedObjectPath, HashMap<&str, HashMap<&str, zbus::Variant<'_>>>> = (0
            ..n_objects)
            .map(|idx| {
                let path = OwnedObjectPath::try_from(format!(
                    "/org/freedesktop/NetworkManager/Devices/{idx}"
                ))
                .expect("path");
                let ifaces = HashMap::from([
                    ("org.freedesktop.NetworkManager.Device", device_props(idx)),
                    (
                        "org.freedesktop.NetworkManager.Device.Bond",
                        HashMap::from([
                            ("HwAddress", zbus::Variant::from("00:11:22:33:44:55")),
                            ("Carrier", zbus::Variant::from(false)),
                            ("Slaves", zbus::Variant::from(Vec::<OwnedObjectPath>::new())),
                        ]),
                    ),
                    ("org.freedesktop.DBus.Properties", HashMap::new()),
                ]);
                (path, ifaces)
            })
            .collect();
        let data = zbus::wire::to_bytes(Context::new(LE, 0), &objects).expect("serializable");
        group.throughput(Throughput::Elements(n_objects as u64));
        group.bench_function(BenchmarkId::new("typed_seed", n_objects), |b| {
            b.iter(|| black_box(decode_typed(black_box(&data))))
        });
        group.bench_function(BenchmarkId::new("zvariant_owned_values", n_objects), |b| {
            b.iter(|| black_box(decode_zvariant(black_box(&data))))
        });
    }
    group.finish();

    // A device's properties in random order, and sorted by name (then each lookup hits the
    // hint: the index after the previous property).
    let props = zbus::wire::to_bytes(Context::new(LE, 0), &device_props(1)).expect("serializable");
    c.bench_function("decode_properties/device", |b| {
        b.iter(|| black_box(Reader::new(props.bytes(), true).value(b"a{sv}")))
    });
    let sorted: BTreeMap<_, _> = device_props(1).into_iter().collect();
    let props = zbus::wire::to_bytes(Context::new(LE, 0), &sorted).expect("serializable");
    c.bench_function("decode_properties/device_sorted", |b| {
        b.iter(|| black_box(Reader::new(props.bytes(), true).value(b"a{sv}")))
    });
}

fn decode_typed(data: &Data<'_, '_>) -> usize {
    let objects = Reader::new(data.bytes(), true)
        .value(b"a{oa{sa{sv}}}")
        .expect("decodes");
    match objects {
        netmirror_dbus_meta::Value::Dict(dict) => dict.entries.len(),
        _ => 0,
    }
}

type Objects = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedVariant>>>;

fn decode_zvariant(data: &Data<'_, '_>) -> usize {
    let (objects, _): (Objects, _) = data.deserialize().expect("decodes");
    objects.len()
}

criterion_group!(benches, lookups, single_values, managed_objects);
criterion_main!(benches);
