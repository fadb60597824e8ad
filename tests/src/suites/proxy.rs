//! Proxies and the request hook against real loopback servers: workflows through a real
//! `CONNECT` proxy (JSON-RPC, SSE streaming, gRPC over HTTP/2, TLS inside the tunnel), the
//! `NO_PROXY` bypass, proxy authentication, and a request hook adding gateway headers,
//! rewriting URIs and failing. Every engine here sets its proxy explicitly, so the machine's
//! proxy variables never change the outcome.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use a2at_core::ExecutionResult;
use a2at_core::host::MessageContent;
use a2at_core::run::RunStart;
use a2at_core::workflow::parse_and_validate;
use a2at_driver::{
    ControlPointBuilder, EngineError, PoolConfig, ProxyConfig, RequestHook, TlsConfig,
};
use serde_json::json;

use crate::ScriptedAgent;
use crate::capture::{SharedBuffer, log_subscriber};
use crate::connect_proxy::ConnectProxy;
use crate::loopback::LoopbackServer;
use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;
type EngineBuilder<T> = a2at_driver::EngineBuilder<<T as TestRuntime>::Rt>;
type HttpClient<T> = a2at_driver::HttpClient<<T as TestRuntime>::Rt>;

/// alpha then beta, one subtask each.
fn run<T: TestRuntime>(engine: &Engine<T>) -> ExecutionResult {
    let wf = parse_and_validate(
        &json!({"name": "two", "steps": [
            {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
            {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}]}
        ]})
        .to_string(),
    )
    .expect("valid workflow");
    let host = ControlPointBuilder::new()
        .on_task(|r| async move { Ok(MessageContent::text(&r.instruction)) })
        .build();
    T::block_on(engine.execute(wf, RunStart::default(), Arc::new(host)))
}

fn builder<T: TestRuntime>(cards: Vec<a2at_core::a2a::AgentCard>) -> EngineBuilder<T> {
    Engine::<T>::builder(cards)
        .poll_interval(Duration::from_millis(5))
        .task_budget(Duration::from_secs(10))
        .retry(a2at_core::RetryPolicy::FAIL_FAST)
}

fn assert_done(result: &ExecutionResult) {
    assert!(result.success, "{:?} {:?}", result.error, result.history);
    assert_eq!(
        result.step_outputs()["a"]["first"],
        vec![json!("done: first")]
    );
    assert_eq!(
        result.step_outputs()["b"]["second"],
        vec![json!("done: second")]
    );
}

/// The first subtask's failure message and details, as one text.
fn failure(result: &ExecutionResult) -> String {
    assert!(!result.success, "the run should fail");
    let first = &result.history[0];
    format!(
        "{} {}",
        first.error.clone().unwrap_or_default(),
        first.error_details.clone().unwrap_or_default()
    )
}

/// Runs alpha and beta (built by `agent`) through a fresh proxy; checks that every request
/// went through a tunnel to the agents' server.
fn through_the_proxy<T: TestRuntime>(agent: fn(&str) -> ScriptedAgent) -> LoopbackServer {
    let server = LoopbackServer::spawn(vec![agent("alpha"), agent("beta")]);
    let proxy = ConnectProxy::start();
    let engine = builder::<T>(server.cards())
        .proxy(ProxyConfig::new(&proxy.url()).unwrap())
        .build()
        .unwrap();
    assert_done(&run::<T>(&engine));
    assert!(proxy.tunnels() >= 1, "the engine used the proxy");
    let target = server.addr().to_string();
    assert!(
        proxy.targets().iter().all(|t| *t == target),
        "every tunnel leads to the agents: {:?} vs {target}",
        proxy.targets()
    );
    assert!(server.total_requests() >= 2);
    assert_eq!(
        engine.http_client().requests_sent(),
        server.total_requests(),
        "every request arrived through the tunnels"
    );
    // Connections are pooled inside tunnels: never more tunnels than requests.
    assert!(proxy.tunnels() as u64 <= server.total_requests());
    server
}

pub fn a_workflow_runs_through_a_connect_proxy<T: TestRuntime>() {
    let server = through_the_proxy::<T>(ScriptedAgent::new);
    assert_eq!(server.http2_requests(), 0);
}

pub fn sse_streams_arrive_intact_through_the_proxy<T: TestRuntime>() {
    let server = through_the_proxy::<T>(|name| ScriptedAgent::new(name).streaming());
    assert!(
        server
            .requests("alpha")
            .iter()
            .any(|r| r.method == "SendStreamingMessage"),
        "{:?}",
        server.requests("alpha")
    );
}

