//! The queue that carries completions (response parts, failures, host answers) from the tasks
//! doing the work to the loop feeding them to the core, and a run's events and progress
//! requests to and from its handle: many senders, one receiver, bounded.
//!
//! `futures`' bounded channel allocates a node for every item and a parking slot for every
//! sender clone: four allocations per request, where an exchange clones a sender and sends a
//! head, a body and an end. Here items go into one ring buffer that grows to the traffic and is
//! then reused, and a sender is a shared pointer: after warm-up, sending costs a lock and no
//! allocation.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures::Stream;

/// A buffer that grew past this many items is given back once the receiver has emptied it: a
/// burst (a consumer that fell behind on events) does not keep its memory for the run's life.
const KEEP_AT_MOST: usize = 64;

/// A new queue holding at most `bound` items (at least one); a sender finding it full waits.
pub(crate) fn channel<T>(bound: usize) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            bound: bound.max(1),
            senders: 1,
            receiving: true,
            receiver: None,
            blocked: Vec::new(),
        }),
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared },
    )
}

struct Shared<T> {
    state: Mutex<State<T>>,
}

struct State<T> {
    items: VecDeque<T>,
    bound: usize,
    /// Live senders: with none left and nothing queued, the receiver's stream ends.
    senders: usize,
    /// Whether the receiver is still there: without it, sending fails.
    receiving: bool,
    /// The receiver, waiting for an item.
    receiver: Option<Waker>,
    /// Senders waiting for room.
    blocked: Vec<Waker>,
}

impl<T> Shared<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics while holding the lock; a poisoned queue is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Remembers `waker` in `slot`, unless it already holds one that wakes the same task.
fn remember(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(known) if known.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

/// The sending side; cloning it adds a sender.
pub(crate) struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        self.shared.state().senders += 1;
        Sender {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state.senders -= 1;
        // The last sender gone: a waiting receiver learns that its stream has ended.
        let waiting = if state.senders == 0 {
            state.receiver.take()
        } else {
            None
        };
        drop(state);
        if let Some(w) = waiting {
            w.wake();
        }
    }
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> Sender<T> {
    /// Queues `item` if there is room now; gives it back when the queue is full or the
    /// receiver is gone.
    pub(crate) fn try_send(&self, item: T) -> Result<(), T> {
        let state = self.shared.state();
        if !state.receiving || state.items.len() >= state.bound {
            return Err(item);
        }
        push(state, item);
        Ok(())
    }

    /// Queues `item`, waiting while the queue is full. Gives the item back when the receiver
    /// is gone.
    ///
    /// Not an `async fn`: one would keep the item twice in its future, as its argument and as
    /// the slot it is sent from.
    pub(crate) fn send(&self, item: T) -> impl Future<Output = Result<(), T>> + '_ {
        let mut item = Some(item);
        std::future::poll_fn(move |cx| self.poll_send(cx, &mut item))
    }

    fn poll_send(&self, cx: &mut Context<'_>, item: &mut Option<T>) -> Poll<Result<(), T>> {
        let mut state = self.shared.state();
        let Some(value) = item.take() else {
            // Polled again after it finished: nothing left to send.
            return Poll::Ready(Ok(()));
        };
        if !state.receiving {
            return Poll::Ready(Err(value));
        }
        if state.items.len() >= state.bound {
            *item = Some(value);
            if !state.blocked.iter().any(|w| w.will_wake(cx.waker())) {
                state.blocked.push(cx.waker().clone());
            }
            return Poll::Pending;
        }
        push(state, value);
        Poll::Ready(Ok(()))
    }
}

/// Queues `item` and wakes a waiting receiver, outside the lock.
fn push<T>(mut state: MutexGuard<'_, State<T>>, item: T) {
    state.items.push_back(item);
    let receiver = state.receiver.take();
    drop(state);
    if let Some(w) = receiver {
        w.wake();
    }
}

/// The receiving side: a stream of the items in the order they were queued, ending when every
/// sender is gone and the queue is empty. Dropping it fails every later send.
pub(crate) struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

impl<T> Receiver<T> {
    /// The next queued item, without waiting.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        pop(self.shared.state())
    }

    /// Gives the buffer's memory back if nothing is queued (a receiver about to wait long).
    pub(crate) fn release_buffer(&mut self) {
        let mut state = self.shared.state();
        if state.items.is_empty() {
            state.items = VecDeque::new();
        }
    }

    /// The next queued item; `None` once every sender is gone and nothing is left.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = self.shared.state();
        if state.items.is_empty() {
            if state.senders == 0 {
                return Poll::Ready(None);
            }
            remember(&mut state.receiver, cx.waker());
            return Poll::Pending;
        }
        Poll::Ready(pop(state))
    }
}

/// The oldest item, waking the senders waiting for the room it leaves (outside the lock); a
/// large buffer left empty is given back.
fn pop<T>(mut state: MutexGuard<'_, State<T>>) -> Option<T> {
    let item = state.items.pop_front()?;
    if state.items.is_empty() && state.items.capacity() > KEEP_AT_MOST {
        state.items = VecDeque::new();
    }
    // Nobody blocked (nearly always): the list keeps its room for the next time.
    let blocked = if state.blocked.is_empty() {
        Vec::new()
    } else {
        std::mem::take(&mut state.blocked)
    };
    drop(state);
    blocked.into_iter().for_each(Waker::wake);
    Some(item)
}

