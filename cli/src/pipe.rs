//! A D-Bus monitor's output: stdout written by a thread of its own, so that the cache keeps
//! reading the bus while stdout is slow (a paused terminal, a full pipe).
//!
//! The printer writes into a buffer; after each event the monitor hands the buffer to the
//! writer thread through a bounded channel, and while the channel is full it keeps the cache
//! handling messages ([`ObjectCache::process_until`]). The cache applies every change and
//! queues events up to its bound; past it, the monitor later prints an `overrun` line, the
//! changes from what it printed last to now, and a `resynced` line: never a silent gap.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::thread;

use futures_util::StreamExt;
use netmirror_client_cache::ObjectCache;

use crate::render::Printer;

/// How many printed events may wait for the writer thread.
const IN_FLIGHT: usize = 64;

/// How many events the cache of a monitor queues before it resyncs its consumer instead.
pub(crate) const MAX_QUEUED_EVENTS: usize = 16 * 1024;

/// A printer's output, shared with the monitor's loop.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Write for Buffer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Stdout on a writer thread.
pub(crate) struct Pipe {
    buffer: Buffer,
    chunks: Option<futures_channel::mpsc::Sender<Vec<u8>>>,
    writer: Option<thread::JoinHandle<io::Result<()>>>,
}

impl Pipe {
    /// Sends `printer`'s output through a writer thread from now on.
    pub(crate) fn start(printer: &mut Printer) -> anyhow::Result<Self> {
        let buffer = Buffer::default();
        printer.redirect(Box::new(buffer.clone()))?;
        let (tx, mut rx) = futures_channel::mpsc::channel::<Vec<u8>>(IN_FLIGHT);
        let writer = thread::Builder::new()
            .name("netmirror-stdout".into())
            .spawn(move || {
                let mut stdout = io::stdout();
                while let Some(chunk) = zbus::block_on(rx.next()) {
                    stdout.write_all(&chunk)?;
                    stdout.flush()?;
                }
                Ok(())
            })?;
        Ok(Self {
            buffer,
            chunks: Some(tx),
            writer: Some(writer),
        })
    }

    /// Hands what was printed since the last call to the writer, keeping `cache` handling
    /// messages while the writer is behind.
    pub(crate) async fn send(&mut self, cache: &mut ObjectCache) -> anyhow::Result<()> {
        let chunk = self.buffer.take();
        if chunk.is_empty() {
            return Ok(());
        }
        let Some(tx) = self.chunks.as_mut() else {
            return Ok(());
        };
        let ready = std::future::poll_fn(|cx| tx.poll_ready(cx));
        let room = match cache.process_until(ready).await {
            Some(room) => room,
            // The connection closed: wait for room without it.
            None => std::future::poll_fn(|cx| tx.poll_ready(cx)).await,
        };
        if room.is_err() || tx.start_send(chunk).is_err() {
            // The writer stopped: its error (a closed stdout) says why.
            return self.finish().await;
        }
        Ok(())
    }

    /// Waits until everything printed is written; the writer's error, if any.
    pub(crate) async fn finish(&mut self) -> anyhow::Result<()> {
        let rest = self.buffer.take();
        // Awaited, not blocked on: this runs inside the monitor's own `block_on`.
        if let Some(mut tx) = self.chunks.take()
            && !rest.is_empty()
        {
            let _ = std::future::poll_fn(|cx| tx.poll_ready(cx))
                .await
                .map(|()| tx.start_send(rest));
        }
        self.join()
    }

    /// Closes the channel and waits for the writer thread; its error, if any.
    fn join(&mut self) -> anyhow::Result<()> {
        drop(self.chunks.take());
        match self.writer.take().map(thread::JoinHandle::join) {
            Some(Ok(Err(err))) => Err(err.into()),
            Some(Err(_)) => Err(anyhow::anyhow!("the stdout writer panicked")),
            _ => Ok(()),
        }
    }
}

impl Drop for Pipe {
    /// On an early return (an error): hands over what is buffered if there is room, without
    /// waiting (no executor here), and waits for the writer.
    fn drop(&mut self) {
        let rest = self.buffer.take();
        if let Some(tx) = self.chunks.as_mut()
            && !rest.is_empty()
        {
            let _ = tx.try_send(rest);
        }
        let _ = self.join();
    }
}

/// The `overrun` line: the monitor fell behind; the changes since its last line follow.
pub(crate) fn print_overrun(printer: &mut Printer, missed: u64) -> anyhow::Result<()> {
    printer.status(
        &serde_json::json!({"object": "cache", "event": "overrun", "missed": missed}),
        &format!("[CACHE] overrun: the output fell behind ({missed} events not queued); resyncing"),
    )
}

/// The `resynced` line: what was printed since the overrun leads to the cache's state.
pub(crate) fn print_resynced(printer: &mut Printer, changes: usize) -> anyhow::Result<()> {
    printer.status(
        &serde_json::json!({"object": "cache", "event": "resynced", "changes": changes}),
        &format!("[CACHE] resynced: output equals the service again ({changes} changes found)"),
    )
}

/// The `reconciled` line, when a reconcile found the output behind the service (messages the
/// bus dropped): the changes it found were printed before it.
pub(crate) fn print_reconciled(printer: &mut Printer, differences: usize) -> anyhow::Result<()> {
    if differences == 0 {
        return Ok(());
    }
    printer.status(
        &serde_json::json!({"object": "cache", "event": "reconciled", "differences": differences}),
        &format!(
            "[CACHE] reconciled: messages were lost; {differences} differences found by reloading"
        ),
    )
}
