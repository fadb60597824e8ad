//! Discovery over HTTP (DS-2..DS-10), login deadlines (AU-15), TLS against a real loopback TLS
//! server with certificates generated at test time (TL-1, TL-3, TL-5, TL-6), `.env` files and
//! credential sources (AU-9, AU-11, AU-13) and the protocol log knobs (PL-4).
//!
//! Compiled once per runtime: the including test file binds `rt` (the runtime crate) and
//! `block_on`. The fake servers are plain threads on std sockets, so they serve either runtime.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ScriptedAgent;
use crate::loopback::LoopbackServer;
use a2at_core::io::TransportErrorKind;
use serde_json::{Value, json};

use a2at_driver::{DiscoveryError, EngineError, EnvFile, TlsConfig};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;
type PsopClient<T> = a2at_driver::PsopClient<<T as TestRuntime>::Rt>;
type RegistryClient<T> = a2at_driver::RegistryClient<<T as TestRuntime>::Rt>;

// ------------------------------------------------------------------------------------------
// A fake center: one request per connection, answered by a handler
// ------------------------------------------------------------------------------------------

/// A request as the fake center read it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// What the fake center answers.
pub enum Reply {
    Json(u16, Value),
    Redirect(u16, String),
    /// Never answer (the connection stays open for a minute).
    Hang,
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

pub struct FakeCenter {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeCenter {
    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn read_request(stream: &mut dyn ReadWrite) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0usize);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn answer(stream: &mut dyn ReadWrite, reply: Reply) {
    let (status, extra, body) = match reply {
        Reply::Json(status, v) => (status, String::new(), v.to_string()),
        Reply::Redirect(status, location) => {
            (status, format!("location: {location}\r\n"), String::new())
        }
        Reply::Hang => {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

fn serve(
    listener: TcpListener,
    handler: Handler,
    seen: Arc<Mutex<Vec<Seen>>>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let handler = handler.clone();
            let seen = seen.clone();
            let tls = tls.clone();
            std::thread::spawn(move || {
                let handle = |s: &mut dyn ReadWrite| {
                    if let Some(req) = read_request(s) {
                        seen.lock().unwrap().push(req.clone());
                        answer(s, handler(&req));
                    }
                };
                match tls {
                    None => handle(&mut { stream }),
                    Some(config) => {
                        let Ok(conn) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        let mut s = rustls::StreamOwned::new(conn, stream);
                        handle(&mut s);
                        s.conn.send_close_notify();
                        let _ = s.flush();
                    }
                }
            });
        }
    });
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

pub fn fake_center(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> FakeCenter {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    serve(listener, Arc::new(handler), seen.clone(), None);
    FakeCenter { url, seen }
}

fn card(name: &str) -> Value {
    json!({"name": name, "description": "d", "version": "1",
           "supportedInterfaces": [{"url": "http://127.0.0.1:9/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
           "capabilities": {}, "skills": []})
}

fn workflow_json() -> Value {
    json!({"name": "wf", "steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]})
}

// ------------------------------------------------------------------------------------------
// Registry (DS-2..DS-5)
// ------------------------------------------------------------------------------------------

pub fn registry_fetches_all_by_name_and_registers<T: TestRuntime>() {
    let center = fake_center(|req| {
        let path = req.target.split('?').next().unwrap_or("");
        assert_eq!(path, "/base/rest/v1/registry-center/agent-cards");
        match (req.method.as_str(), req.target.contains("name=")) {
            ("GET", false) => {
                Reply::Json(200, json!({"agentCards": [card("alpha"), card("beta")]}))
            }
            ("GET", true) if req.target.contains("name=nobody") => {
                Reply::Json(200, json!({"data": []}))
            }
            ("GET", true) => Reply::Json(200, json!({"data": [card("alpha"), card("alpha2")]})),
            ("POST", _) if req.json()["agentCards"][0]["name"] == "bad" => {
                Reply::Json(409, json!({"error": "exists"}))
            }
            _ => Reply::Json(201, json!({"ok": true})),
        }
    });
    let registry = RegistryClient::<T>::new(&format!("{}/base/", center.url)).unwrap();
    assert_eq!(
        registry.base(),
        format!("{}/base", center.url),
        "trailing / stripped"
    );
    assert_eq!(
        registry.deadline(),
        Duration::from_secs(30),
        "default deadline"
    );
    T::block_on(async {
        let cards = registry.fetch_agent_cards().await.unwrap();
        let names: Vec<_> = cards.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta"]);

        let one = registry
            .fetch_agent_card("alpha agent", Some("org&1"))
            .await
            .unwrap();
        assert_eq!(
            one.map(|c| c.name),
            Some("alpha".to_owned()),
            "the first card"
        );
        assert_eq!(
            registry.fetch_agent_card("nobody", None).await.unwrap(),
            None
        );

        let ok = registry.register_agent_card(&card("gamma")).await.unwrap();
        assert!(ok.success && ok.status == 201);
        let refused = registry.register_agent_card(&card("bad")).await.unwrap();
        assert!(!refused.success);
        assert_eq!(refused.status, 409);
        assert_eq!(
            refused.body,
            json!({"error": "exists"}),
            "the parsed body either way"
        );
    });
    let seen = center.requests();
    assert_eq!(seen.len(), 5);
    assert!(
        seen[1]
            .target
            .ends_with("?name=alpha%20agent&organization=org%261"),
        "{}",
        seen[1].target
    );
    assert!(
        seen[2].target.ends_with("?name=nobody"),
        "no organization: {}",
        seen[2].target
    );
    assert_eq!(seen[3].method, "POST");
    assert_eq!(seen[3].json(), json!({"agentCards": [card("gamma")]}));
    assert!(
        seen[3]
            .headers
            .contains(&("content-type".into(), "application/json".into()))
    );
}

pub fn registry_errors_are_typed<T: TestRuntime>() {
    let center = fake_center(|req| {
        if req.target.contains("name=broken") {
            Reply::Json(200, json!({"agentCards": [42]}))
        } else {
            Reply::Json(503, json!({"error": "down"}))
        }
    });
    let registry = RegistryClient::<T>::new(&center.url).unwrap();
    T::block_on(async {
        let e = registry.fetch_agent_cards().await.unwrap_err();
        assert!(
            matches!(
                &e,
                DiscoveryError::Response {
                    source: a2at_core::discovery::DiscoveryResponseError::Status { status: 503 },
                    ..
                }
            ),
            "{e:?}"
        );
        let e = registry.fetch_agent_card("broken", None).await.unwrap_err();
        assert!(
            matches!(
                &e,
                DiscoveryError::Response {
                    source: a2at_core::discovery::DiscoveryResponseError::InvalidCard {
                        index: 0,
                        ..
                    },
                    ..
                }
            ),
            "{e:?}"
        );
    });
    // Nothing listens on a just-closed port.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let registry = RegistryClient::<T>::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let e = T::block_on(registry.fetch_agent_cards()).unwrap_err();
    assert_eq!(
        e.transport_kind(),
        Some(TransportErrorKind::Connect),
        "{e:?}"
    );
    assert!(matches!(
        RegistryClient::<T>::builder(&center.url)
            .deadline(Duration::ZERO)
            .build(),
        Err(DiscoveryError::Config(_))
    ));
}

pub fn redirects_are_followed_and_bounded<T: TestRuntime>() {
    let center = fake_center(|req| match req.target.as_str() {
        t if t.starts_with("/loop") => Reply::Redirect(307, t.to_owned()),
        t if t.ends_with("/agent-cards") => Reply::Redirect(302, "/moved".into()),
        "/moved" => Reply::Json(200, json!({"agentCards": [card("moved")]})),
        _ => Reply::Json(404, json!({})),
    });
    let registry = RegistryClient::<T>::new(&center.url).unwrap();
    let cards = T::block_on(registry.fetch_agent_cards()).unwrap();
    assert_eq!(cards[0].name, "moved");
    assert_eq!(center.requests().len(), 2, "the redirect and its target");
    let looping = RegistryClient::<T>::new(&format!("{}/loop", center.url)).unwrap();
    let e = T::block_on(looping.fetch_agent_cards()).unwrap_err();
    assert!(matches!(e, DiscoveryError::Redirect { .. }), "{e:?}");
    assert_eq!(
        center.requests().len(),
        2 + 1 + a2at_driver::MAX_REDIRECTS,
        "bounded"
    );
}

// ------------------------------------------------------------------------------------------
// PSOP store (DS-6..DS-9)
// ------------------------------------------------------------------------------------------

const TOKEN: &str = "PLANTED-ACCESS-TOKEN-4e1d";

fn psop_center() -> FakeCenter {
    fake_center(|req| {
        let path = req.target.split('?').next().unwrap_or("").to_owned();
        match (req.method.as_str(), path.as_str()) {
            ("GET", "/api/v1/orchestrate/psop/wf%201") => {
                Reply::Json(200, json!({"code": 0, "data": workflow_json()}))
            }
            ("GET", "/api/v1/orchestrate/psop/bare") => Reply::Json(200, workflow_json()),
            ("GET", "/api/v1/orchestrate/psop/invalid") => {
                Reply::Json(200, json!({"data": "{not json"}))
            }
            ("GET", "/api/v1/orchestrate/psop/slow") => Reply::Hang,
            ("POST", "/api/v1/orchestrate/search") => Reply::Json(
                200,
                json!({"data": [
                    {"workflow_id": "w1", "name": "first", "score": 0.9, "tags": ["a", 2], "created_at": 1700000000},
                    {"id": 42, "name": "second", "score": "high"}
                ]}),
            ),
            _ => Reply::Json(404, json!({"error": "not found"})),
        }
    })
}

pub fn psop_load_and_search_send_the_token_and_parse_the_answers<T: TestRuntime>() {
    let center = psop_center();
    let psop = PsopClient::<T>::builder(&format!("{}/", center.url))
        .access_token(TOKEN)
        .build()
        .unwrap();
    T::block_on(async {
        let wf = psop.load("wf 1").await.unwrap();
        assert_eq!(wf.workflow().steps.len(), 1);
        assert!(psop.load_json("bare").await.unwrap().contains("\"steps\""));
        let e = psop.load("invalid").await.unwrap_err();
        assert!(
            matches!(
                &e,
                DiscoveryError::Response {
                    source: a2at_core::discovery::DiscoveryResponseError::Workflow(_),
                    ..
                }
            ),
            "{e:?}"
        );
        let e = psop.load("missing").await.unwrap_err();
        assert!(
            matches!(
                &e,
                DiscoveryError::Response {
                    source: a2at_core::discovery::DiscoveryResponseError::Status { status: 404 },
                    ..
                }
            ),
            "{e:?}"
        );
        let hits = psop.search("restart the router", None).await.unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].workflow_id, "w1");
        assert_eq!(hits[0].tags, ["a", "2"]);
        assert_eq!(hits[0].created_at.as_deref(), Some("1700000000"));
        assert_eq!(hits[1].workflow_id, "42", "id is an alias of workflow_id");
        assert_eq!(hits[1].score, 1.0, "a score that is not a number reads 1.0");
        psop.search("x", Some(2)).await.unwrap();
    });
    let seen = center.requests();
    for req in &seen {
        assert!(
            req.target.ends_with(&format!("access_token={TOKEN}")),
            "the token travels in the query: {}",
            req.target
        );
    }
    let searches: Vec<_> = seen.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(
        searches[0].json(),
        json!({"intent": "restart the router", "top_n": 5})
    );
    assert_eq!(searches[1].json()["top_n"], 2);
}

/// Captures everything logged on this thread, at every level.
fn capture<T>(f: impl FnOnce() -> T) -> (T, String) {
    crate::capture::capture_logs(f)
}

pub fn access_tokens_never_reach_the_logs_or_the_errors<T: TestRuntime>() {
    let center = psop_center();
    let (errors, logs) = capture(|| {
        let psop = PsopClient::<T>::builder(&center.url)
            .access_token(TOKEN)
            .deadline(Duration::from_millis(300))
            .build()
            .unwrap();
        T::block_on(async {
            psop.load("wf 1").await.unwrap();
            psop.search("intent", Some(1)).await.unwrap();
            let missing = psop.load("missing").await.unwrap_err();
            let slow = psop.load("slow").await.unwrap_err();
            format!("{missing} {missing:?} {slow} {slow:?} {psop:?}")
        })
    });
    assert!(logs.contains("access_token=<anonymous>"), "DS-9:\n{logs}");
    assert!(
        logs.contains(">>> REQUEST GET"),
        "the request is logged:\n{logs}"
    );
    assert!(
        !logs.contains(TOKEN),
        "the token leaked into the logs:\n{logs}"
    );
    assert!(
        !errors.contains(TOKEN),
        "the token leaked into an error: {errors}"
    );
    assert!(errors.contains("<anonymous>"), "{errors}");
}

pub fn an_oversized_answer_is_a_typed_error_not_a_memory_sink<T: TestRuntime>() {
    let cards: Vec<Value> = (0..200)
        .map(|i| json!({"name": format!("agent-{i}"), "padding": "x".repeat(200)}))
        .collect();
    let center = fake_center(move |_| Reply::Json(200, json!({"agentCards": cards})));
    let registry = RegistryClient::<T>::builder(&center.url)
        .max_body_bytes(4096)
        .build()
        .unwrap();
    let e = T::block_on(registry.fetch_agent_cards()).unwrap_err();
    assert!(
        matches!(e, DiscoveryError::TooLarge { limit: 4096, .. }),
        "{e:?}"
    );
    assert!(
        matches!(
            RegistryClient::<T>::builder(&center.url)
                .max_body_bytes(0)
                .build(),
            Err(DiscoveryError::Config(_))
        ),
        "a zero cap is a configuration error"
    );
}

pub fn a_center_that_never_answers_hits_the_configured_deadline<T: TestRuntime>() {
    let center = fake_center(|_| Reply::Hang);
    let registry = RegistryClient::<T>::builder(&center.url)
        .deadline(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let e = T::block_on(registry.fetch_agent_cards()).unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(e, DiscoveryError::Deadline { deadline, .. } if deadline == Duration::from_millis(300)),
        "{e:?}"
    );
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(
        center.requests().len(),
        1,
        "the request went out and was left unanswered"
    );
}

// ------------------------------------------------------------------------------------------
// TLS (TL-1, TL-3, TL-5, TL-6, DS-10)
// ------------------------------------------------------------------------------------------

/// A CA and a server certificate for `localhost` only, signed by it.
pub(crate) struct Pki {
    pub(crate) ca_pem: String,
    ca_cert: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
    pub(crate) server: Arc<rustls::ServerConfig>,
}

/// A certificate for `names` with serial number `serial`, signed by the test CA.
fn leaf(
    ca_cert: &rcgen::Certificate,
    ca_key: &rcgen::KeyPair,
    names: &[&str],
    serial: u64,
) -> (rcgen::Certificate, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = rcgen::CertificateParams::new(names).unwrap();
    params.serial_number = Some(rcgen::SerialNumber::from(serial));
    let cert = params.signed_by(&key, ca_cert, ca_key).unwrap();
    (cert, key)
}

/// A server configuration presenting `cert`; with `client_ca`, client certificates issued by
/// it are required.
fn server_config(
    cert: &rcgen::Certificate,
    key: &rcgen::KeyPair,
    client_ca: Option<&rcgen::Certificate>,
) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der().clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    Arc::new(
        builder
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap(),
    )
}

pub(crate) fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "a2at test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let (cert, key) = leaf(&ca_cert, &ca_key, &["localhost"], 1);
    Pki {
        ca_pem: ca_cert.pem(),
        server: server_config(&cert, &key, None),
        ca_cert,
        ca_key,
    }
}

/// A TLS fake registry; returns its port.
fn tls_center(pki: &Pki) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    tls_center_with(pki.server.clone())
}

fn tls_center_with(config: Arc<rustls::ServerConfig>) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    serve(
        listener,
        Arc::new(|_: &Seen| Reply::Json(200, json!({"agentCards": [card("secure")]}))),
        seen.clone(),
        Some(config),
    );
    (port, seen)
}

pub fn tls_verification_extra_ca_and_the_insecure_mode<T: TestRuntime>() {
    let pki = pki();
    let (port, seen) = tls_center(&pki);
    let good = format!("https://localhost:{port}");
    let wrong_name = format!("https://127.0.0.1:{port}");
    let fetch = |url: &str, tls: TlsConfig| {
        let client = RegistryClient::<T>::builder(url).tls(tls).build()?;
        T::block_on(client.fetch_agent_cards())
    };

    // Default: the test CA is unknown, so the handshake fails and nothing is sent.
    let e = fetch(&good, TlsConfig::default()).unwrap_err();
    assert_eq!(e.transport_kind(), Some(TransportErrorKind::Tls), "{e:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        0,
        "no request before verification"
    );

    // The CA as an extra bundle: accepted; a certificate for another name still is not.
    let with_ca = TlsConfig {
        extra_ca_pem: Some(pki.ca_pem.clone().into_bytes()),
        ..TlsConfig::default()
    };
    assert_eq!(fetch(&good, with_ca.clone()).unwrap()[0].name, "secure");
    let e = fetch(&wrong_name, with_ca).unwrap_err();
    assert_eq!(e.transport_kind(), Some(TransportErrorKind::Tls), "{e:?}");

    // Insecure mode: any chain, with a warning, but the host name is still checked.
    let insecure = TlsConfig {
        insecure_skip_chain_verification: true,
        ..TlsConfig::default()
    };
    let (result, logs) = capture(|| fetch(&good, insecure.clone()));
    assert_eq!(result.unwrap()[0].name, "secure");
    assert!(logs.contains("INSECURE_TLS"), "TL-6 warning:\n{logs}");
    assert!(logs.contains("WARN"), "{logs}");
    let e = fetch(&wrong_name, insecure).unwrap_err();
    assert_eq!(e.transport_kind(), Some(TransportErrorKind::Tls), "{e:?}");

    // DS-10: the insecure client changed nothing for clients built afterwards.
    let e = fetch(&good, TlsConfig::default()).unwrap_err();
    assert_eq!(e.transport_kind(), Some(TransportErrorKind::Tls), "{e:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "only the two accepted fetches arrived"
    );

    // TL-5: a policy that cannot be built is an error, never a fallback.
    let broken = TlsConfig {
        extra_ca_pem: Some(b"not a certificate".to_vec()),
        ..TlsConfig::default()
    };
    let e = RegistryClient::<T>::builder(&good)
        .tls(broken)
        .build()
        .unwrap_err();
    assert!(
        matches!(e, DiscoveryError::Setup(EngineError::Tls(_))),
        "{e:?}"
    );
}

// ------------------------------------------------------------------------------------------
// Login deadline (AU-15), credential sources (AU-9, AU-11, AU-13), log knobs (PL-4)
// ------------------------------------------------------------------------------------------

/// The cards of `server` with `alpha` requiring a bearer token.
fn secured(server: &LoopbackServer) -> Vec<a2at_core::a2a::AgentCard> {
    server
        .cards()
        .into_iter()
        .map(|c| {
            let mut v = c.to_json();
            v["securitySchemes"] =
                json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
            v["securityRequirements"] = json!([{"schemes": {"bearer": {}}}]);
            a2at_core::a2a::AgentCard::from_json_value(&v).unwrap()
        })
        .collect()
}

fn run_alpha<T: TestRuntime>(engine: &Engine<T>) -> a2at_core::ExecutionResult {
    let host = a2at_driver::ControlPointBuilder::new()
        .on_task(|r| async move { Ok(a2at_core::host::MessageContent::text(&r.instruction)) })
        .build();
    let wf = a2at_core::workflow::parse_and_validate(&workflow_json().to_string()).unwrap();
    T::block_on(engine.execute(wf, a2at_core::run::RunStart::default(), Arc::new(host)))
}

pub fn a_hanging_login_hits_its_deadline_and_nothing_is_sent_unauthenticated<T: TestRuntime>() {
    let login = fake_center(|_| Reply::Hang);
    let server = LoopbackServer::spawn(vec![ScriptedAgent::new("alpha")]);
    let creds = a2at_core::auth::CredentialsConfig::from_json_value(
        &json!({"alpha": {"bearer": {"login_url": format!("{}/login", login.url),
                                     "request_fields": {"username": "u", "password": "p"}}}}),
        None,
    )
    .unwrap();
    assert_eq!(
        a2at_driver::EngineConfig::default().login_timeout,
        Duration::from_secs(30)
    );
    let engine = Engine::<T>::builder(secured(&server))
        .credentials(creds)
        .login_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let result = run_alpha::<T>(&engine);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(!result.success);
    let error = result.history[0].error.clone().unwrap_or_default();
    assert!(
        error.contains("login") && error.contains("300ms"),
        "{error}"
    );
    assert_eq!(login.requests().len(), 1, "the login was attempted");
    assert_eq!(server.total_requests(), 0, "never sent unauthenticated");
    assert!(matches!(
        Engine::<T>::builder(vec![])
            .login_timeout(Duration::ZERO)
            .build(),
        Err(EngineError::Config(_))
    ));
}

/// A file in its own scratch directory; both are removed when it drops.
struct ScratchFile {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for ScratchFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::path::Path> for ScratchFile {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}

fn temp_file(name: &str, text: &str) -> ScratchFile {
    let dir = tempfile::Builder::new()
        .prefix("a2at-suite-")
        .tempdir()
        .unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    ScratchFile { path, _dir: dir }
}

pub fn credentials_come_from_a_file_or_inline_never_both_with_the_key_from_a_dotenv<
    T: TestRuntime,
>() {
    use a2at_core::auth::{CredentialKey, CredentialsConfig, encrypt_value};
    let server = LoopbackServer::spawn(vec![ScriptedAgent::new("alpha")]);
    let key_hex = "3c".repeat(32);
    let key = CredentialKey::from_hex(&key_hex).unwrap();
    let creds = temp_file(
        "creds.json",
        &json!({"alpha": {"bearer": {"token": encrypt_value("file-token", &key, [9u8; 12])}}})
            .to_string(),
    );
    // The name is unlikely to be set in the process environment; A2AT_CRED_KEY may be, so the
    // explicit-key and .env cases use an instance key or check precedence explicitly.
    let dotenv = EnvFile::parse(&format!(
        "# credentials\nA2AT_CRED_KEY=\"{key_hex}\"\nA2AT_SUITE_ONLY=1\n"
    ));
    assert_eq!(
        dotenv.var("A2AT_SUITE_ONLY").as_deref(),
        Some("1"),
        "file values apply where the environment is silent"
    );
    if std::env::var_os("A2AT_CRED_KEY").is_none() {
        assert_eq!(dotenv.loaded(), 2);
        let engine = Engine::<T>::builder(secured(&server))
            .credentials_file(&*creds)
            .env_file(dotenv.clone())
            .build()
            .unwrap();
        assert!(run_alpha::<T>(&engine).success);
        // Without the .env (and no key anywhere) the file cannot be decrypted: fail closed.
        let e = Engine::<T>::builder(secured(&server))
            .credentials_file(&*creds)
            .build()
            .unwrap_err();
        assert!(matches!(e, EngineError::Credentials(_)), "{e:?}");
    }
    // An explicit instance key wins over the environment and the .env file.
    let engine = Engine::<T>::builder(secured(&server))
        .credentials_file(&*creds)
        .credential_key(&key_hex)
        .env_file(EnvFile::parse(&format!(
            "A2AT_CRED_KEY={}",
            "00".repeat(32)
        )))
        .build()
        .unwrap();
    assert!(run_alpha::<T>(&engine).success);
    let sent = server.requests_to("alpha", "SendMessage");
    assert_eq!(
        sent.last().unwrap().header("Authorization"),
        Some("Bearer file-token")
    );

    // AU-9: both sources, a missing file and a malformed file fail at build time.
    let inline =
        CredentialsConfig::from_json_value(&json!({"alpha": {"bearer": {"token": "t"}}}), None)
            .unwrap();
    let e = Engine::<T>::builder(secured(&server))
        .credentials(inline)
        .credentials_file(&*creds)
        .credential_key(&key_hex)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("both"), "{e}");
    let e = Engine::<T>::builder(vec![])
        .credentials_file(creds.with_extension("missing"))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    let malformed = temp_file("bad.json", "{\"alpha\": [1, 2");
    let e = Engine::<T>::builder(vec![])
        .credentials_file(&*malformed)
        .build()
        .unwrap_err();
    assert!(matches!(e, EngineError::Credentials(_)), "{e:?}");
    assert!(matches!(
        EnvFile::load(&malformed.with_extension("nothing")),
        Err(EngineError::EnvFile { .. })
    ));
    assert_eq!(
        EnvFile::load(&temp_file(".env", "A=1\nB=2\n"))
            .unwrap()
            .names()
            .count(),
        2
    );
}

pub fn protocol_log_knobs_come_from_the_env_file_and_the_builder_wins<T: TestRuntime>() {
    let server = LoopbackServer::spawn(vec![ScriptedAgent::new("alpha")]);
    let knobs = EnvFile::parse(
        "WORKFLOW_ENGINE_PROTOCOL_INCLUDE_BODY=false\nWORKFLOW_ENGINE_PROTOCOL_PRETTY=false\n",
    );
    if std::env::var_os("WORKFLOW_ENGINE_PROTOCOL_INCLUDE_BODY").is_some() {
        return; // the process environment would take precedence over the file
    }
    let (result, logs) = capture(|| {
        let engine = Engine::<T>::builder(server.cards())
            .env_file(knobs.clone())
            .build()
            .unwrap();
        run_alpha::<T>(&engine)
    });
    assert!(result.success);
    assert!(
        logs.contains("body=disabled"),
        "the .env knob applies:\n{logs}"
    );
    let (result, logs) = capture(|| {
        let engine = Engine::<T>::builder(server.cards())
            .env_file(knobs.clone())
            .protocol_log_body(true)
            .protocol_log_max_body_chars(300)
            .build()
            .unwrap();
        run_alpha::<T>(&engine)
    });
    assert!(result.success);
    assert!(!logs.contains("body=disabled"), "the builder wins:\n{logs}");
    assert!(
        logs.contains("\"messageId\""),
        "bodies are logged again:\n{logs}"
    );
    let e = Engine::<T>::builder(vec![])
        .env_file(EnvFile::parse(
            "WORKFLOW_ENGINE_PROTOCOL_MAX_BODY_CHARS=lots",
        ))
        .build()
        .unwrap_err();
    assert!(
        matches!(&e, EngineError::Environment(m) if m.contains("WORKFLOW_ENGINE_PROTOCOL_MAX_BODY_CHARS")),
        "{e:?}"
    );
}

pub fn tls_client_identity_files_and_revocation_lists<T: TestRuntime>() {
    let pki = pki();
    let ca_file = temp_file("ca.pem", &pki.ca_pem);
    let trusting = || TlsConfig::default().with_ca_file(&ca_file).unwrap();
    let fetch = |port: u16, tls: TlsConfig| {
        let client = RegistryClient::<T>::builder(&format!("https://localhost:{port}"))
            .tls(tls)
            .build()?;
        T::block_on(client.fetch_agent_cards())
    };

    // mTLS (TL-2): the server demands a certificate issued by the test CA.
    let (server_cert, server_key) = leaf(&pki.ca_cert, &pki.ca_key, &["localhost"], 10);
    let (port, seen) =
        tls_center_with(server_config(&server_cert, &server_key, Some(&pki.ca_cert)));
    assert!(
        fetch(port, trusting()).is_err(),
        "no client certificate, no answer"
    );
    assert_eq!(seen.lock().unwrap().len(), 0);
    let (client_cert, client_key) = leaf(&pki.ca_cert, &pki.ca_key, &["a2at-client"], 11);
    let cert_file = temp_file("client.pem", &client_cert.pem());
    let der_key_file = temp_file("client.key.der", "");
    std::fs::write(&der_key_file, client_key.serialize_der()).unwrap();
    let with_identity = trusting()
        .with_client_identity_files(&cert_file, &der_key_file)
        .unwrap();
    assert_eq!(
        fetch(port, with_identity).unwrap()[0].name,
        "secure",
        "DER key"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    let pem_key_file = temp_file("client.key.pem", &client_key.serialize_pem());
    let with_pem_key = trusting()
        .with_client_identity_files(&cert_file, &pem_key_file)
        .unwrap();
    assert!(fetch(port, with_pem_key).is_ok(), "PEM key");
    // An encrypted PKCS#8 key (PBES2: PBKDF2-SHA256 and AES-256-CBC) works with its password;
    // a wrong password or a plain key given as encrypted is an error that names the key, never
    // the password.
    let encrypted_pem = {
        use pkcs8::der::EncodePem;
        let params =
            pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, &[7u8; 16], &[9u8; 16])
                .unwrap();
        let der = client_key.serialize_der();
        let info = pkcs8::PrivateKeyInfo::try_from(der.as_slice()).unwrap();
        let encrypted = info.encrypt_with_params(params, "open sesame").unwrap();
        pkcs8::EncryptedPrivateKeyInfo::try_from(encrypted.as_bytes())
            .unwrap()
            .to_pem(pkcs8::LineEnding::LF)
            .unwrap()
    };
    assert!(encrypted_pem.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----"));
    let encrypted_key_file = temp_file("client.key.enc.pem", &encrypted_pem);
    let plain_refused = trusting()
        .with_client_identity_files(&cert_file, &encrypted_key_file)
        .and_then(|tls| fetch(port, tls).map_err(|e| EngineError::Tls(e.to_string())));
    assert!(
        plain_refused.is_err(),
        "an encrypted key needs its password"
    );
    let with_encrypted_key = trusting()
        .with_encrypted_client_identity_files(&cert_file, &encrypted_key_file, "open sesame")
        .unwrap();
    assert!(fetch(port, with_encrypted_key).is_ok(), "encrypted key");
    let wrong = trusting()
        .with_encrypted_client_identity_files(&cert_file, &encrypted_key_file, "guess")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        wrong.contains("client key") && !wrong.contains("guess"),
        "{wrong}"
    );
    let not_encrypted = trusting()
        .with_encrypted_client_identity_files(&cert_file, &pem_key_file, "open sesame")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        not_encrypted.contains("ENCRYPTED PRIVATE KEY"),
        "{not_encrypted}"
    );
    let e = TlsConfig::default()
        .with_client_identity_files(&cert_file, &cert_file.with_extension("gone"))
        .unwrap_err();
    assert!(e.to_string().contains("client key"), "{e}");

