//! The protocol log observes the real transport boundary (auth headers included) and never shows
//! a secret, at any level.

use std::sync::Arc;

use crate::ScriptedAgent;
use crate::capture::{SharedBuffer, log_subscriber};
use crate::loopback::LoopbackServer;
use a2at_core::host::MessageContent;
use a2at_core::run::RunStart;
use a2at_core::workflow::parse_and_validate;
use a2at_driver::ControlPointBuilder;
use serde_json::json;

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

pub fn planted_secrets_never_reach_the_protocol_log<T: TestRuntime>() {
    let captured = SharedBuffer::default();
    let _guard = tracing::subscriber::set_default(log_subscriber(&captured));

    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("beta").rest().streaming(),
        ])
        .await;
        let hook: a2at_driver::AuthHook = Arc::new(|_req| {
            Ok(vec![
                (
                    "Authorization".to_owned(),
                    "Bearer PLANTED-BEARER-7f3a".to_owned(),
                ),
                ("X-Api-Key".to_owned(), "PLANTED-APIKEY-91c2".to_owned()),
            ])
        });
        let engine = Engine::<T>::builder(server.cards())
            .auth_headers(hook)
            .build()
            .unwrap();
        let host = ControlPointBuilder::new()
            .on_task(|r| async move {
                Ok(MessageContent::text(&r.instruction)
                    .with_metadata("credentials", json!({"password": "PLANTED-PASSWORD-55d0", "nested": [{"accessToken": "PLANTED-TOKEN-c0de"}]}))
                    .with_metadata("ticket", json!("visible-ticket-42")))
            })
            .build();
        let wf = parse_and_validate(&json!({"steps": [
            {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
            {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}]}
        ]}).to_string()).unwrap();
        let result = engine
            .execute(wf, RunStart::default(), Arc::new(host))
            .await;
        assert!(result.success, "{:?}", result.error);
    });

    let logs = captured.text();
    assert!(
        logs.contains(">>> REQUEST POST"),
        "the request is logged:\n{logs}"
    );
    assert!(logs.contains("<<< RESPONSE 200"), "the response is logged");
    assert!(
        logs.contains("WORKFLOW_FINISHED execution=") && logs.contains("success=true"),
        "the run's summary line (PL-9) closes its log"
    );
    assert!(
        logs.contains("visible-ticket-42"),
        "non-secret metadata stays visible"
    );
    assert!(
        logs.contains("a2at::protocol"),
        "logged on the protocol target"
    );
    for secret in [
        "PLANTED-BEARER-7f3a",
        "PLANTED-APIKEY-91c2",
        "PLANTED-PASSWORD-55d0",
        "PLANTED-TOKEN-c0de",
    ] {
        assert!(
            !logs.contains(secret),
            "{secret} leaked into the logs:\n{logs}"
        );
    }
}
