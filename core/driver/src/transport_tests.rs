//! Exchange tests against hand-written HTTP servers on loopback: frames are delivered as they
//! arrive, auth headers are added, failures are typed, aborts close the connection, secrets
//! split across chunks stay masked in the protocol log.
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

use a2at_core::OpId;
use a2at_core::a2a::HttpMethod;
use a2at_core::io::{HttpRequest, Input, OpPurpose, TransportErrorKind};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::auth::Authenticator;
use crate::http::HttpClient;
use crate::pool::PoolConfig;
use crate::proxy::ProxyConfig;
use crate::test_runtime::TestTokio;
use crate::tls::TlsConfig;
use crate::transport::{AuthHook, Limits, Transport, show_hook_changes};

fn transport(auth: Option<AuthHook>) -> Transport<TestTokio> {
    Transport {
        client: HttpClient::new().expect("client"),
        limits: Limits::new(["a"].into_iter(), 4, 4),
        credentials: Authenticator::new(
            &a2at_core::agents::AgentDirectory::default(),
            None,
            auth.is_some(),
            std::time::Duration::from_secs(30),
        ),
        auth,
        log: a2at_core::protolog::LogConfig::default(),
    }
}

fn request(url: String) -> HttpRequest {
    HttpRequest {
        op: OpId(1),
        agent: "a".into(),
        purpose: OpPurpose::Send,
        method: HttpMethod::Post,
        url,
        headers: vec![("A2A-Version".into(), "1.0".into())],
        body: b"{}".to_vec(),
        streaming: true,
        http2: false,
        correlation: Default::default(),
    }
}

/// Reads one request head and body (`Content-Length`) off `stream`; returns the head text.
async fn read_request(stream: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.expect("request head");
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).expect("ascii head");
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await.expect("request body");
    head
}

fn chunk(data: &str) -> Vec<u8> {
    format!("{:x}\r\n{data}\r\n", data.len()).into_bytes()
}

#[tokio::test]
async fn body_frames_are_delivered_as_they_arrive_with_auth_headers_added() {
    let _turn = one_at_a_time().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rpc", listener.local_addr().unwrap());
    let (go_on, wait) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let head = read_request(&mut s).await;
        s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            .await
            .unwrap();
        s.write_all(&chunk("data: one\n\n")).await.unwrap();
        wait.await.unwrap();
        s.write_all(&chunk("data: two\n\n")).await.unwrap();
        s.write_all(b"0\r\n\r\n").await.unwrap();
        head
    });
    let hook: AuthHook = Arc::new(|_| Ok(vec![("authorization".into(), "Bearer t".into())]));
    let t = transport(Some(hook));
    let (tx, mut rx) = crate::completions::channel(16);
    let exchange = tokio::spawn(async move { t.exchange(request(url), tx).await });
    let Some(Input::ResponseHead {
        status: 200,
        headers,
        ..
    }) = rx.next().await
    else {
        panic!("head first");
    };
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "content-type" && v == "text/event-stream")
    );
    // The first event arrives while the server still holds back the second.
    assert_eq!(
        rx.next().await,
        Some(Input::ResponseBody {
            op: OpId(1),
            chunk: b"data: one\n\n".to_vec()
        })
    );
    go_on.send(()).unwrap();
    assert_eq!(
        rx.next().await,
        Some(Input::ResponseBody {
            op: OpId(1),
            chunk: b"data: two\n\n".to_vec()
        })
    );
    assert_eq!(rx.next().await, Some(Input::ResponseEnd { op: OpId(1) }));
    exchange.await.unwrap();
    let head = server.await.unwrap().to_ascii_lowercase();
    assert!(head.starts_with("post /rpc http/1.1"), "{head}");
    assert!(head.contains("a2a-version: 1.0") && head.contains("authorization: bearer t"));
}