pub fn rest_streaming_runs_through_the_proxy<T: TestRuntime>() {
    through_the_proxy::<T>(|name| ScriptedAgent::new(name).rest().streaming());
}

pub fn grpc_over_http2_runs_through_the_proxy<T: TestRuntime>() {
    let server = through_the_proxy::<T>(|name| ScriptedAgent::new(name).grpc().streaming());
    assert_eq!(
        server.http2_requests(),
        server.total_requests(),
        "HTTP/2 with prior knowledge inside the tunnel"
    );
}

pub fn tls_runs_inside_the_tunnel_verified_against_the_agent<T: TestRuntime>() {
    let pki = super::security::pki();
    let server = LoopbackServer::spawn_tls(
        vec![ScriptedAgent::new("alpha"), ScriptedAgent::new("beta")],
        pki.server.clone(),
    );
    let proxy = ConnectProxy::start();
    let with_ca = TlsConfig {
        extra_ca_pem: Some(pki.ca_pem.clone().into_bytes()),
        ..TlsConfig::default()
    };
    let engine = |tls: TlsConfig| {
        builder::<T>(server.cards())
            .tls(tls)
            .proxy(ProxyConfig::new(&proxy.url()).unwrap())
            .build()
            .unwrap()
    };
    // Without the CA the certificate is rejected although the proxy opened the tunnel:
    // verification is end to end, not with the proxy.
    let result = run::<T>(&engine(TlsConfig::default()));
    let message = failure(&result);
    assert!(message.to_lowercase().contains("tls"), "{message}");
    assert_eq!(proxy.tunnels(), 1);
    assert_eq!(server.total_requests(), 0);
    assert_done(&run::<T>(&engine(with_ca)));
    let target = format!("localhost:{}", server.addr().port());
    assert!(
        proxy.targets().iter().all(|t| *t == target),
        "the tunnel names the agent's host, whose name TLS checks: {:?}",
        proxy.targets()
    );
    assert!(server.total_requests() >= 2);
}

pub fn no_proxy_bypasses_the_proxy<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta"),
    ]);
    let proxy = ConnectProxy::start();
    let port = server.addr().port();
    for list in [
        "127.0.0.1".to_owned(),
        format!("example.com, 127.0.0.1:{port}"),
        "127.0.0.0/8".to_owned(),
        "*".to_owned(),
    ] {
        let engine = builder::<T>(server.cards())
            .proxy(ProxyConfig::new(&proxy.url()).unwrap().no_proxy(&list))
            .build()
            .unwrap();
        assert_done(&run::<T>(&engine));
        assert_eq!(proxy.tunnels(), 0, "{list} bypasses the proxy");
    }
    // An entry for another port or host does not: loopback is proxied unless listed.
    for list in [
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        "localhost".to_owned(),
    ] {
        let before = proxy.tunnels();
        let engine = builder::<T>(server.cards())
            .proxy(ProxyConfig::new(&proxy.url()).unwrap().no_proxy(&list))
            .build()
            .unwrap();
        assert_done(&run::<T>(&engine));
        assert!(proxy.tunnels() > before, "{list} does not bypass the proxy");
    }
    // ProxyConfig::none() never proxies.
    let engine = builder::<T>(server.cards())
        .proxy(ProxyConfig::none())
        .build()
        .unwrap();
    let before = proxy.tunnels();
    assert_done(&run::<T>(&engine));
    assert_eq!(proxy.tunnels(), before);
}

