//! Unit tests of where a dump ends: the receiving thread of [`NlSocket::dump_pipelined`]
//! stops ([`ends_dump`]) exactly where [`DumpState::datagram`] ends the dump.

use super::*;

const SEQ: u32 = 7;
const PORT: u32 = 5;

/// One netlink message, padded to 4 bytes.
fn msg(kind: u16, seq: u32, port: u32, payload: &[u8]) -> Vec<u8> {
    let len = wire::NLMSG_HDRLEN + payload.len();
    let mut out = Vec::new();
    out.extend_from_slice(&u32::try_from(len).unwrap().to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&2u16.to_ne_bytes() /* NLM_F_MULTI */);
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&port.to_ne_bytes());
    out.extend_from_slice(payload);
    out.resize(len.next_multiple_of(4), 0);
    out
}

/// An `NLMSG_ERROR` with `code` and the (zeroed) header of the request.
fn error(code: i32, seq: u32) -> Vec<u8> {
    let mut payload = code.to_ne_bytes().to_vec();
    payload.extend_from_slice(&[0; wire::NLMSG_HDRLEN]);
    msg(wire::NLMSG_ERROR, seq, PORT, &payload)
}

const OBJECT: u16 = 24;

#[test]
fn the_receiving_thread_stops_exactly_where_the_dump_ends() {
    let object = || msg(OBJECT, SEQ, PORT, &[1, 2, 3, 4]);
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("objects", [object(), object()].concat(), false),
        (
            "objects then done",
            [object(), msg(wire::NLMSG_DONE, SEQ, PORT, &[0; 4])].concat(),
            true,
        ),
        (
            "done from the kernel's port 0",
            msg(wire::NLMSG_DONE, SEQ, 0, &[0; 4]),
            true,
        ),
        (
            "stale done",
            msg(wire::NLMSG_DONE, SEQ - 1, PORT, &[0; 4]),
            false,
        ),
        (
            "done to another port",
            msg(wire::NLMSG_DONE, SEQ, 99, &[0; 4]),
            false,
        ),
        ("an ack", error(0, SEQ), false),
        ("an error", error(-22, SEQ), true),
        ("a stale error", error(-22, SEQ + 1), false),
        ("an overrun", msg(wire::NLMSG_OVERRUN, SEQ, PORT, &[]), true),
        ("a noop", msg(wire::NLMSG_NOOP, SEQ, PORT, &[]), false),
        ("a cut header", [object(), vec![0; 6]].concat(), true),
        (
            "an error too short",
            msg(wire::NLMSG_ERROR, SEQ, PORT, &[]),
            true,
        ),
    ];
    for (what, datagram, ends) in cases {
        let mut state = DumpState::default();
        let ended = state.datagram(&datagram, SEQ, PORT, &mut |_: &Msg<'_>| Ok(()));
        assert_eq!(ended.is_some(), ends, "{what}: DumpState::datagram");
        assert_eq!(ends_dump(&datagram, SEQ, PORT), ends, "{what}: ends_dump");
    }
}

#[test]
fn a_dump_ends_with_its_outcome_or_the_first_error_of_on_msg() {
    let datagram = [
        msg(OBJECT, SEQ, PORT, &[1, 2, 3, 4]),
        msg(OBJECT, SEQ, PORT, &[5, 6, 7, 8]),
        msg(wire::NLMSG_DONE, SEQ, PORT, &[0; 4]),
    ]
    .concat();
    let mut state = DumpState::default();
    let outcome = state
        .datagram(&datagram, SEQ, PORT, &mut |_: &Msg<'_>| Ok(()))
        .unwrap()
        .unwrap();
    assert_eq!(outcome.n_objects, 2);
    let mut state = DumpState::default();
    let mut calls = 0;
    let ended = state.datagram(&datagram, SEQ, PORT, &mut |_: &Msg<'_>| {
        calls += 1;
        Err(Error::malformed(format!("object {calls}")))
    });
    // Every object was offered; the first error is the answer.
    assert_eq!(calls, 2);
    assert!(matches!(ended, Some(Err(err)) if err.to_string().contains("object 1")));
}