/// A server answering with `head`, then `first` as one chunk; the rest, `second` and the
/// body's end, only once told to. Says when `first` is on the wire.
async fn answer_in_two_parts(
    head: &'static str,
    first: String,
    second: String,
) -> (String, oneshot::Receiver<()>, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rpc", listener.local_addr().unwrap());
    let (sent_first, first_sent) = oneshot::channel::<()>();
    let (go_on, wait) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        read_request(&mut s).await;
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(&chunk(&first)).await.unwrap();
        s.flush().await.unwrap();
        let _ = sent_first.send(());
        wait.await.unwrap();
        s.write_all(&chunk(&second)).await.unwrap();
        s.write_all(b"0\r\n\r\n").await.unwrap();
        // Held open until the client is done with it.
        let _ = s.read(&mut [0u8; 1]).await;
    });
    (url, first_sent, go_on)
}

const JSON_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";

/// The body pieces among `inputs`, joined.
fn body_of(inputs: &[Input]) -> Vec<u8> {
    inputs
        .iter()
        .filter_map(|i| match i {
            Input::ResponseBody { chunk, .. } => Some(chunk.as_slice()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .concat()
}

#[tokio::test]
async fn a_unary_answer_is_delivered_whole_at_its_end() {
    let _turn = one_at_a_time().await;
    let (url, first_sent, go_on) =
        answer_in_two_parts(JSON_HEAD, "{\"result\":".into(), "{}}".into()).await;
    let t = transport(None);
    let (tx, mut rx) = crate::completions::channel(16);
    let mut unary = request(url);
    unary.streaming = false;
    let exchange = tokio::spawn(async move { t.exchange(unary, tx).await });
    first_sent.await.unwrap();
    // The head and the first part have arrived; the exchange keeps them while the answer is
    // unfinished (a streaming exchange delivers them at once: the test above).
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(rx.try_recv(), None);
    go_on.send(()).unwrap();
    let mut inputs = Vec::new();
    while let Some(input) = rx.next().await {
        inputs.push(input);
    }
    exchange.await.unwrap();
    assert!(
        matches!(inputs[0], Input::ResponseHead { status: 200, .. }),
        "{inputs:?}"
    );
    assert_eq!(body_of(&inputs), b"{\"result\":{}}");
    assert_eq!(inputs.last(), Some(&Input::ResponseEnd { op: OpId(1) }));
    assert_eq!(
        inputs.len(),
        3,
        "head, the body in one piece, end: {inputs:?}"
    );
}

#[tokio::test]
async fn a_long_unary_answer_is_delivered_in_pieces_before_its_end() {
    let _turn = one_at_a_time().await;
    let first = "a".repeat(100 * 1024);
    let second = "b".repeat(10);
    let (url, _first_sent, go_on) =
        answer_in_two_parts(JSON_HEAD, first.clone(), second.clone()).await;
    let t = transport(None);
    let (tx, mut rx) = crate::completions::channel(16);
    let mut unary = request(url);
    unary.streaming = false;
    let exchange = tokio::spawn(async move { t.exchange(unary, tx).await });
    // While the server holds back the rest, the head and at least 64 KiB of the body arrive.
    let early = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        let mut early = vec![rx.next().await.expect("the head")];
        while body_of(&early).len() < 64 * 1024 {
            early.push(rx.next().await.expect("a piece of the body"));
        }
        early
    })
    .await
    .expect("the body's first 64 KiB delivered before its end");
    assert!(matches!(early[0], Input::ResponseHead { status: 200, .. }));
    assert!(
        early[1..]
            .iter()
            .all(|i| matches!(i, Input::ResponseBody { .. }))
    );
    go_on.send(()).unwrap();
    let mut rest = Vec::new();
    while let Some(input) = rx.next().await {
        rest.push(input);
    }
    exchange.await.unwrap();
    assert_eq!(rest.last(), Some(&Input::ResponseEnd { op: OpId(1) }));
    let whole = [body_of(&early), body_of(&rest)].concat();
    assert_eq!(whole, [first.as_bytes(), second.as_bytes()].concat());
}

#[tokio::test]
async fn an_auth_hook_failure_and_a_refused_connection_are_typed() {
    let _turn = one_at_a_time().await;
    let hook: AuthHook = Arc::new(|_| Err("no credentials for a".into()));
    let (tx, mut rx) = crate::completions::channel(4);
    transport(Some(hook))
        .exchange(request("http://127.0.0.1:9/x".into()), tx)
        .await;
    let Some(Input::TransportFailed { error, .. }) = rx.next().await else {
        panic!("failure expected");
    };
    assert_eq!(error.kind, TransportErrorKind::Auth);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (tx, mut rx) = crate::completions::channel(4);
    let t = transport(None);
    t.exchange(request(format!("http://127.0.0.1:{port}/x")), tx)
        .await;
    let Some(Input::TransportFailed { error, .. }) = rx.next().await else {
        panic!("failure expected");
    };
    assert_eq!(error.kind, TransportErrorKind::Connect);
    assert_eq!(t.client.requests_sent(), 1);
}

/// Taken by every test here. tracing caches each callsite's interest; a test that first hits
/// a transport callsite while another installs its capturing subscriber can leave that
/// callsite switched off for the capture (seen about once in 30 runs), so they take turns.
async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TURN.lock().await
}

