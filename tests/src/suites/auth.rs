//! Built-in credential authentication at the transport: static tokens, API keys, a login with a
//! cached token, merging with the host's hook, and never sending unauthenticated.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::ScriptedAgent;
use crate::capture::{SharedBuffer, log_subscriber};
use crate::loopback::LoopbackServer;
use a2at_core::a2a::AgentCard;
use a2at_core::auth::{CredentialKey, CredentialsConfig, encrypt_value};
use a2at_core::host::MessageContent;
use a2at_core::run::RunStart;
use a2at_core::workflow::parse_and_validate;
use a2at_driver::ControlPointBuilder;
use serde_json::{Value, json};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

/// The cards of `server` with `alpha` requiring the given schemes.
fn secured(server: &LoopbackServer, schemes: Value, requirements: Value) -> Vec<AgentCard> {
    server
        .cards()
        .into_iter()
        .map(|card| {
            if card.name != "alpha" {
                return card;
            }
            let mut v = card.to_json();
            v["securitySchemes"] = schemes.clone();
            v["securityRequirements"] = requirements.clone();
            AgentCard::from_json_value(&v).unwrap()
        })
        .collect()
}

async fn run_once<R: a2at_driver::Runtime>(
    engine: &a2at_driver::Engine<R>,
) -> a2at_core::ExecutionResult {
    let host = ControlPointBuilder::new()
        .on_task(|r| async move { Ok(MessageContent::text(&r.instruction)) })
        .build();
    let wf = parse_and_validate(
        &json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]})
            .to_string(),
    )
    .unwrap();
    engine
        .execute(wf, RunStart::default(), Arc::new(host))
        .await
}

fn bearer() -> (Value, Value) {
    (
        json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}),
        json!([{"schemes": {"bearer": {}}}]),
    )
}

pub fn a_card_that_requires_auth_is_never_called_without_credentials<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let (schemes, reqs) = bearer();
        // The engine builds; the card is unusable, and a run that needs it is refused.
        let engine = Engine::<T>::builder(secured(&server, schemes, reqs))
            .build()
            .unwrap();
        let problem = engine
            .card_error("alpha")
            .expect("alpha's card is unusable");
        assert_eq!(problem.kind, a2at_driver::CardErrorKind::Auth);
        let result = run_once(&engine).await;
        assert!(!result.success);
        let error = result.error.expect("a run error");
        assert_eq!(error.code, a2at_driver::CARD_UNUSABLE);
        assert!(error.message.contains("alpha"), "{}", error.message);
        assert!(error.message.contains("bearer"), "{}", error.message);
        assert_eq!(server.total_requests(), 0, "nothing was sent");
    })
}

pub fn a_static_encrypted_token_is_sent_as_a_bearer_header<T: TestRuntime>() {
    T::block_on(async {
        // On gRPC the header travels as `authorization` metadata.
        for agent in [
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("alpha").grpc(),
        ] {
            let server = LoopbackServer::start(vec![agent]).await;
            let (schemes, reqs) = bearer();
            let key = CredentialKey::from_hex(&"ab".repeat(32)).unwrap();
            let enc = encrypt_value("s3cr3t-token", &key, [7u8; 12]);
            let creds = CredentialsConfig::from_json_value(
                &json!({"alpha": {"bearer": {"token": enc}}}),
                Some(&key),
            )
            .unwrap();
            let engine = Engine::<T>::builder(secured(&server, schemes, reqs))
                .credentials(creds)
                .build()
                .unwrap();
            assert!(run_once(&engine).await.success);
            let sent = server.requests_to("alpha", "SendMessage");
            assert_eq!(sent[0].header("Authorization"), Some("Bearer s3cr3t-token"));
        }
    })
}

/// An engine whose agent `alpha` takes API key `key` in query parameter `name`.
fn query_key_engine<T: TestRuntime>(server: &LoopbackServer, name: &str, key: &str) -> Engine<T> {
    let schemes = json!({"key": {"apiKeySecurityScheme": {"location": "query", "name": name}}});
    let reqs = json!([{"schemes": {"key": {}}}]);
    let creds =
        CredentialsConfig::from_json_value(&json!({"alpha": {"key": {"api_key": key}}}), None)
            .unwrap();
    Engine::<T>::builder(secured(server, schemes, reqs))
        .credentials(creds)
        .build()
        .unwrap()
}

