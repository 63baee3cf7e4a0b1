//! A blocking facade: the same async cache, on a private thread with its own executor.
//!
//! As NMClient's synchronous initialization runs its async initialization on a private main
//! context, [`BlockingCache`] runs an [`ObjectCache`] inside `zbus::block_on` on a thread of
//! its own. Queries run there too, between batches, so they always see a consistent cache.

use std::{sync::mpsc, thread, time::Duration};

use futures_util::StreamExt;

use crate::{CacheBuilder, Error, Event, ObjectCache, Result};

type Query = Box<dyn FnOnce(&ObjectCache) + Send>;

/// An [`ObjectCache`] for synchronous code.
#[derive(Debug)]
pub struct BlockingCache {
    queries: futures_channel::mpsc::UnboundedSender<Query>,
    events: mpsc::Receiver<Event>,
    thread: Option<thread::JoinHandle<()>>,
}

impl BlockingCache {
    /// Connect to the bus at `address` (a D-Bus address such as `unix:path=/run/dbus/...`), build
    /// the cache and wait until it is loaded.
    pub fn connect(address: &str, builder: CacheBuilder) -> Result<Self> {
        let address = address.to_owned();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        let (query_tx, mut query_rx) = futures_channel::mpsc::unbounded::<Query>();
        let (event_tx, event_rx) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("netmirror-cache".into())
            .spawn(move || {
                zbus::block_on(async move {
                    let setup = async {
                        let conn = zbus::connection::Builder::address(address.as_str())
                            .build()
                            .await?;
                        builder.build_loaded(&conn).await
                    };
                    let mut cache = match setup.await {
                        Ok(cache) => {
                            let _ = ready_tx.send(Ok(()));
                            cache
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    loop {
                        match cache.next_event_or(query_rx.next()).await {
                            Ok(Some(ev)) => {
                                if event_tx.send(ev).is_err() {
                                    return;
                                }
                            }
                            Ok(None) => return,
                            Err(Some(query)) => query(&cache),
                            Err(None) => return,
                        }
                    }
                });
            })
            .map_err(|_| Error::ThreadGone)?;
        ready_rx.recv().map_err(|_| Error::ThreadGone)??;
        Ok(Self {
            queries: query_tx,
            events: event_rx,
            thread: Some(thread),
        })
    }

    /// Run `f` on the cache (on its thread, between batches) and return its result.
    pub fn with<R: Send + 'static>(
        &self,
        f: impl FnOnce(&ObjectCache) -> R + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = mpsc::channel();
        let query: Query = Box::new(move |cache| {
            let _ = tx.send(f(cache));
        });
        self.queries
            .unbounded_send(query)
            .map_err(|_| Error::ThreadGone)?;
        rx.recv().map_err(|_| Error::ThreadGone)
    }

    /// The next event, waiting at most `timeout`.
    pub fn recv_event(&self, timeout: Duration) -> Option<Event> {
        self.events.recv_timeout(timeout).ok()
    }
}

impl Drop for BlockingCache {
    fn drop(&mut self) {
        self.queries.close_channel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