/// Serves one response made of `head` then `chunks` (chunked encoding), then closes.
async fn chunked_server(head: &'static str, chunks: Vec<String>, end: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rpc", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        read_request(&mut s).await;
        s.write_all(head.as_bytes()).await.unwrap();
        for c in chunks {
            s.write_all(&chunk(&c)).await.unwrap();
            s.flush().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        if end {
            s.write_all(b"0\r\n\r\n").await.unwrap();
        }
    });
    url
}

/// Runs one exchange to its end with a capturing subscriber; returns the logs.
async fn logged_exchange(url: String, max_body_chars: usize) -> String {
    let sink = a2at_tests::capture::SharedBuffer::default();
    let _guard = tracing::subscriber::set_default(a2at_tests::capture::log_subscriber(&sink));
    let mut t = transport(None);
    t.log.max_body_chars = max_body_chars;
    let (tx, mut rx) = crate::completions::channel(64);
    t.exchange(request(url), tx).await;
    while let Some(input) = rx.next().await {
        if matches!(
            input,
            Input::ResponseEnd { .. } | Input::TransportFailed { .. }
        ) {
            break;
        }
    }
    sink.text()
}

#[tokio::test]
async fn a_secret_split_across_chunks_is_still_masked_in_the_log() {
    let _turn = one_at_a_time().await;
    let url = chunked_server(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        vec![
            r#"{"result": {"password":"#.to_owned(),
            r#" "SPLIT-SECRET-1", "note": "visible"}}"#.to_owned(),
        ],
        true,
    )
    .await;
    let logs = logged_exchange(url, 100_000).await;
    assert!(logs.contains("visible"), "{logs}");
    assert!(!logs.contains("SPLIT-SECRET-1"), "{logs}");
}

#[tokio::test]
async fn sse_events_are_logged_whole_oversized_ones_dropped_and_interruptions_labelled() {
    let _turn = one_at_a_time().await;
    // One event over the cap arriving whole, then one arriving in two chunks.
    let big = format!("data: {{\"blob\": \"{}\"}}\n\n", "x".repeat(3000));
    let big_head = format!("data: {{\"blob\": \"{}", "y".repeat(2000));
    let big_tail = format!("{}\"}}\n\n", "y".repeat(1000));
    let url = chunked_server(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        vec![
            "data: {\"token\"".to_owned(),
            ": \"SPLIT-SECRET-2\", \"kind\": \"first-event\"}\n\n".to_owned(),
            big,
            big_head,
            big_tail,
            "data: {\"kind\": \"after-the-big-one\"}\n\ndata: {\"kind\": \"cut".to_owned(),
        ],
        false,
    )
    .await;
    let logs = logged_exchange(url, 256).await;
    assert!(!logs.contains("SPLIT-SECRET-2"), "{logs}");
    assert!(logs.contains("first-event"), "{logs}");
    assert_eq!(logs.matches("body=dropped-capacity").count(), 2, "{logs}");
    assert!(
        !logs.contains("xxxxxxxxxx"),
        "the oversized event is not logged: {logs}"
    );
    assert!(!logs.contains("yyyyyyyyyy"), "nor the split one: {logs}");
    assert!(logs.contains("after-the-big-one"), "{logs}");
    assert!(logs.contains("stream=interrupted"), "{logs}");
}

