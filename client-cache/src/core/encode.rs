//! Writing method calls: every call the cache makes takes strings only (none, or a name, a match
//! rule, an interface, a lookup's argument), so its bytes are written here in one pass into one
//! buffer of the exact size, instead of through zbus's message builder, which serialises the
//! header fields through serde and variants, and the body into a buffer of its own (three
//! quarters of a round trip's instructions on the client went there, BENCHMARKS.md section 6).
//!
//! The bytes are those zbus's builder writes for the same call, field for field (tests compare
//! them), and zbus parses and checks the header again as it makes the [`Message`]: a name or
//! path that is not valid is refused there, as the builder refuses it.
// `Message::from_bytes` is `unsafe`; see the one call below.
#![allow(unsafe_code)]

use zbus::{
    message::{Message, PrimaryHeader, Type},
    wire::{
        Endian,
        serialized::{Context, Data},
    },
};

/// The largest message D-Bus allows (2^27 bytes).
const MAX_MESSAGE: usize = 1 << 27;

/// Header field codes, in the order zbus's builder writes them.
const PATH: u8 = 1;
const INTERFACE: u8 = 2;
const MEMBER: u8 = 3;
const DESTINATION: u8 = 6;
const SIGNATURE: u8 = 8;

/// The method call `iface.member(args...)` on `path` of `dest`, every argument a string (`s`).
/// Its serial is the next of zbus's own counter, as the builder's is, so it never equals that
/// of another call on the connection. A name or path that is not valid, a string with a NUL in
/// it, more than 255 arguments or a message over D-Bus's size limit is an error.
pub(crate) fn method_call(
    dest: &str,
    path: &str,
    iface: &str,
    member: &str,
    args: &[&str],
) -> zbus::Result<Message> {
    if args.len() > usize::from(u8::MAX) {
        return Err(zbus::Error::ExcessData);
    }
    let strings = [dest, path, iface, member]
        .into_iter()
        .chain(args.iter().copied());
    for s in strings.clone() {
        if s.len() >= MAX_MESSAGE {
            return Err(zbus::Error::ExcessData);
        }
        if s.as_bytes().contains(&0) {
            return Err(zbus::Error::Failure(format!(
                "a string with a NUL byte in it: {s:?}"
            )));
        }
    }
    // Exact sizes: a field is 8-aligned, its code and signature take 4 bytes, then a string's
    // length, bytes and NUL (or a signature's length byte, bytes and NUL); the body's strings
    // are 4-aligned.
    let string_field = |s: &str| 8 + s.len() + 1;
    let mut fields_end: usize = 16;
    for s in [path, iface, member, dest] {
        fields_end = fields_end.next_multiple_of(8) + string_field(s);
    }
    if !args.is_empty() {
        fields_end = fields_end.next_multiple_of(8) + 4 + 1 + args.len() + 1;
    }
    let body_start = fields_end.next_multiple_of(8);
    let mut body_len: usize = 0;
    for a in args {
        body_len = body_len.next_multiple_of(4) + 4 + a.len() + 1;
    }
    let total = body_start + body_len;
    if total > MAX_MESSAGE {
        return Err(zbus::Error::ExcessData);
    }

    let primary = PrimaryHeader::new(Type::MethodCall, 0);
    let mut w = Writer(Vec::with_capacity(total));
    w.0.extend_from_slice(&[b'l', Type::MethodCall as u8, 0, 1]);
    // Both fit in a u32: each is below MAX_MESSAGE.
    w.u32(body_len as u32);
    w.u32(primary.serial_num().get());
    w.u32((fields_end - 16) as u32);
    w.string_field(PATH, b'o', path);
    w.string_field(INTERFACE, b's', iface);
    w.string_field(MEMBER, b's', member);
    w.string_field(DESTINATION, b's', dest);
    if !args.is_empty() {
        w.pad(8);
        w.0.extend_from_slice(&[SIGNATURE, 1, b'g', 0, args.len() as u8]);
        w.0.resize(w.0.len() + args.len(), b's');
        w.0.push(0);
    }
    w.pad(8);
    for a in args {
        w.string(a);
    }
    debug_assert_eq!(w.0.len(), total);
    let data = Data::new(w.0, Context::new(Endian::Little, 0));
    // SAFETY: `from_bytes` parses and checks the whole header (each field's type, the names'
    // and the path's syntax, the body's signature, the required fields, the padding), as zbus's
    // socket reader does for every message it receives; it is `unsafe` only because it does not
    // check the body against the signature. The body is written just above: as many strings
    // as the signature has `s`, each 4-aligned, with its u32 length, its UTF-8 bytes (from a
    // `&str`, without NUL, checked above) and its terminating NUL: what the signature says. The
    // tests compare these bytes with those of zbus's builder.
    unsafe { Message::from_bytes(data) }
}

