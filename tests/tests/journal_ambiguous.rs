//! A send open when the engine stopped, at an agent that cannot list its tasks: the resumed
//! run cannot tell whether the message became a task, so it does not send it again and fails
//! that subtask with `run.resume_ambiguous`; everything else resumes as usual.

use std::sync::Arc;

use a2at_core::host::codes;
use a2at_core::result::ExecutionResult;
use a2at_driver::{JOURNAL_FAILED, SqliteJournal};
use a2at_tests::loopback::LoopbackServer;
use a2at_tests::runtime::TestRuntime;
use a2at_tests::suites::journal::{
    SEED, chain, duplicate_sends, echo_host, engine_for, normalised, stop_at, without_context_ids,
};
use a2at_tests::{Plan, ScriptedAgent};

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);

/// The suite's agents, neither of which implements `ListTasks`.
fn agents() -> Vec<ScriptedAgent> {
    vec![
        ScriptedAgent::new("alpha")
            .by_default(Plan::States(vec![
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED",
            ]))
            .without_list_tasks(),
        ScriptedAgent::new("beta")
            .rest()
            .streaming()
            .without_list_tasks(),
    ]
}

type Engine = a2at_driver::Engine<<OnTokio as TestRuntime>::Rt>;

/// The chain run once without stopping, then stopped at each append in turn (as if its process
/// died there) and resumed by a new engine: the uninterrupted result, and for each stop its
/// append, the agents' server and the resumed result.
async fn each_stop_resumed(
    engine: impl Fn(&LoopbackServer) -> Engine,
) -> (
    ExecutionResult,
    Vec<(usize, LoopbackServer, ExecutionResult)>,
) {
    let expected = {
        let server = LoopbackServer::start(agents()).await;
        let result = engine(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .execute()
            .await;
        assert!(result.success, "{:?}", result.error);
        normalised(result)
    };
    let mut resumed = Vec::new();
    for at in 1..=30 {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runs.db");
        let server = LoopbackServer::start(agents()).await;
        let stopped = engine(&server)
            .run(chain(), echo_host())
            .seed(SEED)
            .journal(stop_at(&path, at))
            .execute()
            .await;
        if stopped.success {
            // Past the run's last append: nothing stopped it.
            continue;
        }
        assert_eq!(
            stopped.error.as_ref().map(|e| e.code.as_str()),
            Some(JOURNAL_FAILED)
        );
        let store = Arc::new(SqliteJournal::open(&path).expect("journal"));
        let result = normalised(
            engine(&server)
                .resume(store, &stopped.execution_id, echo_host())
                .await
                .unwrap_or_else(|e| panic!("resume after append {at}: {e}"))
                .result()
                .await,
        );
        resumed.push((at, server, result));
    }
    assert!(resumed.len() > 5, "{} stops", resumed.len());
    (expected, resumed)
}

#[test]
fn an_unknown_send_at_an_agent_without_list_tasks_fails_as_resume_ambiguous() {
    OnTokio::block_on(async {
        let (expected, resumed) =
            each_stop_resumed(|server| engine_for::<OnTokio>(server.cards())).await;
        let mut ambiguous = 0;
        for (at, server, result) in resumed {
            // Never sent twice, whatever the outcome.
            let duplicates = duplicate_sends(&server);
            assert!(
                duplicates.is_empty(),
                "stopped at append {at}: sent twice: {duplicates:?}"
            );
            if result.success {
                assert_eq!(
                    without_context_ids(&result),
                    without_context_ids(&expected),
                    "stopped at append {at}"
                );
                continue;
            }
            // A failure is an ambiguous send (both subtasks of step b may be open at once),
            // named as such, and nothing else.
            let failed: Vec<_> = result
                .history
                .iter()
                .filter(|t| t.error_code.is_some())
                .collect();
            assert!(!failed.is_empty(), "stopped at append {at}: {result:?}");
            for task in failed {
                assert_eq!(
                    task.error_code.as_deref(),
                    Some(codes::RUN_RESUME_AMBIGUOUS),
                    "stopped at append {at}: {task:?}"
                );
                let message = task.error.as_deref().unwrap_or_default();
                assert!(
                    message.contains(task.agent_name.as_str()) && message.contains("ListTasks"),
                    "{message}"
                );
                let details = task.error_details.as_ref().expect("details");
                assert_eq!(details["lookup"], "a2a.method_not_found", "{details}");
                assert_eq!(details["attempts"][0]["fault"], "transport.restarted");
                // The agent was asked (and could not answer); the message did not go again.
                let listed = server
                    .requests(&task.agent_name)
                    .iter()
                    .filter(|r| r.method == "ListTasks")
                    .count();
                assert!(listed > 0, "stopped at append {at}: no lookup was tried");
            }
            ambiguous += 1;
        }
        assert!(ambiguous > 0, "no stop left a send open");
    })
}

/// With `AmbiguousSend::Resend` the same stops resume to the uninterrupted result: an
/// ambiguous send goes again with its own `messageId` (a copy the agent can de-duplicate),
/// and nothing else is sent twice.
#[test]
fn with_the_resend_policy_an_unknown_send_goes_again_with_its_message_id() {
    OnTokio::block_on(async {
        let engine = |server: &LoopbackServer| {
            Engine::builder(server.cards())
                .poll_interval(std::time::Duration::from_millis(5))
                .retry(a2at_core::RetryPolicy {
                    attempts: 5,
                    base_delay: std::time::Duration::from_millis(5),
                    max_delay: std::time::Duration::from_millis(20),
                })
                .ambiguous_send(a2at_core::AmbiguousSend::Resend)
                .build()
                .expect("engine")
        };
        let (expected, resumed) = each_stop_resumed(engine).await;
        let mut resent = 0;
        for (at, server, result) in resumed {
            // A resent copy the agent does not de-duplicate becomes a second task: the
            // remote task ids may differ, the outcome and the outputs may not.
            assert_eq!(
                without_remote_ids(without_context_ids(&result)),
                without_remote_ids(without_context_ids(&expected)),
                "stopped at append {at}"
            );
            // A second copy only of a send the lookup could not settle, after the lookup.
            for id in duplicate_sends(&server) {
                let agent = ["alpha", "beta"]
                    .into_iter()
                    .find(|a| {
                        server.requests(a).iter().any(|r| {
                            r.message()
                                .and_then(|m| m.get("messageId"))
                                .and_then(|v| v.as_str())
                                == Some(id.as_str())
                        })
                    })
                    .expect("the agent that got it");
                let methods: Vec<String> = server
                    .requests(agent)
                    .iter()
                    .map(|r| r.method.clone())
                    .collect();
                let list = methods.iter().position(|m| m == "ListTasks");
                let last_send = methods.iter().rposition(|m| m.starts_with("Send"));
                assert!(
                    list.is_some() && list < last_send,
                    "stopped at append {at}: {id} sent twice without a lookup first: {methods:?}"
                );
                resent += 1;
            }
        }
        assert!(resent > 0, "no stop left a send to resend");
    })
}

/// `v` with the agent-made ids (task and artifact ids) blanked.
fn without_remote_ids(mut v: serde_json::Value) -> serde_json::Value {
    fn blank(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if ["taskId", "remote_task_id", "artifactId"].contains(&k.as_str()) {
                        *v = serde_json::Value::String("<remote>".into());
                    } else {
                        blank(v);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(blank),
            _ => {}
        }
    }
    blank(&mut v);
    v
}
