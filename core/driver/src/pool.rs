//! The idle HTTP/1.1 connections of one [`HttpClient`](crate::HttpClient), kept per origin
//! for the next request and closed after a while unused.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use hyper::client::conn::http1::SendRequest;

use crate::runtime::Runtime;

/// `(https, host, port)`. The host is shared: a kept request target hands its origin to every
/// exchange sent to it.
pub(crate) type Origin = (bool, std::sync::Arc<str>, u16);

pub(crate) type Sender = SendRequest<crate::http::RequestBody>;

/// How an [`HttpClient`](crate::HttpClient) keeps HTTP/1.1 connections open between requests.
///
/// A connection whose response was read to the end waits in the pool of its origin (scheme,
/// host and port) for the next request there; the most recently used one is taken first. It
/// closes when its origin already keeps [`PoolConfig::max_idle_per_origin`] connections, when
/// the server closes it, or once it has waited [`PoolConfig::idle_timeout`]: it is then never
/// used again, and closes at the next request to its origin or at the latest one more
/// timeout later. Pooling never bounds how many connections are open at once: the engine's
/// in-flight limits do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Idle connections kept per origin (default 256, the engine's default for exchanges in
    /// flight at once). Below the number of requests a burst sends to one origin at once,
    /// the connections beyond it close when their responses end, and the next burst opens
    /// them again. `0` keeps none: every request opens its own connection.
    pub max_idle_per_origin: usize,
    /// How long a connection may wait unused in the pool before it closes (default 90 s).
    /// [`Duration::ZERO`] keeps none, like a `max_idle_per_origin` of `0`.
    pub idle_timeout: Duration,
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig {
            max_idle_per_origin: 256,
            idle_timeout: Duration::from_secs(90),
        }
    }
}

impl PoolConfig {
    /// See [`PoolConfig::max_idle_per_origin`].
    pub fn max_idle_per_origin(mut self, n: usize) -> PoolConfig {
        self.max_idle_per_origin = n;
        self
    }

    /// See [`PoolConfig::idle_timeout`].
    pub fn idle_timeout(mut self, timeout: Duration) -> PoolConfig {
        self.idle_timeout = timeout;
        self
    }
}

/// A connection waiting for its next request, and since when.
struct Idle {
    sender: Sender,
    since: Instant,
}

impl Idle {
    /// Whether the connection went idle at `cutoff` or before (see
    /// [`IdlePool::expiry_cutoff_at`]).
    fn expired(&self, cutoff: Option<Instant>) -> bool {
        cutoff.is_some_and(|cutoff| self.since <= cutoff)
    }
}

#[derive(Default)]
struct Lists {
    /// Per origin, oldest first: connections go back in the order they became idle. An
    /// ordered map: an engine talks to a handful of origins, and comparing a few keys costs
    /// less than hashing one with the standard library's SipHash, twice per request.
    by_origin: BTreeMap<Origin, Vec<Idle>>,
    /// A task closes expired connections while any connection is idle.
    sweeping: bool,
}

/// The idle connections of one client.
pub(crate) struct IdlePool<R> {
    config: PoolConfig,
    lists: Mutex<Lists>,
    runtime: PhantomData<fn() -> R>,
}

impl<R> IdlePool<R> {
    pub(crate) fn config(&self) -> PoolConfig {
        self.config
    }
}

impl<R: Runtime> IdlePool<R> {
    pub(crate) fn new(config: PoolConfig) -> IdlePool<R> {
        IdlePool {
            config,
            lists: Mutex::default(),
            runtime: PhantomData,
        }
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, Lists> {
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The most recently used connection to `origin` that can take a request now, if any.
    /// Connections found expired or closed on the way are dropped, which closes them.
    pub(crate) fn checkout(&self, origin: &Origin) -> Option<Sender> {
        let cutoff = self.expiry_cutoff();
        let mut lists = self.lists();
        let list = lists.by_origin.get_mut(origin)?;
        while let Some(idle) = list.pop() {
            if idle.expired(cutoff) {
                // Everything older than an expired connection has expired too.
                list.clear();
                return None;
            }
            if idle.sender.is_ready() {
                return Some(idle.sender);
            }
        }
        None
    }

    /// Keeps `sender` for the next request to `origin`, unless the origin already keeps as
    /// many as it may (the connection then closes). The first connection kept starts the task
    /// that closes the expired ones.
    pub(crate) fn put(self: &Arc<Self>, origin: Origin, sender: Sender) {
        if self.config.max_idle_per_origin == 0 || self.config.idle_timeout.is_zero() {
            return;
        }
        let now = R::now();
        let cutoff = self.expiry_cutoff_at(now);
        let mut lists = self.lists();
        let list = lists.by_origin.entry(origin).or_default();
        let stale = list.partition_point(|idle| idle.expired(cutoff));
        list.drain(..stale);
        if list.len() >= self.config.max_idle_per_origin {
            return;
        }
        list.push(Idle { sender, since: now });
        let start_sweeping = !lists.sweeping;
        lists.sweeping = true;
        drop(lists);
        // Spawned once the lock is released: a runtime may run code of its own in spawn.
        if start_sweeping {
            crate::runtime::spawn::<R>(sweep(Arc::downgrade(self), self.config.idle_timeout));
        }
    }

    /// The latest moment a connection may have gone idle and be expired now.
    fn expiry_cutoff(&self) -> Option<Instant> {
        self.expiry_cutoff_at(R::now())
    }

    /// [`IdlePool::expiry_cutoff`] at `now`: `None`, nothing expired, while the clock has
    /// not yet run for a whole timeout. Found once per look at a list, so that each
    /// connection's check is a comparison of two instants rather than a subtraction (`put`
    /// searches a list of as many connections as the engine keeps in flight).
    fn expiry_cutoff_at(&self, now: Instant) -> Option<Instant> {
        now.checked_sub(self.config.idle_timeout)
    }

    /// Drops the expired and closed connections; returns whether any connection is still
    /// idle, else stops sweeping (under the same lock as [`IdlePool::put`] starts it).
    fn sweep_once(&self) -> bool {
        let cutoff = self.expiry_cutoff();
        let mut lists = self.lists();
        lists.by_origin.retain(|_, list| {
            list.retain(|idle| !idle.expired(cutoff) && !idle.sender.is_closed());
            !list.is_empty()
        });
        lists.sweeping = !lists.by_origin.is_empty();
        lists.sweeping
    }
}

/// Closes expired connections every `period` until none is idle or the client is gone.
async fn sweep<R: Runtime>(pool: Weak<IdlePool<R>>, period: Duration) {
    loop {
        // A timeout too long for the clock never expires: closed connections are still
        // dropped when a request looks for one.
        let Some(at) = R::now().checked_add(period) else {
            return;
        };
        R::sleep_until(at).await;
        match pool.upgrade() {
            Some(pool) if pool.sweep_once() => {}
            _ => return,
        }
    }
}
