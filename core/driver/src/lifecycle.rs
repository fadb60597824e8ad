//! The engine's lifecycle: which runs and subscriptions are open, and [`Engine::close`].
//!
//! Every run, task subscription and Notification-T subscription of an engine registers here
//! when it starts and leaves when its driver ends. Closing marks the engine closed (nothing new
//! starts), closes the subscriptions, then drains or cancels the runs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::Duration;

use futures::FutureExt;
use futures::channel::oneshot;

use crate::engine::Engine;
use crate::runtime::Runtime;

/// The stable code of a run, task call or subscription refused because the engine was closed.
pub const ENGINE_CLOSED: &str = "engine.closed";

/// What [`Engine::close`] does with the runs still in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseMode {
    /// Let them finish; cancel those still running when the deadline passes.
    Drain,
    /// Cancel them at once (the deadline then bounds nothing).
    Cancel,
}

/// What [`Engine::close`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CloseReport {
    /// Runs in flight at the close that finished on their own.
    pub runs_drained: usize,
    /// Runs the close cancelled (at once, or when the drain deadline passed).
    pub runs_cancelled: usize,
    /// `CancelTask` requests the cancelled runs sent for the remote tasks they abandoned.
    pub tasks_cancelled: u64,
    /// Task and Notification-T subscriptions the close ended.
    pub subscriptions_closed: usize,
    /// Whether the drain deadline passed with runs still in flight.
    pub deadline_passed: bool,
}

/// Counters one run's driver keeps for the close report, and the close's cancel flag.
#[derive(Debug, Default)]
pub(crate) struct RunStats {
    /// `CancelTask` exchanges the run started.
    pub(crate) cancels_sent: AtomicU64,
    cancelled_by_close: AtomicBool,
    /// Drivers waiting for [`RunStats::closing`].
    wakers: Mutex<Vec<Waker>>,
}

