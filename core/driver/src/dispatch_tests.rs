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

/// Binding a task to "no subscriber" would only switch dispatchers on each of its polls; a
/// task spawned under any subscriber is bound to it.
#[test]
fn a_task_is_bound_to_its_spawners_dispatcher_only_where_a_subscriber_is_installed() {
    // No test of this crate installs a global subscriber (one would be bound here).
    assert!(crate::runtime::dispatch_to_bind().is_none());
    let closed = Closed::default();
    let subscriber = tracing_subscriber::registry().with(closed);
    tracing::subscriber::with_default(subscriber, || {
        let bound = crate::runtime::dispatch_to_bind().expect("bound to the scoped subscriber");
        assert!(
            bound.is::<tracing_subscriber::layer::Layered<Closed, tracing_subscriber::Registry>>()
        );
    });
}