pub fn an_api_key_in_the_query_is_added_to_the_url<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let engine = query_key_engine::<T>(&server, "api_key", "k 1&2");
        assert!(run_once(&engine).await.success);
        let sent = server.requests_to("alpha", "SendMessage");
        assert!(sent[0].url.contains("api_key=k%201%262"), "{}", sent[0].url);
    })
}

/// The protocol log shows the request as sent, but a credential that authentication put in the
/// query is masked there: the log's copy is rebuilt from the URL as it was before
/// authentication. The parameter's name (`k`) is not one the log masks by itself.
pub fn a_query_credential_is_masked_in_the_protocol_log<T: TestRuntime>() {
    let captured = SharedBuffer::default();
    let _guard = tracing::subscriber::set_default(log_subscriber(&captured));
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let engine = query_key_engine::<T>(&server, "k", "PLANTED-QUERY-KEY-5e1d");
        assert!(run_once(&engine).await.success);
        let sent = server.requests_to("alpha", "SendMessage");
        assert!(
            sent[0].url.contains("k=PLANTED-QUERY-KEY-5e1d"),
            "the wire carries the key: {}",
            sent[0].url
        );
    });
    let logs = captured.text();
    assert!(
        logs.contains(">>> REQUEST POST"),
        "the request is logged:\n{logs}"
    );
    assert!(
        logs.contains("k=***"),
        "the logged URL shows the parameter, masked:\n{logs}"
    );
    assert!(
        !logs.contains("PLANTED-QUERY-KEY-5e1d"),
        "the key leaked into the logs:\n{logs}"
    );
}

pub fn a_conflicting_header_from_the_hook_blocks_the_send<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let (schemes, reqs) = bearer();
        let creds =
            CredentialsConfig::from_json_value(&json!({"alpha": {"bearer": {"token": "a"}}}), None)
                .unwrap();
        let hook: a2at_driver::AuthHook =
            Arc::new(|_| Ok(vec![("Authorization".into(), "Bearer b".into())]));
        let engine = Engine::<T>::builder(secured(&server, schemes, reqs))
            .credentials(creds)
            .auth_headers(hook)
            .build()
            .unwrap();
        let result = run_once(&engine).await;
        assert!(!result.success);
        assert!(
            result.history[0]
                .error
                .as_deref()
                .unwrap()
                .to_lowercase()
                .contains("authorization")
        );
        assert_eq!(server.total_requests(), 0);
    })
}

/// A one-route login server: answers every POST with a token and counts the logins.
fn login_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/login", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
            let reply = format!("{{\"data\": {{\"accessSession\": \"session-{n}\"}}}}");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, count)
}

pub fn a_login_token_is_fetched_once_and_reused_by_concurrent_runs<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let (schemes, reqs) = bearer();
        let (login_url, logins) = login_server();
        let creds = CredentialsConfig::from_json_value(
        &json!({"alpha": {"bearer": {"login_url": login_url, "request_fields": {"username": "u", "password": "p"},
                                     "token_field": "data.accessSession", "auth_header": "X-Auth-Token"}}}),
        None,
    )
    .unwrap();
        let engine = Engine::<T>::builder(secured(&server, schemes, reqs))
            .credentials(creds)
            .build()
            .unwrap();
        let runs: Vec<_> = (0..5)
            .map(|_| {
                let e = engine.clone();
                T::spawn(async move { run_once(&e).await })
            })
            .collect();
        for r in runs {
            let result = r.await;
            assert!(result.success, "{:?}", result.history[0].error);
        }
        assert_eq!(
            logins.load(Ordering::SeqCst),
            1,
            "one login, no concurrent double login"
        );
        for req in server.requests_to("alpha", "SendMessage") {
            assert_eq!(req.header("X-Auth-Token"), Some("session-1"));
        }
    })
}

