//! A [`ControlPoint`] made of closures: register only the callbacks a host needs (CP-6); the
//! others keep the trait's fail-fast defaults (CP-5).

use std::future::Future;

use a2at_core::host::{
    ControlPoint, HostError, MessageContent, NegotiationReply, NegotiationRequest, RouteDecision,
    RouteRequest, TaskRequest, TaskResult,
};
use futures::FutureExt;
use futures::future::BoxFuture;

type Handler<Q, A> = Box<dyn Fn(Q) -> BoxFuture<'static, Result<A, HostError>> + Send + Sync>;

fn boxed<Q, A, F, Fut>(f: F) -> Handler<Q, A>
where
    F: Fn(Q) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<A, HostError>> + Send + 'static,
{
    Box::new(move |q| f(q).boxed())
}

/// The trait's own defaults, borrowed for callbacks the host did not register.
struct Defaults;

impl ControlPoint for Defaults {}

static DEFAULTS: Defaults = Defaults;

/// Builds a [`BuiltControlPoint`] from async closures.
///
/// ```
/// use a2at_tokio::ControlPointBuilder;
/// use a2at_tokio::core::host::{MessageContent, RouteDecision};
///
/// let host = ControlPointBuilder::new()
///     .on_task(|req| async move { Ok(MessageContent::text(req.instruction)) })
///     .on_route(|_| async { Ok(RouteDecision::allow(None)) })
///     .build();
/// # let _ = host;
/// ```
#[derive(Default)]
pub struct ControlPointBuilder {
    cp: BuiltControlPoint,
}

impl std::fmt::Debug for ControlPointBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
        F: Fn(TaskRequest) -> Fut + Send + Sync + 'static,
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

    /// The control point.
    pub fn build(self) -> BuiltControlPoint {
        self.cp
    }
}

/// A [`ControlPoint`] built by [`ControlPointBuilder`].
#[derive(Default)]
pub struct BuiltControlPoint {
    on_task: Option<Handler<TaskRequest, MessageContent>>,
    on_self_task: Option<Handler<TaskRequest, TaskResult>>,
    on_route: Option<Handler<RouteRequest, RouteDecision>>,
    on_negotiation: Option<Handler<NegotiationRequest, NegotiationReply>>,
}

impl std::fmt::Debug for BuiltControlPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltControlPoint")
            .field("on_task", &self.on_task.is_some())
            .field("on_self_task", &self.on_self_task.is_some())
            .field("on_route", &self.on_route.is_some())
            .field("on_negotiation", &self.on_negotiation.is_some())
            .finish()
    }
}

impl ControlPoint for BuiltControlPoint {
    fn on_task(
        &self,
        request: TaskRequest,
    ) -> impl Future<Output = Result<MessageContent, HostError>> + Send {
        match &self.on_task {
            Some(h) => h(request),
            None => DEFAULTS.on_task(request).boxed(),
        }
    }

    fn on_self_task(
        &self,
        request: TaskRequest,
    ) -> impl Future<Output = Result<TaskResult, HostError>> + Send {
        match &self.on_self_task {
            Some(h) => h(request),
            None => DEFAULTS.on_self_task(request).boxed(),
        }
    }

    fn on_route(
        &self,
        request: RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, HostError>> + Send {
        match &self.on_route {
            Some(h) => h(request),
            None => DEFAULTS.on_route(request).boxed(),
        }
    }

    fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> impl Future<Output = Result<NegotiationReply, HostError>> + Send {
        match &self.on_negotiation {
            Some(h) => h(request),
            None => DEFAULTS.on_negotiation(request).boxed(),
        }
    }
}
