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
) -> impl Future<Output = HostReply> + '_ {
    let name = request.callback_name();
    // Built only when a panic happened: the failure's message is an allocation every host call
    // would otherwise pay.
    let make_failure = HostReply::failure_maker(&request);
    // Boxed here, before anything waits: the future returned holds only the box and the
    // failure's maker, not the request or an unboxed copy of the future beside the box.
    // `answer` runs nothing until polled, so the callback's future is created inside the
    // guarded poll.
    let answering = Box::pin(answer(control_point, request));
    async move {
        CatchUnwind(answering)
            .await
            .unwrap_or_else(|| make_failure(HostError::panicked(name)))
    }
}

/// Polls the inner future inside `catch_unwind`; a panic ends it with `None`.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Some(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(None),
        }
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
        HostRequest::Route(RouteRequest {
            execution_id: "e".into(),
            step_name: "a".into(),
            next_step: "b".into(),
            condition: "c".into(),
            workflow_input: Default::default(),
            current_results: vec![],
        })
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