pub fn a_replaced_card_with_another_auth_plan_never_reuses_the_old_token<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let (login_url, logins) = login_server();
        // No `auth_header`: where the token goes comes from the card's scheme.
        let creds = CredentialsConfig::from_json_value(
            &json!({"alpha": {"bearer": {"login_url": login_url,
                "request_fields": {"username": "u", "password": "p"},
                "token_field": "data.accessSession"}}}),
            None,
        )
        .unwrap();
        let (schemes, reqs) = bearer();
        let as_bearer = secured(&server, schemes, reqs.clone());
        let engine = Engine::<T>::builder(as_bearer.clone())
            .credentials(creds)
            .build()
            .unwrap();
        let last_send = || {
            server
                .requests_to("alpha", "SendMessage")
                .pop()
                .expect("a send")
        };
        assert!(run_once(&engine).await.success);
        assert_eq!(
            last_send().header("authorization"),
            Some("Bearer session-1")
        );

        // The same card again: same plan, the cached token is reused.
        engine.replace_card(as_bearer[0].clone()).unwrap();
        assert!(run_once(&engine).await.success);
        assert_eq!(logins.load(Ordering::SeqCst), 1);

        // The scheme now puts the token in another header: a new plan logs in again.
        let as_key = secured(
            &server,
            json!({"bearer": {"apiKeySecurityScheme": {"location": "header", "name": "X-Session"}}}),
            reqs,
        );
        engine.replace_card(as_key[0].clone()).unwrap();
        assert!(run_once(&engine).await.success);
        assert_eq!(
            logins.load(Ordering::SeqCst),
            2,
            "a fresh login for the new plan"
        );
        let sent = last_send();
        assert_eq!(sent.header("X-Session"), Some("session-2"));
        assert_eq!(sent.header("authorization"), None);
    })
}

pub fn a_credentials_file_fails_closed_without_the_key_and_loads_with_it<T: TestRuntime>() {
    let key_hex = "cd".repeat(32);
    let key = CredentialKey::from_hex(&key_hex).unwrap();
    let enc = encrypt_value("tok", &key, [1u8; 12]);
    let scratch = tempfile::Builder::new()
        .prefix("a2at-creds-")
        .tempdir()
        .unwrap();
    let path = scratch.path().join("creds.json");
    std::fs::write(
        &path,
        json!({"alpha": {"bearer": {"token": enc}}}).to_string(),
    )
    .unwrap();
    // An explicit wrong key, and an explicit key that is not hex, are errors (never the ciphertext).
    assert!(a2at_driver::load_credentials(&path, Some(&"ef".repeat(32))).is_err());
    assert!(a2at_driver::load_credentials(&path, Some("zz")).is_err());
    assert!(a2at_driver::load_credentials(&path, Some(&key_hex)).is_ok());
    assert!(
        a2at_driver::load_credentials(&path.with_extension("missing"), Some(&key_hex)).is_err()
    );
}

pub fn the_extension_sender_built_from_an_engine_uses_its_credentials<T: TestRuntime>() {
    T::block_on(async {
        use a2at_core::a2at::AUTHORIZATION_T_URI;
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").with_extension(AUTHORIZATION_T_URI),
        ])
        .await;
        let (schemes, reqs) = bearer();
        let creds = CredentialsConfig::from_json_value(
            &json!({"alpha": {"bearer": {"token": "ext-token"}}}),
            None,
        )
        .unwrap();
        let engine = Engine::<T>::builder(secured(&server, schemes, reqs))
            .credentials(creds)
            .build()
            .unwrap();
        let sender = engine.extension_sender().unwrap();
        let content = MessageContent::text("allow")
            .with_extension(AUTHORIZATION_T_URI)
            .with_metadata(AUTHORIZATION_T_URI, json!("## Policy\nallow"));
        let result = sender.send_authorization("alpha", content).await.unwrap();
        assert!(result.success, "{result:?}");
        let sent = server.requests_to("alpha", "SendMessage");
        assert_eq!(sent[0].header("Authorization"), Some("Bearer ext-token"));
    })
}
