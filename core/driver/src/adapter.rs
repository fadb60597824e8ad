//! [`runtime_api!`](crate::runtime_api): the public API of an adapter crate, declared once.

/// Declares an adapter's public API for the runtime type `$rt`: one type alias per generic
/// driver type, fixed to `$rt`, and a re-export of everything else, with the same names and
/// docs in every adapter. Invoke it once at the root of the adapter crate, next to the
/// [`Runtime`](crate::Runtime) impl:
///
/// ```ignore
/// a2at_driver::runtime_api!(Tokio);
/// ```
#[macro_export]
macro_rules! runtime_api {
    ($rt:ty) => {
        pub use $crate::a2at_core;
        pub use $crate::a2at_core::a2a::AgentCard;
        pub use $crate::a2at_core::a2a::{ListTasksParams, StreamResponse, Task, TaskPage};
        pub use $crate::a2at_core::host::{
            ControlPoint, HostError, InputDecision, InputRequest, MessageContent, NegotiationReply,
            RouteDecision,
        };
        pub use $crate::a2at_core::run::{RunProgress, StepProgress, StepProgressState};
        pub use $crate::a2at_core::tasks::TaskError;
        pub use $crate::a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
        pub use $crate::a2at_core::{ExecutionResult, RetryPolicy, RunStart, SharedStr};
        pub use $crate::{
            AuthHook, BuiltControlPoint, CARD_UNUSABLE, CREDENTIAL_KEY_ENV, CardError,
            CardErrorKind, CloseMode, CloseReport, ControlPointBuilder, DEFAULT_DISCOVERY_DEADLINE,
            DEFAULT_LOGIN_TIMEOUT, DEFAULT_MAX_DISCOVERY_BODY_BYTES, DiscoveryError, ENGINE_CLOSED,
            EngineConfig, EngineError, EnvFile, EventEnvelope, EventSink, EventStream,
            ExtensionError, ExtensionSenderConfig, Heartbeat, HyperIo, MAX_REDIRECTS, OnFinish,
            OnFinishError, ProxyConfig, Reattachment, RequestHook, RunHandle, SeedSource,
            SubscriptionCompletion, TaskSubscription, TlsConfig, card_from_json, load_credentials,
        };
        pub use $crate::{JOURNAL_FAILED, JournalError, JournalStore, RunSummary, StoredRun};

        /// The engine on this runtime: validated cards, settings, the HTTP client and the
        /// concurrency limits, shared by every run. See [`a2at_driver::Engine`].
        pub type Engine = $crate::Engine<$rt>;
        /// Builds an [`Engine`]. See [`a2at_driver::EngineBuilder`].
        pub type EngineBuilder = $crate::EngineBuilder<$rt>;
        /// One run's options, from [`Engine::run`]. See [`a2at_driver::RunBuilder`].
        pub type RunBuilder<C> = $crate::RunBuilder<$rt, C>;
        /// The pooled HTTP/1.1 client on this runtime. See [`a2at_driver::HttpClient`].
        pub type HttpClient = $crate::HttpClient<$rt>;
        /// Sends Authorization-T and opens Notification-T subscriptions beside workflows. See
        /// [`a2at_driver::ExtensionSender`].
        pub type ExtensionSender = $crate::ExtensionSender<$rt>;
        /// Builds an [`ExtensionSender`]. See [`a2at_driver::ExtensionSenderBuilder`].
        pub type ExtensionSenderBuilder = $crate::ExtensionSenderBuilder<$rt>;
        /// The handle of one Notification-T subscription. See
        /// [`a2at_driver::NotificationSubscription`].
        pub type NotificationSubscription = $crate::NotificationSubscription<$rt>;
        /// A card registry client. See [`a2at_driver::RegistryClient`].
        pub type RegistryClient = $crate::RegistryClient<$rt>;
        /// Builds a [`RegistryClient`]. See [`a2at_driver::RegistryClientBuilder`].
        pub type RegistryClientBuilder = $crate::RegistryClientBuilder<$rt>;
        /// A PSOP workflow store client (the `LoadPsop` helper). See
        /// [`a2at_driver::PsopClient`].
        pub type PsopClient = $crate::PsopClient<$rt>;
        /// Builds a [`PsopClient`]. See [`a2at_driver::PsopClientBuilder`].
        pub type PsopClientBuilder = $crate::PsopClientBuilder<$rt>;
    };
}