#[tokio::test]
async fn aborting_an_exchange_drops_its_connection() {
    let _turn = one_at_a_time().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/stream", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        read_request(&mut s).await;
        s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            .await
            .unwrap();
        s.write_all(&chunk("data: x\n\n")).await.unwrap();
        // The client must close the connection; reading then ends with EOF (0 bytes).
        let mut rest = [0u8; 16];
        s.read(&mut rest).await.unwrap_or(0)
    });
    let t = transport(None);
    let (tx, mut rx) = crate::completions::channel(16);
    let exchange = tokio::spawn(async move { t.exchange(request(url), tx).await });
    assert!(matches!(rx.next().await, Some(Input::ResponseHead { .. })));
    assert!(matches!(rx.next().await, Some(Input::ResponseBody { .. })));
    exchange.abort();
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .expect("the connection was closed")
        .unwrap();
    assert_eq!(read, 0);
}

/// A keep-alive server counting the connections it accepted and those the client closed. It
/// answers a request only once `burst` requests wait at once, so a burst of that many
/// concurrent exchanges holds that many connections.
struct CountingServer {
    url: String,
    accepted: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl CountingServer {
    async fn start(burst: usize) -> CountingServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/rpc", listener.local_addr().unwrap());
        let (accepted, closed) = (Arc::default(), Arc::default());
        let (counted, ended): (Arc<AtomicUsize>, Arc<AtomicUsize>) =
            (Arc::clone(&accepted), Arc::clone(&closed));
        let barrier = Arc::new(tokio::sync::Barrier::new(burst));
        let task = tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                counted.fetch_add(1, SeqCst);
                let (ended, barrier) = (ended.clone(), barrier.clone());
                tokio::spawn(async move {
                    loop {
                        let mut first = [0u8; 1];
                        // The client closed the connection: it is done with it.
                        if s.peek(&mut first).await.unwrap_or(0) == 0 {
                            ended.fetch_add(1, SeqCst);
                            return;
                        }
                        read_request(&mut s).await;
                        barrier.wait().await;
                        let response = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                                        content-length: 2\r\n\r\n{}";
                        s.write_all(response.as_bytes()).await.unwrap();
                    }
                });
            }
        });
        CountingServer {
            url,
            accepted,
            closed,
            task,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(SeqCst)
    }

    /// Waits (up to 5 s) until the client has closed `n` connections.
    async fn until_closed(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while self.closed.load(SeqCst) < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the client closed {} connections, not {n}",
                self.closed.load(SeqCst)
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A transport with room for `slots` exchanges at once on a client pooling as `pool` says.
fn pooled_transport(pool: PoolConfig, slots: usize) -> Transport<TestTokio> {
    let client =
        HttpClient::with_tls_proxy_and_pool(&TlsConfig::default(), ProxyConfig::none(), pool)
            .expect("client");
    Transport {
        client,
        limits: Limits::new(["a"].into_iter(), slots, slots),
        ..transport(None)
    }
}

/// One exchange to `url`, read to its end.
async fn exchange_to_end(t: &Transport<TestTokio>, url: &str) {
    let (tx, rx) = crate::completions::channel(16);
    t.exchange(request(url.to_owned()), tx).await;
    let inputs: Vec<Input> = rx.collect().await;
    assert!(
        matches!(inputs.last(), Some(Input::ResponseEnd { .. })),
        "{inputs:?}"
    );
}

/// `n` exchanges to `url` at once, each read to its end.
async fn burst(t: &Transport<TestTokio>, url: &str, n: usize) {
    futures::future::join_all((0..n).map(|_| exchange_to_end(t, url))).await;
}

/// Exchanges to one origin made one after the other share one connection: each response read
/// to its end hands the connection back for the next request (HTTP/1.1 keep-alive).
#[tokio::test]
async fn exchanges_one_after_the_other_reuse_one_connection() {
    let _turn = one_at_a_time().await;
    let server = CountingServer::start(1).await;
    let t = transport(None);
    for _ in 1..=5u64 {
        exchange_to_end(&t, &server.url).await;
    }
    assert_eq!(t.client.requests_sent(), 5);
    assert_eq!(t.client.connections_opened(), 1);
    assert_eq!(server.accepted(), 1);
}

/// A burst of concurrent exchanges opens a connection for each; all of them wait idle for the
/// next burst, which opens none (the pool keeps more than the 32 it used to).
#[tokio::test]
async fn a_burst_keeps_every_connection_it_opened_for_the_next_burst() {
    let _turn = one_at_a_time().await;
    let server = CountingServer::start(40).await;
    let t = pooled_transport(PoolConfig::default().max_idle_per_origin(64), 64);
    burst(&t, &server.url, 40).await;
    burst(&t, &server.url, 40).await;
    assert_eq!(t.client.requests_sent(), 80);
    assert_eq!(t.client.connections_opened(), 40);
    assert_eq!(server.accepted(), 40);
}

/// The connections of a burst beyond the idle bound close when their responses end, and the
/// next burst opens them again; a bound of 0, or an idle timeout of zero, keeps no connection
/// at all.
#[tokio::test]
async fn connections_beyond_the_idle_bound_close_and_are_opened_again() {
    let _turn = one_at_a_time().await;
    let pool = PoolConfig::default();
    for (pool, width, closed_after_first, opened) in [
        (pool.max_idle_per_origin(8), 20, 12, 32),
        (pool.max_idle_per_origin(0), 4, 4, 8),
        (pool.idle_timeout(std::time::Duration::ZERO), 4, 4, 8),
    ] {
        let server = CountingServer::start(width).await;
        let t = pooled_transport(pool, 64);
        burst(&t, &server.url, width).await;
        server.until_closed(closed_after_first).await;
        burst(&t, &server.url, width).await;
        assert_eq!(t.client.connections_opened(), opened, "{pool:?}");
        assert_eq!(server.accepted() as u64, opened, "{pool:?}");
    }
}

/// A connection left idle past the idle timeout is closed by the client on its own, with no
/// further request to its origin; the next request opens a new one.
#[tokio::test]
async fn an_idle_connection_closes_after_the_idle_timeout() {
    let _turn = one_at_a_time().await;
    let server = CountingServer::start(1).await;
    let pool = PoolConfig::default().idle_timeout(std::time::Duration::from_millis(200));
    let t = pooled_transport(pool, 4);
    exchange_to_end(&t, &server.url).await;
    server.until_closed(1).await;
    exchange_to_end(&t, &server.url).await;
    assert_eq!(t.client.connections_opened(), 2);
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn https_is_tls_and_a_broken_handshake_is_a_tls_failure() {
    let _turn = one_at_a_time().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/x", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut hello = [0u8; 5];
        // A TLS ClientHello starts with a handshake record (0x16); answer in plain HTTP.
        s.read_exact(&mut hello).await.unwrap();
        assert_eq!(hello[0], 0x16);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
    });
    let (tx, mut rx) = crate::completions::channel(4);
    transport(None).exchange(request(url), tx).await;
    let Some(Input::TransportFailed { error, .. }) = rx.next().await else {
        panic!("failure expected");
    };
    assert_eq!(error.kind, TransportErrorKind::Tls, "{}", error.message);
}

