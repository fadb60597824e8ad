//! Property tests of the Negotiation-T rules over random agent scripts and host replies
//! (512 cases each).

use std::collections::BTreeMap;
use std::time::Duration;

use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{HostError, HostRequest, MessageContent, NegotiationReply};
use a2at_core::io::{Input, OpPurpose, Output};
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_tests::agent::{Negotiation, Propose};
use a2at_tests::{Observed, Plan, ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory};
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
struct Case {
    pre_task: bool,
    proposes: Vec<(u8, u8, u8)>,
    ack_first: bool,
    repeat_same: bool,
    abort_completes: bool,
    replies: Vec<u8>,
    budget: u32,
    cancel_at_ms: Option<u64>,
    streaming: bool,
    rest: bool,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        any::<bool>(),
        prop::collection::vec((1u8..6, 1u8..6, 0u8..10), 1..6),
        any::<bool>(),
        prop::bool::weighted(0.15),
        any::<bool>(),
        prop::collection::vec(0u8..12, 1..8),
        1u32..5,
        prop::option::weighted(0.2, 0u64..4000),
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(
                pre_task,
                proposes,
                ack_first,
                repeat_same,
                abort_completes,
                replies,
                budget,
                cancel_at_ms,
                streaming,
                rest,
                seed,
            )| Case {
                pre_task,
                proposes,
                ack_first,
                repeat_same,
                abort_completes,
                replies,
                budget,
                cancel_at_ms,
                streaming,
                rest,
                seed,
            },
        )
}

fn propose((round, max, quirk): (u8, u8, u8)) -> Propose {
    let mut p = Propose::round(u32::from(round), u32::from(max));
    match quirk {
        0 => p.round = json!(f64::from(round) + 0.5),
        1 => p.performative = "ACCEPT",
        2 => p.with_uri_key = false,
        3 => p.id = 2,
        _ => {}
    }
    p
}

fn build(c: &Case) -> Sim {
    let wf = parse_and_validate(
        &json!({"steps": [{"name": "s", "subtasks": [{"agent": "neg", "description": "x"}]}]})
            .to_string(),
    )
    .unwrap();
    let neg = Negotiation {
        proposes: c.proposes.iter().copied().map(propose).collect(),
        ack_first: c.ack_first,
        repeat_same: c.repeat_same,
        on_abort: if c.abort_completes {
            "TASK_STATE_COMPLETED"
        } else {
            "TASK_STATE_CANCELED"
        },
    };
    let mut agent = ScriptedAgent::new("neg");
    if c.rest {
        agent = agent.rest();
    }
    if c.streaming {
        agent = agent.streaming();
    }
    let agent = if c.pre_task {
        agent
            .then(Plan::BarePropose(propose(c.proposes[0])))
            .then(Plan::Negotiate(Negotiation {
                proposes: neg.proposes[1..].to_vec(),
                ..neg
            }))
    } else {
        agent.by_default(Plan::Negotiate(neg))
    };
    let replies = c.replies.clone();
    let mut i = 0usize;
    let host = ScriptedHost::default()
        .on_task(|r| {
            (
                Duration::ZERO,
                Some(Ok(
                    MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)
                )),
            )
        })
        .on_negotiation(move |r| {
            let pick = replies[i % replies.len()];
            i += 1;
            let send = |p| {
                Some(Ok(NegotiationReply::Send {
                    content: r.reply(p, "reply").unwrap(),
                }))
            };
            match pick {
                0..=4 => (Duration::from_millis(10), send(Performative::Accept)),
                5 => (Duration::from_millis(10), send(Performative::Reject)),
                6 => (Duration::from_millis(10), send(Performative::Abort)),
                7 => (
                    Duration::ZERO,
                    Some(Ok(NegotiationReply::Stop {
                        code: "biz.stop".into(),
                        reason: "enough".into(),
                    })),
                ),
                8 => (Duration::ZERO, send(Performative::Propose)),
                9 => (
                    Duration::ZERO,
                    Some(Err(HostError::business("llm.down", "no model"))),
                ),
                10 => (Duration::from_secs(20), send(Performative::Accept)),
                _ => (Duration::ZERO, None),
            }
        });
    let config = RunConfig {
        seed: c.seed,
        task_budget: Duration::from_secs(5),
        max_negotiation_exchanges: c.budget,
        ..RunConfig::default()
    };
    let agents = vec![agent];
    let dir = directory(&agents);
    let mut sim = Sim::new(wf, dir, agents, host, config, RunStart::default());
    if let Some(ms) = c.cancel_at_ms {
        sim = sim.cancel_at(Duration::from_millis(ms));
    }
    sim
}

fn check(c: &Case, out: &SimOutcome) -> Result<(), TestCaseError> {
    let result = out
        .result
        .as_ref()
        .ok_or_else(|| TestCaseError::fail("did not finish"))?;
    let mut per_round = BTreeMap::new();
    for e in out.events("negotiation_request") {
        let key = (
            e["negotiationId"].as_str().unwrap().to_owned(),
            e["round"].as_u64().unwrap(),
        );
        *per_round.entry(key).or_insert(0) += 1;
    }
    prop_assert!(
        per_round.values().all(|n| *n == 1),
        "a round was asked twice: {per_round:?}"
    );
    let asked = out
        .outputs()
        .filter(|o| {
            matches!(
                o,
                Output::CallHost {
                    request: HostRequest::Negotiation(_),
                    ..
                }
            )
        })
        .count();
    prop_assert!(
        asked <= c.budget as usize,
        "{asked} exchanges > budget {}",
        c.budget
    );

    let mut ended = false;
    let mut aborted = false;
    for (_, o) in &out.log {
        match o {
            Observed::Input(Input::Cancel) => ended = true,
            Observed::Output(Output::Event(e)) if e.kind.as_str() == "task_response" => {
                ended = true
            }
            Observed::Output(Output::Transmit(r)) => {
                prop_assert!(
                    !ended || r.purpose == OpPurpose::Cancel,
                    "sent {:?} after the task ended",
                    r.purpose
                );
                if r.purpose == OpPurpose::Reply
                    && String::from_utf8_lossy(&r.body).contains("\"ABORT\"")
                {
                    aborted = true;
                }
            }
            _ => {}
        }
    }
    prop_assert!(!(aborted && result.success), "an Abort ended in success");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn negotiation_rules_hold_for_random_scripts_and_replies(c in case()) {
        let out = build(&c).drive_bounded(100_000);
        check(&c, &out)?;
    }

    #[test]
    fn negotiation_outcomes_are_deterministic_for_a_seed(c in case()) {
        prop_assert_eq!(build(&c).drive_bounded(100_000).output_bytes(), build(&c).drive_bounded(100_000).output_bytes());
    }
}