impl<T> Stream for Receiver<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().poll_recv(cx)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state.receiving = false;
        let items = std::mem::take(&mut state.items);
        let blocked = std::mem::take(&mut state.blocked);
        drop(state);
        // Items are dropped and senders woken outside the lock: either may run other code.
        drop(items);
        blocked.into_iter().for_each(Waker::wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::task::noop_waker;
    use futures::{FutureExt, StreamExt};
    use std::future::Future;

    /// Runs a future that must not wait.
    fn block_on<F: Future>(future: F) -> F::Output {
        future.now_or_never().expect("ready at once")
    }

    #[test]
    fn items_arrive_in_order_and_the_stream_ends_with_the_last_sender() {
        let (tx, rx) = channel(8);
        let second = tx.clone();
        block_on(async {
            tx.send(1).await.unwrap();
            second.send(2).await.unwrap();
            tx.send(3).await.unwrap();
        });
        drop((tx, second));
        assert_eq!(block_on(rx.collect::<Vec<_>>()), [1, 2, 3]);
    }

    #[test]
    fn a_full_queue_holds_the_sender_until_the_receiver_takes_an_item() {
        let (tx, mut rx) = channel(2);
        block_on(async {
            tx.send(1).await.unwrap();
            tx.send(2).await.unwrap();
        });
        let mut third = Box::pin(tx.send(3));
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(third.as_mut().poll(&mut cx).is_pending());
        assert!(third.as_mut().poll(&mut cx).is_pending());
        assert_eq!(rx.try_recv(), Some(1));
        assert!(matches!(third.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(rx.try_recv(), Some(2));
        assert_eq!(rx.try_recv(), Some(3));
        assert_eq!(rx.try_recv(), None);
    }

    #[test]
    fn a_waiting_receiver_is_woken_by_an_item_and_by_the_last_sender_leaving() {
        let (tx, mut rx) = channel::<u8>(4);
        let (waker, woken) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(rx.poll_recv(&mut cx).is_pending());
        block_on(tx.send(7)).unwrap();
        assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(7)));
        assert!(rx.poll_recv(&mut cx).is_pending());
        let other = tx.clone();
        drop(tx);
        assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(other);
        assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn without_the_receiver_a_send_gives_its_item_back_and_a_blocked_one_wakes() {
        let (tx, rx) = channel(1);
        block_on(tx.send("kept")).unwrap();
        let (waker, woken) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut blocked = Box::pin(tx.send("blocked"));
        assert!(blocked.as_mut().poll(&mut cx).is_pending());
        drop(rx);
        assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(blocked.as_mut().poll(&mut cx), Poll::Ready(Err("blocked")));
        assert_eq!(block_on(tx.send("late")), Err("late"));
    }

    #[test]
    fn a_bound_of_zero_still_holds_one_item() {
        let (tx, mut rx) = channel(0);
        block_on(tx.send(1)).unwrap();
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Box::pin(tx.send(2)).as_mut().poll(&mut cx).is_pending());
        assert_eq!(rx.try_recv(), Some(1));
    }

    #[test]
    fn try_send_queues_while_there_is_room_and_a_receiver() {
        let (tx, mut rx) = channel(2);
        assert_eq!(tx.try_send(1), Ok(()));
        assert_eq!(tx.try_send(2), Ok(()));
        assert_eq!(tx.try_send(3), Err(3));
        assert_eq!(rx.try_recv(), Some(1));
        assert_eq!(tx.try_send(4), Ok(()));
        drop(rx);
        assert_eq!(tx.try_send(5), Err(5));
    }

    #[test]
    fn a_buffer_grown_by_a_burst_is_given_back_once_emptied() {
        let (tx, mut rx) = channel(1024);
        let capacity = |rx: &Receiver<usize>| rx.shared.state().items.capacity();
        for n in 0..4 {
            tx.try_send(n).unwrap();
        }
        while rx.try_recv().is_some() {}
        let small = capacity(&rx);
        assert!(small >= 4, "{small}");
        for n in 0..KEEP_AT_MOST + 1 {
            tx.try_send(n).unwrap();
        }
        assert!(capacity(&rx) > KEEP_AT_MOST);
        while rx.try_recv().is_some() {}
        assert_eq!(capacity(&rx), 0);
        // A small buffer is kept for the next items, unless the receiver gives it back.
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        rx.try_recv().unwrap();
        tx.try_send(3).unwrap();
        rx.release_buffer();
        assert!(
            capacity(&rx) >= 2,
            "nothing is released while an item waits"
        );
        assert_eq!(rx.try_recv(), Some(2));
        assert_eq!(rx.try_recv(), Some(3));
        assert!(capacity(&rx) >= 2);
        rx.release_buffer();
        assert_eq!(capacity(&rx), 0);
    }

    /// A waker counting its wakes.
    fn counting_waker() -> (Waker, Arc<std::sync::atomic::AtomicUsize>) {
        struct Count(Arc<std::sync::atomic::AtomicUsize>);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        (Waker::from(Arc::new(Count(count.clone()))), count)
    }
}