impl RunStats {
    fn mark_cancelled(&self) {
        self.cancelled_by_close.store(true, Ordering::SeqCst);
        let wakers = std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|e| e.into_inner()));
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Resolves once the engine's close cancelled this run: a driver waiting for a slow event
    /// consumer stops waiting then, so a close never hangs on a stream nobody reads.
    pub(crate) async fn closing(&self) {
        std::future::poll_fn(|cx| {
            let mut wakers = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
            if self.cancelled_by_close.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}

struct RunSlot {
    /// Sending (or dropping) it cancels the run.
    cancel: Option<oneshot::Sender<()>>,
    stats: Arc<RunStats>,
}

type Closer = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct State {
    closed: bool,
    next_id: u64,
    runs: BTreeMap<u64, RunSlot>,
    subscriptions: BTreeMap<u64, Closer>,
    /// Runs in flight when the close began, and how each ended.
    watched: BTreeMap<u64, Arc<RunStats>>,
    ended: Vec<Arc<RunStats>>,
    wakers: Vec<Waker>,
}

/// The open runs and subscriptions of one engine.
#[derive(Default)]
pub(crate) struct Registry {
    state: Mutex<State>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("Registry")
            .field("closed", &s.closed)
            .field("runs", &s.runs.len())
            .field("subscriptions", &s.subscriptions.len())
            .finish()
    }
}

/// A run's place in the registry; dropping it (when the driver ends) removes the run.
pub(crate) struct RunTicket {
    registry: Arc<Registry>,
    id: u64,
    pub(crate) stats: Arc<RunStats>,
}

impl Drop for RunTicket {
    fn drop(&mut self) {
        let mut s = self.registry.lock();
        s.runs.remove(&self.id);
        if let Some(stats) = s.watched.remove(&self.id) {
            s.ended.push(stats);
        }
        let wakers = std::mem::take(&mut s.wakers);
        drop(s);
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// A subscription's place in the registry; dropping it removes the subscription.
pub(crate) struct SubscriptionTicket {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for SubscriptionTicket {
    fn drop(&mut self) {
        let closer = self.registry.lock().subscriptions.remove(&self.id);
        drop(closer);
    }
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a run: its ticket and the receiver that cancels it; `None` once closed.
    pub(crate) fn open_run(self: &Arc<Self>) -> Option<(RunTicket, oneshot::Receiver<()>)> {
        let mut s = self.lock();
        if s.closed {
            return None;
        }
        s.next_id += 1;
        let id = s.next_id;
        let (tx, rx) = oneshot::channel();
        let stats = Arc::new(RunStats::default());
        s.runs.insert(
            id,
            RunSlot {
                cancel: Some(tx),
                stats: stats.clone(),
            },
        );
        Some((
            RunTicket {
                registry: self.clone(),
                id,
                stats,
            },
            rx,
        ))
    }

    /// Registers a subscription with the call that closes it; `None` once closed.
    pub(crate) fn open_subscription(
        self: &Arc<Self>,
        closer: impl FnOnce() + Send + 'static,
    ) -> Option<SubscriptionTicket> {
        let mut s = self.lock();
        if s.closed {
            return None;
        }
        s.next_id += 1;
        let id = s.next_id;
        s.subscriptions.insert(id, Box::new(closer));
        Some(SubscriptionTicket {
            registry: self.clone(),
            id,
        })
    }

    /// Whether the engine was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Marks the engine closed and closes every subscription; returns how many it closed and
    /// starts watching the runs in flight.
    fn begin_close(&self) -> usize {
        let closers: Vec<Closer> = {
            let mut s = self.lock();
            s.closed = true;
            let ids: Vec<(u64, Arc<RunStats>)> = s
                .runs
                .iter()
                .map(|(id, slot)| (*id, slot.stats.clone()))
                .collect();
            s.watched.extend(ids);
            std::mem::take(&mut s.subscriptions).into_values().collect()
        };
        let n = closers.len();
        closers.into_iter().for_each(|close| close());
        n
    }

    /// Cancels every run still in flight.
    fn cancel_all(&self) {
        let senders: Vec<oneshot::Sender<()>> = {
            let mut s = self.lock();
            s.runs
                .values_mut()
                .filter_map(|slot| {
                    slot.stats.mark_cancelled();
                    slot.cancel.take()
                })
                .collect()
        };
        for tx in senders {
            let _ = tx.send(());
        }
    }

    /// Waits until no run is in flight.
    async fn idle(&self) {
        std::future::poll_fn(|cx| {
            let mut s = self.lock();
            if s.runs.is_empty() {
                return Poll::Ready(());
            }
            if !s.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                s.wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    fn report(&self, subscriptions_closed: usize, deadline_passed: bool) -> CloseReport {
        let mut s = self.lock();
        let mut report = CloseReport {
            subscriptions_closed,
            deadline_passed,
            ..CloseReport::default()
        };
        let ended = std::mem::take(&mut s.ended);
        for stats in &ended {
            if stats.cancelled_by_close.load(Ordering::Relaxed) {
                report.runs_cancelled += 1;
                report.tasks_cancelled += stats.cancels_sent.load(Ordering::Relaxed);
            } else {
                report.runs_drained += 1;
            }
        }
        report
    }

    /// Closes without waiting (the engine was dropped): nothing new starts, subscriptions
    /// close, runs cancel and clean up in the background.
    pub(crate) fn close_now(&self) {
        self.begin_close();
        self.cancel_all();
    }
}

impl<R: Runtime> Engine<R> {
    /// Shuts the engine down: from now on new runs, task calls and subscriptions are refused
    /// ([`ENGINE_CLOSED`]); every task and Notification-T subscription opened through this
    /// engine (or an extension sender built from it) is closed; then the runs in flight are
    /// drained or cancelled as `mode` says. With [`CloseMode::Drain`], runs still in flight
    /// when `deadline` passes are cancelled. A cancelled run sends `CancelTask` for every
    /// known non-final remote task it abandons (bounded by the cancel budget); `close` returns
    /// once every run has ended, with the [`CloseReport`].
    ///
    /// Every clone of the engine is closed. Closing again reports only what is left. Dropping
    /// the last clone of the engine closes it without waiting: its runs are cancelled and
    /// clean up in the background.
    pub async fn close(&self, mode: CloseMode, deadline: Duration) -> CloseReport {
        let registry = self.registry();
        let subscriptions_closed = registry.begin_close();
        let mut deadline_passed = false;
        match mode {
            CloseMode::Cancel => registry.cancel_all(),
            CloseMode::Drain => {
                let at = R::now().checked_add(deadline);
                let timer = match at {
                    Some(at) => R::sleep_until(at),
                    None => std::future::pending().boxed(),
                };
                let idle = registry.idle().boxed();
                if let futures::future::Either::Right(_) =
                    futures::future::select(idle, timer).await
                {
                    deadline_passed = true;
                    registry.cancel_all();
                }
            }
        }
        registry.idle().await;
        registry.report(subscriptions_closed, deadline_passed)
    }

    /// Whether [`Engine::close`] was called (or the engine is being dropped).
    pub fn is_closed(&self) -> bool {
        self.registry().is_closed()
    }
}