pub fn proxy_authentication_is_required_and_the_password_never_shows<T: TestRuntime>() {
    const PASSWORD: &str = "PLANTED-PROXY-PASS-4e1f";
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta"),
    ]);
    let proxy = ConnectProxy::with_basic_auth("agent-user", PASSWORD);
    let engine = |url: String| {
        builder::<T>(server.cards())
            .proxy(ProxyConfig::new(&url).unwrap())
            .build()
            .unwrap()
    };
    let captured = SharedBuffer::default();
    let _guard = tracing::subscriber::set_default(log_subscriber(&captured));

    // No credentials: 407, a connect failure naming proxy and status; nothing reached the agent.
    let result = run::<T>(&engine(proxy.url()));
    let message = failure(&result);
    assert!(message.contains("407"), "{message}");
    assert!(
        message.contains("proxy authentication required"),
        "{message}"
    );
    assert!(message.contains(&proxy.addr().to_string()), "{message}");
    assert!(message.to_lowercase().contains("connect"), "{message}");
    assert_eq!(proxy.refused(), 1);
    assert_eq!(server.total_requests(), 0);

    // Wrong password: refused again, and the attempted password shows nowhere either.
    let wrong = format!("http://agent-user:WRONG-{PASSWORD}@{}", proxy.addr());
    let result = run::<T>(&engine(wrong));
    let message = failure(&result);
    assert!(message.contains("rejected the credentials"), "{message}");
    assert!(!message.contains(PASSWORD), "{message}");
    assert_eq!(proxy.refused(), 2);

    // The right ones (percent-encoding in the URL is decoded): success through the tunnel.
    let engine = engine(format!(
        "http://agent-user:{}@{}",
        PASSWORD.replace('-', "%2D"),
        proxy.addr()
    ));
    let result = run::<T>(&engine);
    assert_done(&result);
    assert!(proxy.tunnels() >= 1);
    assert!(server.total_requests() >= 2);
    let debug = format!("{engine:?} {:?}", engine.http_client());
    drop(_guard);
    let logs = captured.text();
    assert!(logs.contains(">>> REQUEST POST"), "{logs}");
    assert!(!logs.contains(PASSWORD), "{logs}");
    assert!(
        !debug.contains(PASSWORD) && !debug.contains("%2D"),
        "{debug}"
    );
    // The credentials went to the proxy, and to the proxy only.
    assert!(
        proxy
            .heads()
            .iter()
            .any(|h| h.contains("Proxy-Authorization: Basic "))
    );
    for r in server.requests("alpha") {
        assert!(r.header("proxy-authorization").is_none(), "{r:?}");
    }
}

pub fn a_dead_proxy_is_a_connect_failure_naming_it<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta"),
    ]);
    let dead = dead_port();
    let engine = builder::<T>(server.cards())
        .proxy(ProxyConfig::new(&format!("127.0.0.1:{dead}")).unwrap())
        .build()
        .unwrap();
    let message = failure(&run::<T>(&engine));
    assert!(
        message.contains(&format!("cannot reach the proxy 127.0.0.1:{dead}")),
        "{message}"
    );
    assert_eq!(server.total_requests(), 0);
}

pub fn client_settings_next_to_a_given_client_are_an_error<T: TestRuntime>() {
    let client =
        HttpClient::<T>::with_tls_and_proxy(&TlsConfig::default(), ProxyConfig::none()).unwrap();
    let e = Engine::<T>::builder(Vec::new())
        .http_client(client.clone())
        .proxy(ProxyConfig::none())
        .build()
        .unwrap_err();
    assert!(matches!(e, EngineError::Config(_)), "{e:?}");
    let e = Engine::<T>::builder(Vec::new())
        .http_client(client)
        .pool(PoolConfig::default())
        .build()
        .unwrap_err();
    assert!(
        matches!(e, EngineError::Config(m) if m.contains("with_tls_proxy_and_pool")),
        "{e:?}"
    );
    let e = ProxyConfig::new("socks5://127.0.0.1:1080").unwrap_err();
    assert!(matches!(e, EngineError::Proxy(_)), "{e:?}");
}

/// The engine's own client keeps as many idle connections per origin as the engine may have
/// exchanges in flight, unless the builder is given a pool; so does an extension sender's.
pub fn the_pool_follows_the_in_flight_bound_unless_given<T: TestRuntime>() {
    let engine = Engine::<T>::builder(Vec::new())
        .max_in_flight(7)
        .proxy(ProxyConfig::none())
        .build()
        .unwrap();
    let pool = engine.http_client().pool_config();
    assert_eq!(pool.max_idle_per_origin, 7);
    assert_eq!(pool.idle_timeout, PoolConfig::default().idle_timeout);
    let given = PoolConfig::default()
        .max_idle_per_origin(3)
        .idle_timeout(std::time::Duration::from_secs(5));
    let engine = Engine::<T>::builder(Vec::new())
        .max_in_flight(7)
        .proxy(ProxyConfig::none())
        .pool(given)
        .build()
        .unwrap();
    assert_eq!(engine.http_client().pool_config(), given);
    let mut config = a2at_driver::ExtensionSenderConfig::default();
    config.max_in_flight = 5;
    let sender = a2at_driver::ExtensionSender::<T::Rt>::builder(Vec::new())
        .config(config)
        .proxy(ProxyConfig::none())
        .build()
        .unwrap();
    assert_eq!(sender.http_client().pool_config().max_idle_per_origin, 5);
}