/// The logged copy of a request follows what the request hook changed: its headers (the log
/// masks them by name later), removed headers, a rewritten URI, and a credential query stays
/// masked.
#[test]
fn the_logged_request_follows_the_request_hook() {
    let mut before = request("http://a.example/rpc?api_key=K".into());
    before.headers.push(("X-Auth".into(), "SECRET".into()));
    before.headers.push(("X-Drop".into(), "gone".into()));
    // The masked copy, as `mask_applied` leaves it.
    let mut shown = before.clone();
    shown.headers[1].1 = "***".into();
    shown.url = "http://a.example/rpc?api_key=***".into();
    let mut after =
        crate::http::build_request(http::Method::POST, &before.url, &before.headers, Vec::new())
            .unwrap();
    after.headers_mut().remove("x-drop");
    after
        .headers_mut()
        .insert("x-gateway", http::HeaderValue::from_static("blue"));
    after
        .headers_mut()
        .insert("a2a-version", http::HeaderValue::from_static("2.0"));
    *after.uri_mut() = "http://gw.example:8080/a/rpc?api_key=K".parse().unwrap();
    let mut logged = shown.clone();
    show_hook_changes(&mut logged, &before, &after, true);
    assert_eq!(logged.url, "http://gw.example:8080/a/rpc?api_key=***");
    let headers: Vec<(&str, &str)> = logged
        .headers
        .iter()
        .map(|(n, v)| (n.as_ref(), v.as_ref()))
        .collect();
    assert_eq!(
        headers,
        vec![
            ("a2a-version", "2.0"),
            ("X-Auth", "***"),
            ("x-gateway", "blue")
        ]
    );

    // A query the hook changed is masked whole when it carried a credential …
    *after.uri_mut() = "http://gw.example/rpc?api_key=K&tenant=t".parse().unwrap();
    let mut logged = shown.clone();
    show_hook_changes(&mut logged, &before, &after, true);
    assert_eq!(logged.url, "http://gw.example/rpc?***");
    // … and shown as rewritten otherwise.
    let mut logged = shown.clone();
    show_hook_changes(&mut logged, &before, &after, false);
    assert_eq!(logged.url, "http://gw.example/rpc?api_key=K&tenant=t");
}

