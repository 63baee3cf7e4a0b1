//! Lookups and decoding: interface by name in the NetworkManager registry, property by name,
//! checking and decoding single values, and decoding a `GetManagedObjects`-sized reply straight
//! from wire data into typed values (compared with zvariant's own owned-value tree).
//!
//! With `NETMIRROR_BENCH_QUICK=1` (set by `cargo xtask bench --quick`) the large reply has 100
//! objects instead of NetworkManager's 1066, to keep a quick run short.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use netmirror_dbus_meta::{ManagedObjectsSeed, PropertiesSeed, nm};
use zvariant::serialized::{Context, Data};
use zvariant::{LE, ObjectPath, OwnedObjectPath, OwnedValue};

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
    let value = zvariant::Value::from(100_u32);
    group.bench_function("zvariant_value/u", |b| {
        b.iter(|| black_box(state.decode(black_box(&value))))
    });
    let iface = nm::device::IFACE.property("Interface").expect("declared");
    let value = zvariant::Value::from("enp0s31f6");
    group.bench_function("zvariant_value/s", |b| {
        b.iter(|| black_box(iface.decode(black_box(&value))))
    });
    let wrong = zvariant::Value::from(1_i32);
    group.bench_function("zvariant_value/mismatch", |b| {
        b.iter(|| black_box(iface.decode(black_box(&wrong))))
    });
    group.finish();
}

/// A device's properties roughly as NetworkManager sends them.
fn device_props(idx: usize) -> HashMap<&'static str, zvariant::Value<'static>> {
    let path = |text: String| zvariant::Value::from(OwnedObjectPath::try_from(text).expect("path"));
    HashMap::from([
        (
            "Udi",
            zvariant::Value::from(format!("/sys/devices/virtual/net/bond{idx}")),
        ),
        ("Path", zvariant::Value::from("")),
        ("Interface", zvariant::Value::from(format!("bond{idx}"))),
        ("IpInterface", zvariant::Value::from("")),
        ("Driver", zvariant::Value::from("bonding")),
        ("DriverVersion", zvariant::Value::from("")),
        ("FirmwareVersion", zvariant::Value::from("")),
        ("Capabilities", zvariant::Value::from(7_u32)),
        ("Ip4Address", zvariant::Value::from(0_u32)),
        ("State", zvariant::Value::from(20_u32)),
        ("StateReason", zvariant::Value::from((20_u32, 0_u32))),
        ("ActiveConnection", path("/".into())),
        ("Ip4Config", path("/".into())),
        ("Dhcp4Config", path("/".into())),
        ("Ip6Config", path("/".into())),
        ("Dhcp6Config", path("/".into())),
        ("Managed", zvariant::Value::from(true)),
        ("Autoconnect", zvariant::Value::from(true)),
        ("FirmwareMissing", zvariant::Value::from(false)),
        ("NmPluginMissing", zvariant::Value::from(false)),
        ("DeviceType", zvariant::Value::from(10_u32)),
        (
            "AvailableConnections",
            zvariant::Value::from(vec![
                ObjectPath::try_from(format!("/org/freedesktop/NetworkManager/Settings/{idx}"))
                    .expect("path"),
            ]),
        ),
        ("PhysicalPortId", zvariant::Value::from("")),
        ("Mtu", zvariant::Value::from(1500_u32)),
        ("Metered", zvariant::Value::from(0_u32)),
        (
            "LldpNeighbors",
            zvariant::Value::from(Vec::<HashMap<String, OwnedValue>>::new()),
        ),
        ("Real", zvariant::Value::from(false)),
        ("Ip4Connectivity", zvariant::Value::from(0_u32)),
        ("Ip6Connectivity", zvariant::Value::from(0_u32)),
        ("InterfaceFlags", zvariant::Value::from(0_u32)),
        ("HwAddress", zvariant::Value::from("00:11:22:33:44:55")),
        (
            "Ports",
            zvariant::Value::from(Vec::<OwnedObjectPath>::new()),
        ),
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
        let objects: HashMap<OwnedObjectPath, HashMap<&str, HashMap<&str, zvariant::Value<'_>>>> =
            (0..n_objects)
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
                                ("HwAddress", zvariant::Value::from("00:11:22:33:44:55")),
                                ("Carrier", zvariant::Value::from(false)),
                                (
                                    "Slaves",
                                    zvariant::Value::from(Vec::<OwnedObjectPath>::new()),
                                ),
                            ]),
                        ),
                        ("org.freedesktop.DBus.Properties", HashMap::new()),
                    ]);
                    (path, ifaces)
                })
                .collect();
        let data = zvariant::to_bytes(Context::new_dbus(LE, 0), &objects).expect("serializable");
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
    let props =
        zvariant::to_bytes(Context::new_dbus(LE, 0), &device_props(1)).expect("serializable");
    c.bench_function("decode_properties/device", |b| {
        b.iter(|| {
            black_box(props.deserialize_with_seed(PropertiesSeed::new(Some(&nm::device::IFACE))))
        })
    });
    let sorted: BTreeMap<_, _> = device_props(1).into_iter().collect();
    let props = zvariant::to_bytes(Context::new_dbus(LE, 0), &sorted).expect("serializable");
    c.bench_function("decode_properties/device_sorted", |b| {
        b.iter(|| {
            black_box(props.deserialize_with_seed(PropertiesSeed::new(Some(&nm::device::IFACE))))
        })
    });
}

fn decode_typed(data: &Data<'_, '_>) -> usize {
    let (objects, _) = data
        .deserialize_with_seed(ManagedObjectsSeed::new(&nm::REGISTRY))
        .expect("decodes");
    objects.len()
}

type Objects = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>>;

fn decode_zvariant(data: &Data<'_, '_>) -> usize {
    let (objects, _): (Objects, _) = data.deserialize().expect("decodes");
    objects.len()
}

criterion_group!(benches, lookups, single_values, managed_objects);
criterion_main!(benches);