/// A loopback port nothing listens on.
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub fn the_request_hook_adds_gateway_headers_the_agent_receives<T: TestRuntime>() {
    const GATEWAY_SECRET: &str = "PLANTED-GATEWAY-TOKEN-a11c";
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta").rest().streaming(),
    ]);
    let auth: a2at_driver::AuthHook = Arc::new(|_| {
        Ok(vec![(
            "Authorization".to_owned(),
            "Bearer from-auth".to_owned(),
        )])
    });
    let seen_auth = Arc::new(AtomicBool::new(false));
    let seen = seen_auth.clone();
    let hook: RequestHook = Arc::new(move |parts| {
        // Runs after authentication: it sees the header the auth hook set.
        if parts
            .headers
            .get("authorization")
            .is_some_and(|v| v == "Bearer from-auth")
        {
            seen.store(true, Ordering::SeqCst);
        }
        parts
            .headers
            .insert("x-gateway-route", "blue".parse().unwrap());
        parts
            .headers
            .insert("x-gateway-token", GATEWAY_SECRET.parse().unwrap());
        Ok(())
    });
    let captured = SharedBuffer::default();
    let _guard = tracing::subscriber::set_default(log_subscriber(&captured));
    let engine = builder::<T>(server.cards())
        .proxy(ProxyConfig::none())
        .auth_headers(auth)
        .request_hook(hook)
        .build()
        .unwrap();
    assert_done(&run::<T>(&engine));
    drop(_guard);
    assert!(
        seen_auth.load(Ordering::SeqCst),
        "the hook ran after authentication"
    );
    for agent in ["alpha", "beta"] {
        let requests = server.requests(agent);
        assert!(!requests.is_empty());
        for r in requests {
            assert_eq!(r.header("x-gateway-route"), Some("blue"), "{r:?}");
            assert_eq!(r.header("x-gateway-token"), Some(GATEWAY_SECRET));
            assert_eq!(r.header("authorization"), Some("Bearer from-auth"));
            assert!(
                r.header("content-type").is_some(),
                "the engine's headers stay"
            );
        }
    }
    let logs = captured.text();
    assert!(
        logs.contains("x-gateway-route: blue"),
        "the hook's headers are logged:\n{logs}"
    );
    assert!(logs.contains("x-gateway-token: ***"), "{logs}");
    assert!(!logs.contains(GATEWAY_SECRET), "{logs}");
    assert!(!logs.contains("from-auth"), "{logs}");
}

pub fn the_request_hook_rewrites_uris_for_a_streaming_run<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("alpha").streaming(),
        ScriptedAgent::new("beta").rest().streaming(),
    ]);
    // The cards point at a dead port under a gateway prefix; the hook routes to the live agent.
    let dead = dead_port();
    let cards = server.cards_at(&format!("http://127.0.0.1:{dead}"));
    let live = server.addr().to_string();
    let rewrites = Arc::new(AtomicUsize::new(0));
    let count = rewrites.clone();
    let hook: RequestHook = Arc::new(move |parts| {
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        parts.uri = format!("http://{live}{path}")
            .parse()
            .map_err(|e| format!("{e}"))?;
        count.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let without = builder::<T>(cards.clone())
        .proxy(ProxyConfig::none())
        .build()
        .unwrap();
    let message = failure(&run::<T>(&without));
    assert!(!message.is_empty());
    assert_eq!(server.total_requests(), 0, "the cards alone reach nothing");

    let engine = builder::<T>(cards)
        .proxy(ProxyConfig::none())
        .request_hook(hook)
        .build()
        .unwrap();
    assert_done(&run::<T>(&engine));
    assert!(
        server
            .requests("alpha")
            .iter()
            .any(|r| r.method == "SendStreamingMessage")
    );
    assert_eq!(
        rewrites.load(Ordering::SeqCst) as u64,
        server.total_requests()
    );
    let live = server.addr().to_string();
    for r in server.requests("alpha") {
        assert_eq!(
            r.header("host"),
            Some(live.as_str()),
            "Host follows the final URI"
        );
    }
}

pub fn a_failing_or_panicking_hook_fails_the_exchange_not_the_engine<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta"),
    ]);
    // 0: pass, 1: refuse, 2: panic.
    let mode = Arc::new(AtomicUsize::new(2));
    let m = mode.clone();
    let hook: RequestHook = Arc::new(move |_| match m.load(Ordering::SeqCst) {
        1 => Err("no route for this tenant".to_owned()),
        2 => panic!("gateway table corrupt"),
        _ => Ok(()),
    });
    let engine = builder::<T>(server.cards())
        .proxy(ProxyConfig::none())
        .request_hook(hook)
        .build()
        .unwrap();
    let message = failure(&run::<T>(&engine));
    assert!(
        message.contains("request hook panicked: gateway table corrupt"),
        "{message}"
    );
    mode.store(1, Ordering::SeqCst);
    let message = failure(&run::<T>(&engine));
    assert!(
        message.contains("request hook refused the request: no route for this tenant"),
        "{message}"
    );
    assert_eq!(server.total_requests(), 0, "nothing was sent");
    // The same engine runs on once the hook behaves.
    mode.store(0, Ordering::SeqCst);
    assert_done(&run::<T>(&engine));
}