/// An absolute URL goes out in origin form: its path and query on the request line, its
/// authority in `Host`; a URL without a path asks for `/`.
#[tokio::test]
async fn the_request_line_carries_the_path_and_query_and_host_the_authority() {
    let _turn = one_at_a_time().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let authority = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        let mut heads = Vec::new();
        for _ in 0..2 {
            let (mut s, _) = listener.accept().await.unwrap();
            heads.push(read_request(&mut s).await);
            let response = "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}";
            s.write_all(response.as_bytes()).await.unwrap();
        }
        heads
    });
    let t = transport(None);
    exchange_to_end(&t, &format!("http://{authority}/rpc/v1?tenant=a%20b&x=1")).await;
    exchange_to_end(&t, &format!("http://{authority}")).await;
    let heads = server.await.unwrap();
    let line = |head: &str| head.lines().next().unwrap_or_default().to_owned();
    assert_eq!(line(&heads[0]), "POST /rpc/v1?tenant=a%20b&x=1 HTTP/1.1");
    assert_eq!(line(&heads[1]), "POST / HTTP/1.1");
    for head in &heads {
        let host = head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("host: ")
                .map(str::to_owned)
        });
        assert_eq!(host.as_deref(), Some(authority.as_str()), "{head}");
    }
}

#[test]
fn request_headers_reach_the_wire_by_name_and_value_whatever_their_case() {
    let headers: Vec<(String, String)> = [
        ("A2A-Version", "1.0"),
        ("Accept", "text/event-stream"),
        ("Content-Type", "application/json"),
        (
            "traceparent",
            "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01",
        ),
        ("TraceState", "a=b"),
        ("tracestate", "c=d"),
        ("A2A-Extensions", "urn:x"),
        ("X-Gateway", "1.0"),
    ]
    .iter()
    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
    .collect();
    let request =
        crate::http::build_request(http::Method::POST, "http://a/b", &headers, Vec::new())
            .expect("valid request");
    let sent: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect();
    let expected: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .collect();
    assert_eq!(sent, expected);
    for (name, value) in [("bad name", "v"), ("x-ok", "bad\nvalue")] {
        let bad = vec![(name.to_owned(), value.to_owned())];
        assert!(
            crate::http::build_request(http::Method::GET, "http://a/", &bad, Vec::new()).is_err(),
            "{name:?}: {value:?} must be refused"
        );
    }
}

