//! The run loop's waiter: the runtime's timer is armed again only for an earlier deadline, and
//! a timer left from an earlier deadline never reports a timeout before the current one.
use std::time::Duration;

use a2at_core::io::Input;
use a2at_core::{OpId, Timestamp};
use futures::channel::oneshot;

use crate::run_loop::Waiter;
use crate::test_runtime::{TestTokio, timers_armed};

fn at_ms(ms: u64) -> Option<Timestamp> {
    Some(Timestamp::ZERO.saturating_add(Duration::from_millis(ms)))
}

fn input() -> Input {
    Input::ResponseEnd { op: OpId(1) }
}

/// A waiter, the sender of its inputs and the cancel sender (kept so nothing cancels).
fn waiter() -> (
    Waiter<TestTokio>,
    crate::completions::Sender<Input>,
    crate::completions::Receiver<Input>,
    oneshot::Sender<()>,
) {
    let (cancel_tx, cancel_rx) = oneshot::channel();
    let (tx, rx) = crate::completions::channel(8);
    (Waiter::new(cancel_rx), tx, rx, cancel_tx)
}

#[tokio::test(start_paused = true)]
async fn a_later_deadline_keeps_the_timer_already_armed() {
    let (mut w, tx, mut rx, _cancel) = waiter();
    for step in 1..=5u64 {
        tx.send(input()).await.unwrap();
        let (_, got) = w.next(at_ms(60_000 * step), &mut rx).await;
        assert!(got.is_some(), "the input comes first");
    }
    assert_eq!(timers_armed(), 1, "one timer for five later deadlines");
}

#[tokio::test(start_paused = true)]
async fn an_earlier_deadline_arms_a_new_timer() {
    let (mut w, tx, mut rx, _cancel) = waiter();
    tx.send(input()).await.unwrap();
    w.next(at_ms(60_000), &mut rx).await;
    let (now, got) = w.next(at_ms(10), &mut rx).await;
    assert!(got.is_none(), "the earlier deadline fires");
    assert_eq!(now, at_ms(10).unwrap());
    assert_eq!(timers_armed(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_timer_left_from_an_earlier_deadline_reports_nothing_before_the_current_one() {
    let (mut w, tx, mut rx, _cancel) = waiter();
    tx.send(input()).await.unwrap();
    w.next(at_ms(10), &mut rx).await;
    // The deadline moved to 50 ms: the timer armed for 10 ms fires first and is not a timeout.
    let (now, got) = w.next(at_ms(50), &mut rx).await;
    assert!(got.is_none(), "the deadline fired");
    assert!(
        now >= at_ms(50).unwrap(),
        "reported at {now:?}, before the deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn no_deadline_means_no_timeout_even_with_a_timer_armed() {
    let (mut w, tx, mut rx, _cancel) = waiter();
    tx.send(input()).await.unwrap();
    w.next(at_ms(10), &mut rx).await;
    let late = tx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        late.send(input()).await.unwrap();
    });
    let (now, got) = w.next(None, &mut rx).await;
    assert!(got.is_some(), "only the input ends the wait");
    assert!(now >= at_ms(100).unwrap());
}
