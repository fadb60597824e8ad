//! Runtime-agnostic pieces every driver shares: a closure-based [`ControlPoint`]
//! ([`ControlPointBuilder`]), the host-facing [`EventEnvelope`] (the runtime supplies the clock
//! reading), and [`answer_guarded`], which turns a panicking callback into its failure.
//!
//! Nothing here reads a clock or needs an executor: futures are boxed std futures.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{Event, EventData, EventType};
use crate::host::{
    ControlPoint, HostError, HostReply, HostRequest, InputDecision, InputRequest, MessageContent,
    NegotiationReply, NegotiationRequest, RouteDecision, RouteRequest, TaskRequest, TaskResult,
    answer,
};

/// A boxed, sendable future (what registered callbacks return).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

type Handler<Q, A> = Box<dyn Fn(Q) -> BoxFuture<Result<A, HostError>> + Send + Sync>;

fn boxed<Q, A, F, Fut>(f: F) -> Handler<Q, A>
where
    F: Fn(Q) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<A, HostError>> + Send + 'static,
{
    Box::new(move |q| Box::pin(f(q)))
}

/// The trait's own defaults, borrowed for callbacks the host did not register.
struct Defaults;

impl ControlPoint for Defaults {}

static DEFAULTS: Defaults = Defaults;

/// Builds a [`BuiltControlPoint`] from async closures: register only the callbacks a host needs
///; the others keep the trait's fail-fast defaults.
///
/// ```
/// use a2at_core::driver_support::ControlPointBuilder;
/// use a2at_core::host::{MessageContent, RouteDecision};
///
/// let host = ControlPointBuilder::new()
///     .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
///     .on_route(|_| async { Ok(RouteDecision::allow(None)) })
///     .build();
/// # let _ = host;
/// ```
#[derive(Default)]
pub struct ControlPointBuilder {
    cp: BuiltControlPoint,
}

impl core::fmt::Debug for ControlPointBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.cp.fmt(f)
    }
}

impl ControlPointBuilder {
    /// A builder with no callbacks registered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `on_task`: the final content of a remote subtask.
    pub fn on_task<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Arc<TaskRequest>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<MessageContent, HostError>> + Send + 'static,
    {
        self.cp.on_task = Some(boxed(f));
        self
    }

    /// Registers `on_self_task`: the local result of a SELF_LOOP subtask.
    pub fn on_self_task<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(TaskRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<TaskResult, HostError>> + Send + 'static,
    {
        self.cp.on_self_task = Some(boxed(f));
        self
    }

    /// Registers `on_route`: allow or deny one conditional edge.
    pub fn on_route<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(RouteRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RouteDecision, HostError>> + Send + 'static,
    {
        self.cp.on_route = Some(boxed(f));
        self
    }

    /// Registers `on_negotiation`: answer a valid Negotiation-T Propose.
    pub fn on_negotiation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(NegotiationRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<NegotiationReply, HostError>> + Send + 'static,
    {
        self.cp.on_negotiation = Some(boxed(f));
        self
    }

    /// Registers `on_input_required`: answer (`InputDecision::Reply`) or decline a plain
    /// `INPUT_REQUIRED`; asked only when the run allows follow-ups
    /// ([`RunConfig::max_input_replies`](crate::RunConfig::max_input_replies)).
    pub fn on_input_required<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(InputRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<InputDecision, HostError>> + Send + 'static,
    {
        self.cp.on_input_required = Some(boxed(f));
        self
    }

    /// The control point.
    pub fn build(self) -> BuiltControlPoint {
        self.cp
    }
}

/// A [`ControlPoint`] built by [`ControlPointBuilder`].
#[derive(Default)]
pub struct BuiltControlPoint {
    on_task: Option<Handler<Arc<TaskRequest>, MessageContent>>,
    on_self_task: Option<Handler<TaskRequest, TaskResult>>,
    on_route: Option<Handler<RouteRequest, RouteDecision>>,
    on_negotiation: Option<Handler<NegotiationRequest, NegotiationReply>>,
    on_input_required: Option<Handler<InputRequest, InputDecision>>,
}

impl core::fmt::Debug for BuiltControlPoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BuiltControlPoint")
            .field("on_task", &self.on_task.is_some())
            .field("on_self_task", &self.on_self_task.is_some())
            .field("on_route", &self.on_route.is_some())
            .field("on_negotiation", &self.on_negotiation.is_some())
            .field("on_input_required", &self.on_input_required.is_some())
            .finish()
    }
}

impl ControlPoint for BuiltControlPoint {
    fn on_task(
        &self,
        request: Arc<TaskRequest>,
    ) -> impl Future<Output = Result<MessageContent, HostError>> + Send {
        match &self.on_task {
            Some(h) => h(request),
            None => Box::pin(DEFAULTS.on_task(request)),
        }
    }

    fn on_self_task(
        &self,
        request: TaskRequest,
    ) -> impl Future<Output = Result<TaskResult, HostError>> + Send {
        match &self.on_self_task {
            Some(h) => h(request),
            None => Box::pin(DEFAULTS.on_self_task(request)),
        }
    }

    fn on_route(
        &self,
        request: RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, HostError>> + Send {
        match &self.on_route {
            Some(h) => h(request),
            None => Box::pin(DEFAULTS.on_route(request)),
        }
    }

    fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> impl Future<Output = Result<NegotiationReply, HostError>> + Send {
        match &self.on_negotiation {
            Some(h) => h(request),
            None => Box::pin(DEFAULTS.on_negotiation(request)),
        }
    }

    fn on_input_required(
        &self,
        request: InputRequest,
    ) -> impl Future<Output = Result<InputDecision, HostError>> + Send {
        match &self.on_input_required {
            Some(h) => h(request),
            None => Box::pin(DEFAULTS.on_input_required(request)),
        }
    }
}

/// Answers `request` with `control_point`; a panic while the callback's future is created or
/// polled becomes the callback's `host.callback_panicked` failure (without the panic's text, so
/// secrets cannot leak) instead of unwinding into the driver.
pub fn answer_guarded<C: ControlPoint + ?Sized>(
    control_point: &C,
    request: HostRequest,
) -> GuardedAnswer<'_> {
    GuardedAnswer::new(request, |request| Box::pin(answer(control_point, request)))
}

/// [`answer_guarded`] with a control point shared by reference count: the answer holds its own
/// share, so it may outlive the caller and go on in a task of its own.
pub fn answer_guarded_shared<C: ControlPoint + ?Sized + 'static>(
    control_point: Arc<C>,
    request: HostRequest,
) -> GuardedAnswer<'static> {
    GuardedAnswer::new(request, move |request| {
        Box::pin(async move { answer(&*control_point, request).await })
    })
}

