//! Unit tests of the body reader against bodies serialized by zvariant.

use super::*;
use std::collections::HashMap;
use zbus::wire::{Endian, serialized::Context, to_bytes};

fn bytes<T: serde::Serialize + zbus::Type>(v: &T) -> Vec<u8> {
    to_bytes(Context::new(Endian::Little, 0), v)
        .unwrap()
        .bytes()
        .to_vec()
}

#[test]
fn reads_nested_values_as_zvariant_writes_them() {
    let mut m: HashMap<&str, zbus::Variant<'_>> = HashMap::new();
    m.insert("a", zbus::Variant::from(7u32));
    m.insert("b", zbus::Variant::from(vec!["x", "y"]));
    let buf = bytes(&(3u8, -2i64, "hé", m, (true, 1.5f64)));
    let mut r = Reader::new(&buf, true);
    assert_eq!(r.value(b"y").unwrap(), Value::U8(3));
    assert_eq!(r.value(b"x").unwrap(), Value::I64(-2));
    assert_eq!(r.value(b"s").unwrap(), Value::Str("hé".into()));
    let d = r.value(b"a{sv}").unwrap();
    assert_eq!(d.get("a"), Some(&Value::U32(7)));
    assert_eq!(d.get("b").and_then(Value::as_strs).map(<[_]>::len), Some(2));
    let s = r.value(b"(bd)").unwrap();
    assert_eq!(
        s,
        Value::Struct(vec![Value::Bool(true), Value::F64(1.5)].into())
    );
    assert_eq!(r.pos(), buf.len());
}

#[test]
fn big_endian_and_variant_type_check() {
    let buf = to_bytes(Context::new(Endian::Big, 0), &zbus::Variant::from(5u32))
        .unwrap()
        .bytes()
        .to_vec();
    let mut r = Reader::new(&buf, false);
    assert_eq!(r.variant_expect(Some(b"s")).unwrap(), Err("u".to_owned()));
    let mut r = Reader::new(&buf, false);
    assert_eq!(r.variant_expect(Some(b"u")).unwrap(), Ok(Value::U32(5)));
}

#[test]
fn truncated_or_garbage_bodies_are_errors_not_panics() {
    let buf = bytes(&("hello", vec![1u32, 2, 3]));
    for cut in 0..buf.len() {
        let mut r = Reader::new(&buf[..cut], true);
        let _ = r.value(b"s").and_then(|_| r.value(b"au"));
    }
    for sig in [&b"a"[..], b"(", b"{ss}", b"a{s}", b"a{vs", b"z", b"(yy"] {
        let mut r = Reader::new(&buf, true);
        assert!(r.value(sig).is_err(), "{:?}", std::str::from_utf8(sig));
    }
    let mut deep = vec![b'a'; 100];
    deep.push(b'y');
    assert!(single_type_len(&deep).is_err());
}

#[test]
fn an_av_of_bytes_is_kept_as_bytes_and_a_mixed_one_as_variants() {
    let many: Vec<zbus::Variant<'_>> = (0..100_000u32)
        .map(|i| zbus::Variant::from(i as u8))
        .collect();
    let buf = bytes(&many);
    let v = Reader::new(&buf, true).value(b"av").unwrap();
    assert_eq!(v.signature(), "av");
    assert!(matches!(&v, Value::VariantBytes(b) if b.len() == 100_000 && b[257] == 1));
    // Its length plus nothing: one byte per element.
    assert_eq!(v.heap_size(), 100_000);

    let mixed = vec![
        zbus::Variant::from(1u8),
        zbus::Variant::from(2u8),
        zbus::Variant::from("x"),
        zbus::Variant::from(3u8),
    ];
    let buf = bytes(&mixed);
    let v = Reader::new(&buf, true).value(b"av").unwrap();
    let Value::Array(a) = &v else { panic!("{v:?}") };
    assert_eq!(
        a.items,
        vec![
            Value::Variant(Box::new(Value::U8(1))),
            Value::Variant(Box::new(Value::U8(2))),
            Value::Variant(Box::new(Value::Str("x".into()))),
            Value::Variant(Box::new(Value::U8(3))),
        ]
    );
    assert_eq!(v.to_string(), "1,2,x,3");

    let empty: Vec<zbus::Variant<'_>> = Vec::new();
    let buf = bytes(&empty);
    let v = Reader::new(&buf, true).value(b"av").unwrap();
    assert!(matches!(&v, Value::Array(a) if a.items.is_empty() && &*a.element == "v"));
}

#[test]
fn an_ay_costs_its_length() {
    let big = vec![7u8; 12 << 20];
    let buf = bytes(&big);
    let v = Reader::new(&buf, true).value(b"ay").unwrap();
    assert_eq!(v.heap_size(), 12 << 20);
}

