//! Spawned exchanges and host calls close their spans under the host's subscriber, even when
//! that subscriber is only the scoped default of the thread that started the run.

use std::sync::{Arc, Mutex};

use tracing::span::Id;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::run_loop::spawn_abortable;
use crate::test_runtime::TestTokio;

/// Names the spans the subscriber closed.
#[derive(Clone, Default)]
struct Closed(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Closed {
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            self.0.lock().unwrap().push(span.name().to_owned());
        }
    }
}

/// An aborted task is dropped by the executor after its last poll, where no scoped subscriber
/// is current. Its span closes through the span's own subscriber, but the registry lets go of
/// the parent through the current one: unless the drop happens under the subscriber of the
/// spawn, the parent (a subtask, its step, the run) stays open for ever and is never exported.
#[tokio::test(flavor = "current_thread")]
async fn an_aborted_task_lets_its_parent_span_close_under_a_scoped_subscriber() {
    let closed = Closed::default();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(closed.clone()));
    let abort = tracing::dispatcher::with_default(&dispatch, || {
        let parent = tracing::info_span!("subtask");
        let child = tracing::info_span!(parent: &parent, "exchange");
        spawn_abortable::<TestTokio>(async move {
            let _held = child;
            futures::future::pending::<()>().await;
        })
    });
    tokio::task::yield_now().await;
    abort.abort();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let closed = closed.0.lock().unwrap().clone();
    assert_eq!(closed, ["exchange", "subtask"]);
}