/// The request built from the header texts themselves carries what the one built from
/// borrowed texts carries, owned and borrowed values alike, and refuses the same bad ones.
#[test]
fn headers_moved_into_a_request_reach_it_as_borrowed_ones_do() {
    use a2at_core::io::HeaderText;
    let owned = |text: &str| HeaderText::Owned(text.to_owned());
    let headers: Vec<(HeaderText, HeaderText)> = vec![
        ("A2A-Version".into(), "1.0".into()),
        ("Content-Type".into(), "application/json".into()),
        (
            "traceparent".into(),
            owned("00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"),
        ),
        (owned("Authorization"), owned("Bearer t\u{e9}")),
        (owned("X-Gateway"), "blue".into()),
    ];
    let uri: http::Uri = "http://a/b".parse().unwrap();
    let fields = |request: &http::Request<_>| -> Vec<(String, Vec<u8>)> {
        request
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect()
    };
    let borrowed =
        crate::http::build_request_to(http::Method::POST, uri.clone(), &headers, b"{}".to_vec())
            .expect("valid request");
    let moved =
        crate::http::build_request_owning(http::Method::POST, uri.clone(), headers, b"{}".to_vec())
            .expect("valid request");
    assert_eq!(fields(&moved), fields(&borrowed));
    assert_eq!(fields(&moved).len(), 5);
    assert_eq!(moved.uri(), borrowed.uri());
    for value in [owned("bad\nvalue"), owned("bad\u{7f}"), "bad\rvalue".into()] {
        let shown = format!("{value:?}");
        let bad = vec![(HeaderText::from("x-ok"), value)];
        assert!(
            crate::http::build_request_owning(http::Method::GET, uri.clone(), bad, Vec::new())
                .is_err(),
            "{shown} must be refused"
        );
    }
}

#[test]
fn response_header_fields_keep_every_text_and_borrow_the_common_ones() {
    use std::borrow::Cow;
    let mut headers = http::HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    headers.insert("content-length", "117".parse().unwrap());
    headers.insert("x-trace-note", "Mixed Case".parse().unwrap());
    headers.insert(
        "x-raw",
        http::HeaderValue::from_bytes(b"caf\xe9 ok").unwrap(),
    );
    let fields = crate::http::header_pairs(&headers);
    let texts: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (&**n, &**v)).collect();
    assert_eq!(
        texts,
        [
            ("content-type", "application/json"),
            ("content-length", "117"),
            ("x-trace-note", "Mixed Case"),
            ("x-raw", "caf\u{fffd} ok"),
        ]
    );
    let borrowed = |c: &Cow<'static, str>| matches!(c, Cow::Borrowed(_));
    let kinds: Vec<(bool, bool)> = fields
        .iter()
        .map(|(n, v)| (borrowed(n), borrowed(v)))
        .collect();
    assert_eq!(
        kinds,
        [(true, true), (true, false), (false, false), (false, false)],
        "names and values every response repeats are not copied"
    );
}

/// An exchange's future, which the run loop boxes when it spawns it, stays under 1 KB with
/// its span: a larger block comes from glibc's large-chunk path, which first merges every
/// small free chunk, at every exchange when many are in flight. It grows past that when the
/// request is held twice while it is sent, or the send's result or the response head is kept
/// while the body is read.
#[test]
fn an_exchange_future_with_its_span_stays_under_a_kilobyte() {
    let t = Arc::new(transport(None));
    let (tx, _rx) = crate::completions::channel(16);
    let exchange = Transport::exchange_in(
        t,
        request("http://127.0.0.1:1/".to_owned()),
        tx,
        tracing::Span::none(),
        None,
    );
    let size = std::mem::size_of_val(&exchange);
    assert!(size <= 1000, "an exchange's future is {size} bytes");
}
