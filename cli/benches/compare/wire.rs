//! A minimal blocking D-Bus client written against the wire format, and a raw UNIX-socket
//! ping-pong: the floors of scenario 6.
//!
//! [`RawBus`] does what a thin C client such as sd-bus does per call and nothing more: one
//! pre-built message whose serial is patched, one `write`, reads until the reply. It speaks
//! only what the benchmark needs (EXTERNAL auth, `Hello`, method calls with string
//! arguments, little-endian).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Header field codes of the D-Bus wire format.
const FIELD_PATH: u8 = 1;
const FIELD_INTERFACE: u8 = 2;
const FIELD_MEMBER: u8 = 3;
const FIELD_DESTINATION: u8 = 6;
const FIELD_SIGNATURE: u8 = 8;
/// Message types.
const METHOD_RETURN: u8 = 2;
const ERROR: u8 = 3;

/// A connection to a bus, authenticated, with `Hello` done.
pub(crate) struct RawBus {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    serial: u32,
    buf: Vec<u8>,
}

/// The socket path of a `unix:path=...` address.
pub(crate) fn socket_path(address: &str) -> anyhow::Result<&str> {
    address
        .strip_prefix("unix:")
        .and_then(|rest| rest.split(',').find_map(|kv| kv.strip_prefix("path=")))
        .with_context(|| format!("not a unix:path= address: {address}"))
}

impl RawBus {
    pub(crate) fn connect(address: &str) -> anyhow::Result<Self> {
        let stream = UnixStream::connect(socket_path(address)?)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut writer = stream.try_clone()?;
        let mut reader = BufReader::new(stream);
        let uid = std::fs::read_to_string("/proc/self/status")?
            .lines()
            .find(|line| line.starts_with("Uid:"))
            .and_then(|line| line.split_whitespace().nth(1).map(str::to_owned))
            .context("no Uid in /proc/self/status")?;
        let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
        writer.write_all(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes())?;
        let mut line = String::new();
        reader.read_line(&mut line)?;
        if !line.starts_with("OK ") {
            bail!("bus refused EXTERNAL auth: {}", line.trim());
        }
        writer.write_all(b"BEGIN\r\n")?;
        let mut bus = Self {
            writer,
            reader,
            serial: 0,
            buf: Vec::new(),
        };
        let mut hello = method_call(
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "Hello",
            &[],
        );
        bus.round_trip(&mut hello)?;
        Ok(bus)
    }

    /// Sends `msg` (its serial patched) and reads until the reply; returns the reply's size.
    pub(crate) fn round_trip(&mut self, msg: &mut [u8]) -> anyhow::Result<usize> {
        self.serial += 1;
        msg[8..12].copy_from_slice(&self.serial.to_le_bytes());
        self.writer.write_all(msg)?;
        loop {
            let mut fixed = [0u8; 16];
            self.reader.read_exact(&mut fixed)?;
            if fixed[0] != b'l' {
                bail!("big-endian message from the bus");
            }
            let body_len = u32::from_le_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]) as usize;
            let fields_len =
                u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]) as usize;
            let rest = fields_len.next_multiple_of(8) + body_len;
            self.buf.resize(rest, 0);
            self.reader.read_exact(&mut self.buf)?;
            match fixed[1] {
                METHOD_RETURN => return Ok(16 + rest),
                ERROR => bail!("the bus answered with an error"),
                // Signals (NameAcquired after Hello): not ours.
                _ => {}
            }
        }
    }
}

/// A method call with string arguments, serial 0 (patched on send).
pub(crate) fn method_call(
    destination: &str,
    path: &str,
    interface: &str,
    member: &str,
    args: &[&str],
) -> Vec<u8> {
    let mut body = Vec::new();
    for arg in args {
        put_string(&mut body, arg);
    }
    let signature = "s".repeat(args.len());
    let mut msg = vec![b'l', 1, 0, 1];
    msg.extend_from_slice(&(body.len() as u32).to_le_bytes());
    msg.extend_from_slice(&0u32.to_le_bytes());
    msg.extend_from_slice(&0u32.to_le_bytes()); // Fields array length, set below.
    let fields_start = msg.len();
    for (code, sig, value) in [
        (FIELD_PATH, b'o', path),
        (FIELD_INTERFACE, b's', interface),
        (FIELD_MEMBER, b's', member),
        (FIELD_DESTINATION, b's', destination),
    ] {
        pad(&mut msg, 8);
        msg.extend_from_slice(&[code, 1, sig, 0]);
        put_string(&mut msg, value);
    }
    if !signature.is_empty() {
        pad(&mut msg, 8);
        msg.extend_from_slice(&[FIELD_SIGNATURE, 1, b'g', 0]);
        msg.push(signature.len() as u8);
        msg.extend_from_slice(signature.as_bytes());
        msg.push(0);
    }
    let fields_len = (msg.len() - fields_start) as u32;
    msg[12..16].copy_from_slice(&fields_len.to_le_bytes());
    pad(&mut msg, 8);
    msg.extend_from_slice(&body);
    msg
}

/// A D-Bus string (`s`, `o`): aligned length, bytes, NUL. Callers start aligned to 4 or pad.
fn put_string(out: &mut Vec<u8>, text: &str) {
    pad(out, 4);
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.push(0);
}

fn pad(out: &mut Vec<u8>, align: usize) {
    while !out.len().is_multiple_of(align) {
        out.push(0);
    }
}

/// Round trips of `request` bytes out and `reply` bytes back over a UNIX socket pair to an
/// echo thread: the cost of two context switches and four copies, no bus, no parsing.
pub(crate) fn socket_ping_pong(
    request: usize,
    reply: usize,
    n: usize,
) -> anyhow::Result<Vec<Duration>> {
    let (mut client, mut server) = UnixStream::pair()?;
    client.set_read_timeout(Some(Duration::from_secs(10)))?;
    server.set_read_timeout(Some(Duration::from_secs(10)))?;
    let echo = thread::spawn(move || -> std::io::Result<()> {
        let mut inbuf = vec![0u8; request];
        let outbuf = vec![0u8; reply];
        for _ in 0..n {
            server.read_exact(&mut inbuf)?;
            server.write_all(&outbuf)?;
        }
        Ok(())
    });
    let out = vec![1u8; request];
    let mut inbuf = vec![0u8; reply];
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        client.write_all(&out)?;
        client.read_exact(&mut inbuf)?;
        times.push(started.elapsed());
    }
    match echo.join() {
        Ok(result) => result?,
        Err(_) => bail!("the echo thread panicked"),
    }
    Ok(times)
}