/// A little-endian writer of message bytes; positions are from the message's start.
struct Writer(Vec<u8>);

impl Writer {
    fn pad(&mut self, align: usize) {
        let len = self.0.len().next_multiple_of(align);
        self.0.resize(len, 0);
    }

    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    /// A string (or object path): 4-aligned length, bytes, NUL.
    fn string(&mut self, s: &str) {
        self.pad(4);
        // Below MAX_MESSAGE, checked by the caller.
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
    }

    /// A header field `(code, variant)` holding a string of type `ty` (`s` or `o`).
    fn string_field(&mut self, code: u8, ty: u8, s: &str) {
        self.pad(8);
        self.0.extend_from_slice(&[code, 1, ty, 0]);
        self.string(s);
    }
}

#[cfg(test)]
mod tests {
    use super::method_call;
    use zbus::{message::Message, wire::Endian};

    /// The same call through zbus's builder, with the same serial.
    fn built(dest: &str, path: &str, iface: &str, member: &str, args: &[&str]) -> Message {
        let ours = method_call(dest, path, iface, member, args).unwrap();
        let b = Message::method_call(path, member)
            .destination(dest)
            .interface(iface)
            .endian(Endian::Little)
            .serial(ours.primary_header().serial_num());
        let theirs = match args {
            [] => b.build(&()),
            [a] => b.build(&(*a,)),
            [a, b2] => b.build(&(*a, *b2)),
            [a, b2, c] => b.build(&(*a, *b2, *c)),
            _ => unreachable!("up to three arguments in these tests"),
        }
        .unwrap();
        assert_eq!(
            ours.data().bytes(),
            theirs.data().bytes(),
            "{dest} {path} {iface}.{member}{args:?}"
        );
        ours
    }

    #[test]
    fn the_bytes_are_those_of_zbus_builder() {
        let cases: &[(&str, &str, &str, &str, &[&str])] = &[
            (
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetNameOwner",
                &["org.example.Service"],
            ),
            (
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.Properties",
                "Get",
                &["org.freedesktop.DBus", "Features"],
            ),
            (
                ":1.7",
                "/",
                "org.freedesktop.DBus.ObjectManager",
                "GetManagedObjects",
                &[],
            ),
            (":1.7", "/a", "b.c", "D", &[""]),
            (
                "a.b",
                "/a/b/c_9",
                "a.b",
                "M",
                &["", "x", "with\u{e9} unicode"],
            ),
            (
                "org.example.X",
                "/org/example/X/1",
                "org.freedesktop.DBus.Introspectable",
                "Introspect",
                &[],
            ),
        ];
        for &(dest, path, iface, member, args) in cases {
            // Every length modulo 8, for each string's padding.
            for extra in 0..8 {
                let arg = "y".repeat(extra);
                let mut with = args.to_vec();
                if with.len() < 3 {
                    with.push(&arg);
                }
                built(dest, path, iface, member, args);
                built(dest, path, iface, member, &with);
                let long_member = format!("{member}{}", "m".repeat(extra));
                built(dest, path, iface, &long_member, args);
                let long_dest = format!("{dest}{}", "d".repeat(extra));
                built(&long_dest, path, iface, member, args);
            }
        }
    }

    #[test]
    fn the_header_reads_back_and_serials_differ() {
        let a = method_call("a.b", "/p", "a.b", "M", &["x"]).unwrap();
        let b = method_call("a.b", "/p", "a.b", "M", &["x"]).unwrap();
        assert_ne!(
            a.primary_header().serial_num(),
            b.primary_header().serial_num()
        );
        let h = a.header();
        assert_eq!(h.path().unwrap().as_str(), "/p");
        assert_eq!(h.member().unwrap().as_str(), "M");
        let (x,): (String,) = a.body().deserialize().unwrap();
        assert_eq!(x, "x");
    }

    #[test]
    fn bad_input_is_an_error() {
        for (dest, path, iface, member) in [
            ("not a name", "/p", "a.b", "M"),
            ("a.b", "not/a/path", "a.b", "M"),
            ("a.b", "/p", "nodot", "M"),
            ("a.b", "/p", "a.b", "Not.A.Member"),
            ("a.b", "/p", "a.b", ""),
            ("a.b", "/p\0", "a.b", "M"),
        ] {
            assert!(
                method_call(dest, path, iface, member, &[]).is_err(),
                "{dest} {path} {iface} {member}"
            );
        }
        assert!(method_call("a.b", "/p", "a.b", "M", &["nul\0inside"]).is_err());
        let many = vec!["x"; 256];
        assert!(method_call("a.b", "/p", "a.b", "M", &many).is_err());
        let huge = "x".repeat(1 << 27);
        assert!(method_call("a.b", "/p", "a.b", "M", &[&huge]).is_err());
    }
}