pub fn extension_senders_from_the_engine_share_its_proxy_and_hook<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta"),
    ]);
    let proxy = ConnectProxy::start();
    let hook: RequestHook = Arc::new(|parts| {
        parts
            .headers
            .insert("x-gateway-route", "green".parse().unwrap());
        Ok(())
    });
    let engine = builder::<T>(server.cards())
        .proxy(ProxyConfig::new(&proxy.url()).unwrap())
        .request_hook(hook)
        .build()
        .unwrap();
    let sender = engine.extension_sender().unwrap();
    assert_eq!(
        format!("{:?}", sender.http_client().proxy()),
        format!("{:?}", engine.http_client().proxy())
    );
    let debug = format!("{:?}", sender.http_client());
    assert!(debug.contains("request_hook: true"), "{debug}");
    // Task management goes through the engine's client: the proxy and the hook apply.
    let page = T::block_on(engine.list_tasks("alpha", a2at_core::a2a::ListTasksParams::default()));
    assert!(page.is_ok(), "{page:?}");
    assert!(proxy.tunnels() >= 1);
    let requests = server.requests("alpha");
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-gateway-route") == Some("green"))
    );
}

pub fn discovery_goes_through_the_proxy_and_the_hook<T: TestRuntime>() {
    use super::security::{Reply, fake_center};
    let center = fake_center(|_| {
        Reply::Json(
            200,
            json!({"agentCards": [{"name": "found", "description": "d", "version": "1",
                "supportedInterfaces": [{"url": "http://127.0.0.1:9/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "capabilities": {}, "skills": []}]}),
        )
    });
    let proxy = ConnectProxy::start();
    let hook: RequestHook = Arc::new(|parts| {
        parts
            .headers
            .insert("x-gateway-route", "discovery".parse().unwrap());
        Ok(())
    });
    let client = a2at_driver::RegistryClient::<T::Rt>::builder(&center.url)
        .proxy(ProxyConfig::new(&proxy.url()).unwrap())
        .request_hook(hook)
        .build()
        .unwrap();
    let cards = T::block_on(client.fetch_agent_cards()).unwrap();
    assert_eq!(cards[0].name, "found");
    assert_eq!(proxy.tunnels(), 1);
    let seen = center.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("x-gateway-route") && v == "discovery"),
        "{:?}",
        seen[0].headers
    );
}

pub fn grpc_over_tls_negotiates_h2_inside_the_tunnel<T: TestRuntime>() {
    let pki = super::security::pki();
    let mut config = (*pki.server).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let server = LoopbackServer::spawn_tls(
        vec![
            ScriptedAgent::new("alpha").grpc().streaming(),
            ScriptedAgent::new("beta").grpc(),
        ],
        Arc::new(config),
    );
    let proxy = ConnectProxy::start();
    let engine = builder::<T>(server.cards())
        .tls(TlsConfig {
            extra_ca_pem: Some(pki.ca_pem.clone().into_bytes()),
            ..TlsConfig::default()
        })
        .proxy(ProxyConfig::new(&proxy.url()).unwrap())
        .build()
        .unwrap();
    assert_done(&run::<T>(&engine));
    assert!(proxy.tunnels() >= 1);
    assert!(server.total_requests() >= 2);
    assert_eq!(server.http2_requests(), server.total_requests());
    assert!(server.requests("alpha").iter().all(|r| r.grpc));
}