/// A host callback's answer on its way, from [`answer_guarded`]: a panic ends it with the
/// callback's failure.
///
/// It holds the callback's boxed future and no more, and it is `Unpin`: a driver polls it
/// once in place and moves it into a task of its own only when the answer is not ready.
pub struct GuardedAnswer<'a> {
    /// `None` once the answer was given.
    answering: Option<Pin<Box<dyn Future<Output = HostReply> + Send + 'a>>>,
    name: &'static str,
    // Built only when a panic happened: the failure's message is an allocation every host call
    // would otherwise pay.
    make_failure: fn(HostError) -> HostReply,
}

impl<'a> GuardedAnswer<'a> {
    /// The guarded answer to `request` that `answering` makes from it. `answer` runs nothing
    /// until polled, so the callback's future is created inside the guarded poll.
    fn new(
        request: HostRequest,
        answering: impl FnOnce(HostRequest) -> Pin<Box<dyn Future<Output = HostReply> + Send + 'a>>,
    ) -> GuardedAnswer<'a> {
        GuardedAnswer {
            name: request.callback_name(),
            make_failure: HostReply::failure_maker(&request),
            answering: Some(answering(request)),
        }
    }
}

impl Future for GuardedAnswer<'_> {
    type Output = HostReply;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<HostReply> {
        let this = &mut *self;
        let Some(answering) = this.answering.as_mut() else {
            panic!("GuardedAnswer polled after it gave its answer");
        };
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| answering.as_mut().poll(cx)));
        let reply = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(reply)) => reply,
            Err(_) => (this.make_failure)(HostError::panicked(this.name)),
        };
        // A future that panicked is not polled again; dropping it here ends its borrow too.
        this.answering = None;
        Poll::Ready(reply)
    }
}

impl std::fmt::Debug for GuardedAnswer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedAnswer")
            .field("callback", &self.name)
            .field("answered", &self.answering.is_none())
            .finish()
    }
}

/// One event as the host sees it: `{type, data, timestamp}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    /// The stable event type (`start`, `step_start`, …, `close`).
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The payload, shaped per type as documented on [`EventType`].
    pub data: EventData,
    /// When the runtime delivered it: seconds since the Unix epoch.
    pub timestamp: f64,
}

impl EventEnvelope {
    /// Wraps a core event with the wall-clock time the runtime read (Unix seconds).
    pub fn at(event: Event, timestamp: f64) -> EventEnvelope {
        EventEnvelope {
            kind: event.kind,
            data: event.data,
            timestamp,
        }
    }

    /// Another event at the same time as this one (for an event hook that replaces or adds
    /// events, e.g. `EventType::HostEvent` with a business payload).
    pub fn derived(&self, kind: EventType, data: Value) -> EventEnvelope {
        EventEnvelope {
            kind,
            data: data.into(),
            timestamp: self.timestamp,
        }
    }

    /// The stable type string.
    pub fn type_str(&self) -> &'static str {
        self.kind.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::codes;
    use std::task::Wake;

    struct Noop;

    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        let waker = Arc::new(Noop).into();
        let mut cx = Context::from_waker(&waker);
        let mut f = Box::pin(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    fn route() -> HostRequest {
        HostRequest::Route(Box::new(RouteRequest {
            execution_id: "e".into(),
            step_name: "a".into(),
            next_step: "b".into(),
            condition: "c".into(),
            workflow_input: Default::default(),
            current_results: vec![],
        }))
    }

    #[test]
    fn registered_callbacks_answer_and_missing_ones_fail_explicitly() {
        let cp = ControlPointBuilder::new()
            .on_route(|_| async { Ok(RouteDecision::deny(None)) })
            .build();
        let reply = block_on(answer_guarded(&cp, route()));
        assert_eq!(reply, HostReply::Route(Ok(RouteDecision::deny(None))));
        let none = ControlPointBuilder::new().build();
        let HostReply::Route(Err(e)) = block_on(answer_guarded(&none, route())) else {
            panic!("a failure expected");
        };
        assert_eq!(e.code, codes::HOST_HANDLER_MISSING);
    }

    #[test]
    fn a_panicking_callback_becomes_its_failure() {
        let cp = ControlPointBuilder::new()
            .on_route(|_| async { panic!("secret") })
            .build();
        let HostReply::Route(Err(e)) = block_on(answer_guarded(&cp, route())) else {
            panic!("a failure expected");
        };
        assert_eq!(e.code, codes::HOST_CALLBACK_PANICKED);
        assert!(!e.message.contains("secret"));
    }
}
