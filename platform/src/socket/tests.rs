//! Unit tests of the two-thread dump machinery ([`run_parallel`]) without a socket: objects
//! keep their order through every kind of chunk, malformed messages are counted wherever they
//! are parsed, idle work is asked for while the consumer waits, and errors come back.

use std::time::Duration;

use super::*;

/// A test message: 4 bytes are an object (its number), 5 bytes a message to skip, anything
/// else is malformed.
fn parse(payload: &[u8]) -> Result<Option<u32>> {
    match <[u8; 4]>::try_from(payload) {
        Ok(bytes) => Ok(Some(u32::from_ne_bytes(bytes))),
        Err(_) if payload.len() == 5 => Ok(None),
        Err(_) => Err(Error::malformed("test message")),
    }
}

#[derive(Debug, Default)]
struct Seen {
    objs: Vec<u32>,
    owned_chunks: usize,
    shared_chunks: usize,
    idle_calls: usize,
    malformed: usize,
}

#[test]
fn objects_keep_their_order_through_every_kind_of_chunk() {
    const N: u32 = 60_000;
    let mut seen = Seen::default();
    let mut on_malformed_count = 0;
    let result = run_parallel(
        |filling: &mut Filling<'_, u32>| {
            for i in 0..N {
                if i % 1000 == 0 {
                    filling.add(&[1, 2, 3], &parse)?;
                    filling.add(&[0; 5], &parse)?;
                }
                // A pause halfway: the consumer runs dry and waits (idle work, then raw
                // chunks it parses itself).
                if i == N / 2 {
                    std::thread::sleep(Duration::from_millis(30));
                }
                filling.add(&i.to_ne_bytes(), &parse)?;
            }
            Ok("done")
        },
        &parse,
        &mut |chunk| match chunk {
            Chunk::Objs(objs) => {
                seen.owned_chunks += 1;
                seen.objs.append(objs);
                // Slow at first, so that chunks pile up and the receiver allocates.
                if seen.objs.len() < 20_000 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Chunk::Shared(objs) => {
                seen.shared_chunks += 1;
                seen.objs.extend(objs.drain(..).map(|obj| *obj));
            }
            Chunk::Idle(worked) => {
                seen.idle_calls += 1;
                // Claim work for the first few calls: each claim is followed by another call.
                *worked = seen.idle_calls < 3;
            }
            Chunk::Restart => panic!("run_parallel never restarts"),
        },
        &mut |_| on_malformed_count += 1,
    );
    seen.malformed = on_malformed_count;
    assert_eq!(result.unwrap(), "done");
    assert_eq!(
        seen.objs,
        (0..N).collect::<Vec<_>>(),
        "every object, in order"
    );
    assert_eq!(seen.malformed, (N / 1000) as usize);
    assert!(seen.owned_chunks > 0 && seen.shared_chunks > 0, "{seen:?}");
    assert!(seen.idle_calls >= 3, "{seen:?}");
}

#[test]
fn an_error_of_the_receiver_comes_back_after_what_it_handed_over() {
    let mut got = Vec::new();
    let result: Result<()> = run_parallel(
        |filling: &mut Filling<'_, u32>| {
            for i in 0..1000u32 {
                filling.add(&i.to_ne_bytes(), &parse)?;
            }
            Err(Error::Timeout)
        },
        &parse,
        &mut |chunk| match chunk {
            Chunk::Objs(objs) => got.append(objs),
            Chunk::Shared(objs) => got.extend(objs.drain(..).map(|obj| *obj)),
            Chunk::Idle(_) | Chunk::Restart => {}
        },
        &mut |_| {},
    );
    assert!(matches!(result, Err(Error::Timeout)), "{result:?}");
    assert_eq!(got, (0..1000).collect::<Vec<_>>());
}

#[test]
fn a_wait_for_the_other_thread_polls_then_sleeps_and_sees_the_end() {
    let (tx, rx) = mpsc::sync_channel(1);
    let sender = std::thread::spawn(move || {
        tx.send(1).unwrap();
        // Long after the receiver stopped polling: its sleeping `recv` takes it.
        std::thread::sleep(SPIN_WAIT * 20);
        tx.send(2).unwrap();
    });
    assert_eq!(recv_spinning(&rx), Ok(1));
    assert_eq!(recv_spinning(&rx), Ok(2));
    sender.join().unwrap();
    assert_eq!(
        recv_spinning(&rx),
        Err(mpsc::RecvError),
        "the sender is gone"
    );
}

#[test]
fn polling_stops_when_ready_or_after_its_time() {
    // On one processor (`taskset -c 0 cargo test ...`) nothing is polled: one look.
    let parallel = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let start = Instant::now();
    let mut polls = 0;
    assert!(!spin_until(|| {
        polls += 1;
        false
    }));
    if parallel {
        assert!(start.elapsed() >= SPIN_WAIT);
        assert!(polls >= 1);
    } else {
        assert_eq!(polls, 1, "one look, no polling, on one processor");
    }

    let mut polls = 0;
    let ready = spin_until(|| {
        polls += 1;
        polls == 3
    });
    if parallel {
        assert!(ready);
        assert_eq!(polls, 3, "no poll after the first that is ready");
    } else {
        assert!(!ready);
        assert_eq!(polls, 1);
    }
}

/// The dump request for `kind`, as the platform builds them.
fn dump_request(kind: u16) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut buf, kind, wire::NLM_F_REQUEST | wire::NLM_F_DUMP, 7);
    msg.raw(&[0u8; 16]);
    msg.finish();
    buf
}

#[test]
fn only_a_link_dump_is_read_with_a_peek_at_each_datagram() {
    for kind in [
        wire::RTM_GETROUTE,
        wire::RTM_GETADDR,
        wire::RTM_GETRULE,
        wire::RTM_GETNEXTHOP,
    ] {
        assert!(datagrams_fit_min_read(&dump_request(kind)), "kind {kind}");
    }
    assert!(!datagrams_fit_min_read(&dump_request(wire::RTM_GETLINK)));
    // Nothing that names a kind: the peek, which reads any size.
    assert!(!datagrams_fit_min_read(&[]));
    assert!(!datagrams_fit_min_read(&[16, 0, 0, 0, 26]));
}