    // CRL (TL-2 crlPath): a revoked server certificate is rejected only with the list.
    let (revoked_cert, revoked_key) = leaf(&pki.ca_cert, &pki.ca_key, &["localhost"], 77);
    let (port, seen) = tls_center_with(server_config(&revoked_cert, &revoked_key, None));
    let crl = rcgen::CertificateRevocationListParams {
        this_update: rcgen::date_time_ymd(2024, 1, 1),
        next_update: rcgen::date_time_ymd(2099, 1, 1),
        crl_number: rcgen::SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: vec![rcgen::RevokedCertParams {
            serial_number: rcgen::SerialNumber::from(77u64),
            revocation_time: rcgen::date_time_ymd(2024, 1, 1),
            reason_code: Some(rcgen::RevocationReason::KeyCompromise),
            invalidity_date: None,
        }],
        key_identifier_method: rcgen::KeyIdMethod::Sha256,
    }
    .signed_by(&pki.ca_cert, &pki.ca_key)
    .unwrap();
    let crl_file = temp_file("ca.crl.pem", &crl.pem().unwrap());
    assert!(
        fetch(port, trusting()).is_ok(),
        "without the list it is accepted"
    );
    let e = fetch(port, trusting().with_crl_file(&crl_file).unwrap()).unwrap_err();
    assert_eq!(e.transport_kind(), Some(TransportErrorKind::Tls), "{e:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "only the fetch without the list arrived"
    );
    // A certificate that is not on the list still passes.
    let (ok_port, _) = tls_center(&pki);
    assert!(fetch(ok_port, trusting().with_crl_file(&crl_file).unwrap()).is_ok());
    // A list with the insecure mode is refused, like any policy that cannot be honoured.
    let e = fetch(
        port,
        trusting().with_crl_file(&crl_file).unwrap().insecure(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, DiscoveryError::Setup(EngineError::Tls(m)) if m.contains("insecure")),
        "{e:?}"
    );
}

// ------------------------------------------------------------------------------------------
// Planted secrets (issue #8): headers, bodies, login requests and responses, credential files
// ------------------------------------------------------------------------------------------

pub fn planted_secrets_in_logins_and_credential_files_never_reach_the_logs<T: TestRuntime>() {
    use a2at_core::auth::{CredentialKey, encrypt_value};
    const PASSWORD: &str = "PLANTED-LOGIN-PASSWORD-8b1e";
    const USER_KEY: &str = "PLANTED-CUSTOM-FIELD-0a9f";
    const LOGIN_TOKEN: &str = "PLANTED-LOGIN-TOKEN-77c3";
    const HOOK_KEY: &str = "PLANTED-HOOK-KEY-5d2b";
    const BODY_SECRET: &str = "PLANTED-BODY-SECRET-e4a0";
    let key_hex = "5a".repeat(32);
    let key = CredentialKey::from_hex(&key_hex).unwrap();
    let login = fake_center(|req| {
        // The login really carries the decrypted values.
        assert!(
            req.body.contains(PASSWORD) && req.body.contains(USER_KEY),
            "{}",
            req.body
        );
        Reply::Json(
            200,
            json!({"result": {"jwt": LOGIN_TOKEN}, "accessSession": LOGIN_TOKEN}),
        )
    });
    let server = LoopbackServer::spawn(vec![ScriptedAgent::new("alpha")]);
    let creds = temp_file(
        "planted-creds.json",
        &json!({"alpha": {"bearer": {
            "login_url": format!("{}/login", login.url),
            "request_fields": {
                "username": "svc",
                "password": encrypt_value(PASSWORD, &key, [3u8; 12]),
                "user_key": encrypt_value(USER_KEY, &key, [4u8; 12])
            },
            "token_field": "result.jwt",
            "auth_header": "X-Session"
        }}})
        .to_string(),
    );
    let hook: a2at_driver::AuthHook =
        Arc::new(|_| Ok(vec![("X-Custom-Api-Key".into(), HOOK_KEY.into())]));
    let (result, logs) = capture(|| {
        let engine = Engine::<T>::builder(secured(&server))
            .credentials_file(&*creds)
            .credential_key(&key_hex)
            .auth_headers(hook)
            .build()
            .unwrap();
        let host = a2at_driver::ControlPointBuilder::new()
            .on_task(|r| async move {
                Ok(a2at_core::host::MessageContent::text(&r.instruction)
                    .with_metadata("auth", json!({"clientSecret": BODY_SECRET})))
            })
            .build();
        let wf = a2at_core::workflow::parse_and_validate(&workflow_json().to_string()).unwrap();
        let result =
            T::block_on(engine.execute(wf, a2at_core::run::RunStart::default(), Arc::new(host)));
        (result, format!("{engine:?}"))
    });
    let (result, engine_debug) = result;
    assert!(result.success, "{:?}", result.history[0].error);
    let sent = server.requests_to("alpha", "SendMessage");
    assert_eq!(
        sent[0].header("X-Session"),
        Some(LOGIN_TOKEN),
        "the login token is used"
    );
    assert!(
        logs.contains(">>> LOGIN POST"),
        "the login is logged:\n{logs}"
    );
    assert!(logs.contains("<<< LOGIN RESPONSE 200"), "{logs}");
    assert!(logs.contains(">>> REQUEST POST"), "{logs}");
    for secret in [
        PASSWORD,
        USER_KEY,
        LOGIN_TOKEN,
        HOOK_KEY,
        BODY_SECRET,
        key_hex.as_str(),
    ] {
        assert!(
            !logs.contains(secret),
            "{secret} leaked into the logs:\n{logs}"
        );
        assert!(!engine_debug.contains(secret), "{secret} leaked into Debug");
    }
}

// ------------------------------------------------------------------------------------------
// gRPC over TLS: ALPN h2 under the engine's one TLS policy
// ------------------------------------------------------------------------------------------

/// A loopback server behind TLS (certificate for `localhost` from the test CA) offering the
/// ALPN protocols `alpn`, with a streaming gRPC agent `alpha`.
fn tls_grpc_server(pki: &Pki, alpn: &[&[u8]]) -> LoopbackServer {
    let mut config = (*pki.server).clone();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    LoopbackServer::spawn_tls(
        vec![ScriptedAgent::new("alpha").grpc().streaming()],
        Arc::new(config),
    )
}

pub fn grpc_over_tls_negotiates_h2_under_the_same_tls_policy<T: TestRuntime>() {
    let pki = pki();
    let with_ca = TlsConfig {
        extra_ca_pem: Some(pki.ca_pem.clone().into_bytes()),
        ..TlsConfig::default()
    };
    let engine = |server: &LoopbackServer, tls: TlsConfig| {
        Engine::<T>::builder(server.cards())
            .tls(tls)
            .task_budget(Duration::from_secs(5))
            .retry(a2at_core::RetryPolicy::FAIL_FAST)
            .build()
            .unwrap()
    };

    // The CA the HTTP/1.1 client needs is needed here too: without it nothing is sent.
    let server = tls_grpc_server(&pki, &[b"h2", b"http/1.1"]);
    assert!(
        server.cards()[0].supported_interfaces[0]
            .url
            .starts_with("https://localhost:")
    );
    let r = run_alpha::<T>(&engine(&server, TlsConfig::default()));
    assert!(!r.success);
    let details = r.history[0]
        .error_details
        .clone()
        .unwrap_or_default()
        .to_string();
    assert!(details.contains("tls"), "{details}");
    assert_eq!(server.total_requests(), 0, "no request before verification");

    // With the CA: the handshake settles on h2 and every exchange is HTTP/2.
    let r = run_alpha::<T>(&engine(&server, with_ca.clone()));
    assert!(r.success, "{:?}", r.history);
    assert_eq!(r.step_outputs()["s"]["x"], vec![json!("done: x")]);
    assert!(server.total_requests() > 0);
    assert_eq!(server.http2_requests(), server.total_requests());
    assert!(server.requests("alpha").iter().all(|r| r.grpc));

    // A server that does not agree to h2 (here: no ALPN at all, as plain HTTP/1.1 TLS servers
    // often do) cannot carry gRPC: a TLS failure naming ALPN h2, nothing sent.
    let http1_only = tls_grpc_server(&pki, &[]);
    let r = run_alpha::<T>(&engine(&http1_only, with_ca));
    assert!(!r.success);
    let message = r.history[0].error.clone().unwrap_or_default();
    assert!(message.contains("ALPN h2"), "{message}");
    assert_eq!(http1_only.total_requests(), 0);
}
