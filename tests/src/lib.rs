//! Test support for the a2at engine: a deterministic simulator with scripted agents that speak
//! real A2A bytes, a scripted host, and a virtual clock.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod agent_grpc;
pub mod capture;
pub mod conformance;
pub mod connect_proxy;
pub mod e2e;
pub mod fault_mix;
pub mod fault_proxy;
#[cfg(feature = "fuzzing")]
pub mod fuzz_bodies;
pub mod golden;
pub mod host;
pub mod journal_bench;
pub mod loopback;
pub mod metrics_capture;
pub mod otlp_collector;
pub mod pg;
pub mod random_scenario;
pub mod runtime;
pub mod sim;
pub mod store_contract;
pub mod suites;
pub mod trace_io;
pub mod workloads;

pub use agent::{
    AgentReply, AgentRequest, NotifyEvent, NotifyScript, Plan, ScriptedAgent, StreamEnding,
};
pub use host::ScriptedHost;
pub use sim::{Observed, Sim, SimOutcome};

use a2at_core::a2a::AgentCard;
use a2at_core::agents::AgentDirectory;

/// The directory for a set of scripted agents.
pub fn directory(agents: &[ScriptedAgent]) -> AgentDirectory {
    let cards: Vec<AgentCard> = agents
        .iter()
        .map(|a| AgentCard::from_json_value(&a.card()).expect("scripted card parses"))
        .collect();
    AgentDirectory::new(cards, None).expect("scripted cards are valid")
}

/// Runs `workflow` (JSON) against `agents` and `host` in the simulator until it finishes.
pub fn simulate(
    workflow: &serde_json::Value,
    agents: Vec<ScriptedAgent>,
    host: ScriptedHost,
    config: a2at_core::run::RunConfig,
) -> SimOutcome {
    let wf =
        a2at_core::workflow::parse_and_validate(&workflow.to_string()).expect("valid workflow");
    let dir = directory(&agents);
    Sim::new(
        wf,
        dir,
        agents,
        host,
        config,
        a2at_core::run::RunStart::default(),
    )
    .drive_bounded(200_000)
}