#[test]
fn skip_ends_where_value_ends() {
    let mut m: HashMap<&str, zbus::Variant<'_>> = HashMap::new();
    m.insert("a", zbus::Variant::from(7u32));
    m.insert("b", zbus::Variant::from(vec!["x", "y"]));
    m.insert("c", zbus::Variant::from((1u8, 2u64)));
    let empty: Vec<(u8, u64)> = Vec::new();
    let buf = bytes(&(
        3u8,
        -2i64,
        "hé",
        m,
        (true, 1.5f64, 9u16),
        empty,
        zbus::Variant::from(vec![1u64, 2]),
        4u32,
    ));
    let sigs: [&[u8]; 8] = [b"y", b"x", b"s", b"a{sv}", b"(bdq)", b"a(yt)", b"v", b"u"];
    let mut by_value = Reader::new(&buf, true);
    let mut by_skip = Reader::new(&buf, true);
    for sig in sigs {
        by_value.value(sig).unwrap();
        by_skip.skip(sig).unwrap();
        assert_eq!(
            by_skip.pos(),
            by_value.pos(),
            "{}",
            String::from_utf8_lossy(sig)
        );
    }
    assert_eq!(by_skip.pos(), buf.len());
    // Cut anywhere: an error, never a panic.
    for cut in 0..buf.len() {
        let mut r = Reader::new(&buf[..cut], true);
        let _ = sigs.iter().try_for_each(|sig| r.skip(sig));
    }
    for sig in [&b"a"[..], b"(", b"{ss}", b"z", b""] {
        assert!(Reader::new(&buf, true).skip(sig).is_err());
    }
}

#[test]
fn a_variant_whose_signature_is_not_one_complete_type_is_an_error() {
    // A variant's signature is read from the data, so it is checked there, once: what is
    // inside it is then read without checking its type again at every level.
    for inner in [&b"("[..], b"a", b"{sv}", b"(y", b"yy", b"", b"a{vs", b"z"] {
        let mut buf = vec![inner.len() as u8];
        buf.extend_from_slice(inner);
        buf.push(0);
        buf.extend_from_slice(&[0; 16]);
        let shown = String::from_utf8_lossy(inner);
        assert!(
            Reader::new(&buf, true).value(b"v").is_err(),
            "value {shown}"
        );
        assert!(Reader::new(&buf, true).skip(b"v").is_err(), "skip {shown}");
        assert!(
            Reader::new(&buf, true).variant_expect(None).is_err(),
            "variant_expect {shown}"
        );
    }
}

/// A fixed-size value is read at the next multiple of its size, in the body's byte order; a
/// body that ends in its padding or inside it is an error that says which.
#[test]
fn fixed_size_values_skip_their_padding_and_stop_at_the_end() {
    let body = [
        7u8, 0, 0, 0, 1, 2, 3, 4, 0xaa, 0, 0, 0, 0, 0, 0, 0, 9, 8, 7, 6, 5, 4, 3, 2,
    ];
    let mut r = Reader::new(&body, true);
    assert_eq!(r.u8().unwrap(), 7);
    assert_eq!(r.u32().unwrap(), 0x0403_0201);
    assert_eq!(r.u16().unwrap(), 0xaa);
    assert_eq!(r.pos(), 10);
    assert_eq!(r.u64().unwrap(), 0x0203_0405_0607_0809);
    assert_eq!(r.pos(), 24);
    let mut r = Reader::new(&body, false);
    assert_eq!(r.u8().unwrap(), 7);
    assert_eq!(r.u32().unwrap(), 0x0102_0304);
    assert_eq!(r.u64().unwrap(), 0xaa00_0000_0000_0000);

    let message = |res: WireResult<u64>| res.unwrap_err().to_string();
    // The padding runs past the end: 3 bytes, a `u` after a `y`.
    let mut r = Reader::new(&body[..3], true);
    r.u8().unwrap();
    assert!(message(r.u32().map(u64::from)).contains("padding past the end"));
    // The padding fits, the value does not.
    for len in 4..8 {
        let mut r = Reader::new(&body[..len], true);
        r.u8().unwrap();
        assert!(
            message(r.u32().map(u64::from)).contains("value past the end"),
            "{len}"
        );
    }
    let mut r = Reader::new(&body[..20], true);
    r.u64().unwrap();
    r.u64().unwrap();
    assert!(message(r.u64()).contains("value past the end"));
    assert!(message(Reader::new(&[], true).u16().map(u64::from)).contains("value past the end"));
}

/// Each way a signature can be wrong is named in its error; complete types are measured.
#[test]
fn a_signature_error_says_what_is_wrong() {
    for (sig, len) in [
        (&b"u"[..], 1),
        (b"v", 1),
        (b"ao", 2),
        (b"a{sv}u", 5),
        (b"(a{sa{sv}}b)", 12),
    ] {
        assert_eq!(single_type_len(sig).unwrap(), len, "{sig:?}");
    }
    let message = |sig: &[u8]| single_type_len(sig).unwrap_err().to_string();
    assert!(message(&[b'a'; 80]).contains("nested too deep"));
    assert!(message(b"()").contains("bad struct or dict entry"));
    assert!(message(b"{sss}").contains("bad struct or dict entry"));
    assert!(message(b"(uu").contains("unterminated"));
    assert!(message(b"z").contains("bad signature"));
    assert!(message(b"").contains("bad signature"));
    assert!(message(b"a").contains("bad signature"));
}
