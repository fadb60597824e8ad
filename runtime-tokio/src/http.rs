//! The HTTP side of the driver: one pooled hyper client and the exchange task that turns an
//! [`HttpRequest`] into response inputs.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use a2at_core::a2a::HttpMethod;
use a2at_core::io::{HttpRequest, Input, TransportError, TransportErrorKind};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::engine::EngineError;

/// Produces extra request headers (authentication) for one exchange, or a message saying why it
/// cannot; a failure is reported to the core as a [`TransportErrorKind::Auth`] failure.
///
/// This is the hook for the authentication issue; the engine calls it just before sending.
pub type AuthHook =
    Arc<dyn Fn(&HttpRequest) -> Result<Vec<(String, String)>, String> + Send + Sync>;

/// The pooled HTTP/1.1 client of an engine (http and https, TLS verified against the webpki
/// roots, `TCP_NODELAY` on). Cloning shares the pool and the request counter.
#[derive(Clone)]
pub struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    sent: Arc<AtomicU64>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("requests_sent", &self.requests_sent())
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A new client with its own connection pool.
    pub fn new() -> Result<HttpClient, EngineError> {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        let https = HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(Arc::new(rustls::crypto::ring::default_provider()))
            .map_err(|e| EngineError::Tls(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(HttpClient {
            client,
            sent: Arc::new(AtomicU64::new(0)),
        })
    }

    /// How many requests this client (and its clones) has handed to the connection pool.
    pub fn requests_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

/// The engine-wide concurrency limits: overall and per agent (TR-13).
#[derive(Debug)]
pub(crate) struct Limits {
    overall: Arc<Semaphore>,
    per_agent: HashMap<String, Arc<Semaphore>>,
}

impl Limits {
    pub(crate) fn new<'a>(
        agents: impl Iterator<Item = &'a str>,
        per_agent: usize,
        overall: usize,
    ) -> Limits {
        Limits {
            overall: Arc::new(Semaphore::new(overall)),
            per_agent: agents
                .map(|a| (a.to_owned(), Arc::new(Semaphore::new(per_agent))))
                .collect(),
        }
    }

    /// Waits for a slot for `agent`, then for an overall slot (in that order, so exchanges
    /// queued behind a busy agent never hold overall slots).
    async fn acquire(&self, agent: &str) -> Vec<OwnedSemaphorePermit> {
        let mut permits = Vec::with_capacity(2);
        if let Some(sem) = self.per_agent.get(agent) {
            if let Ok(p) = sem.clone().acquire_owned().await {
                permits.push(p);
            }
        }
        if let Ok(p) = self.overall.clone().acquire_owned().await {
            permits.push(p);
        }
        permits
    }
}

/// What an exchange task needs from the engine.
pub(crate) struct Transport {
    pub(crate) client: HttpClient,
    pub(crate) limits: Limits,
    pub(crate) auth: Option<AuthHook>,
}

impl Transport {
    /// Carries out one exchange, feeding head, body frames and end (or a failure) to `tx`.
    pub(crate) async fn exchange(&self, req: HttpRequest, tx: mpsc::Sender<Input>) {
        let op = req.op;
        let fail = |kind: TransportErrorKind, message: String| Input::TransportFailed {
            op,
            error: TransportError { kind, message },
        };
        let _permits = self.limits.acquire(&req.agent).await;
        let extra = match &self.auth {
            None => Vec::new(),
            Some(hook) => match hook(&req) {
                Ok(headers) => headers,
                Err(message) => {
                    let _ = tx.send(fail(TransportErrorKind::Auth, message)).await;
                    return;
                }
            },
        };
        let request = match build_request(req, extra) {
            Ok(r) => r,
            Err(message) => {
                let _ = tx.send(fail(TransportErrorKind::Other, message)).await;
                return;
            }
        };
        self.client.sent.fetch_add(1, Ordering::Relaxed);
        let response = match self.client.client.request(request).await {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(fail(classify(&e), describe(&e))).await;
                return;
            }
        };
        let (parts, mut body) = response.into_parts();
        let headers = parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let head = Input::ResponseHead {
            op,
            status: parts.status.as_u16(),
            headers,
        };
        if tx.send(head).await.is_err() {
            return;
        }
        loop {
            let input = match body.frame().await {
                None => Input::ResponseEnd { op },
                Some(Err(e)) => fail(TransportErrorKind::Io, describe(&e)),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if data.is_empty() => continue,
                    Ok(data) => Input::ResponseBody {
                        op,
                        chunk: data.to_vec(),
                    },
                    Err(_trailers) => continue,
                },
            };
            let last = !matches!(input, Input::ResponseBody { .. });
            if tx.send(input).await.is_err() || last {
                return;
            }
        }
    }
}

fn build_request(
    req: HttpRequest,
    extra: Vec<(String, String)>,
) -> Result<http::Request<Full<Bytes>>, String> {
    let method = match req.method {
        HttpMethod::Get => http::Method::GET,
        HttpMethod::Post => http::Method::POST,
    };
    let mut builder = http::Request::builder()
        .method(method)
        .uri(req.url.as_str());
    for (name, value) in req.headers.iter().chain(extra.iter()) {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder
        .body(Full::new(Bytes::from(req.body)))
        .map_err(|e| format!("cannot build the HTTP request: {e}"))
}

/// The broad class of a client error: TLS when a rustls error is anywhere in the chain.
fn classify(e: &hyper_util::client::legacy::Error) -> TransportErrorKind {
    if is_tls(e) {
        TransportErrorKind::Tls
    } else if e.is_connect() {
        TransportErrorKind::Connect
    } else {
        TransportErrorKind::Io
    }
}

/// Whether a rustls error is in the chain. `io::Error::source` skips the error it wraps, so
/// wrapped I/O errors are opened with `get_ref`.
fn is_tls(e: &(dyn StdError + 'static)) -> bool {
    if e.is::<rustls::Error>() {
        return true;
    }
    if let Some(inner) = e
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
    {
        if is_tls(inner) {
            return true;
        }
    }
    e.source().is_some_and(is_tls)
}

/// The error with its source chain, for logs (hyper errors carry no request data).
fn describe(e: &(dyn StdError + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2at_core::OpId;
    use a2at_core::io::{Correlation, OpPurpose};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::oneshot;

    fn transport(auth: Option<AuthHook>) -> Transport {
        Transport {
            client: HttpClient::new().expect("client"),
            limits: Limits::new(["a"].into_iter(), 4, 4),
            auth,
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
            correlation: Correlation::default(),
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
        let (tx, mut rx) = mpsc::channel(16);
        let exchange = tokio::spawn(async move { t.exchange(request(url), tx).await });
        let Some(Input::ResponseHead {
            status: 200,
            headers,
            ..
        }) = rx.recv().await
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
            rx.recv().await,
            Some(Input::ResponseBody {
                op: OpId(1),
                chunk: b"data: one\n\n".to_vec()
            })
        );
        go_on.send(()).unwrap();
        assert_eq!(
            rx.recv().await,
            Some(Input::ResponseBody {
                op: OpId(1),
                chunk: b"data: two\n\n".to_vec()
            })
        );
        assert_eq!(rx.recv().await, Some(Input::ResponseEnd { op: OpId(1) }));
        exchange.await.unwrap();
        let head = server.await.unwrap().to_ascii_lowercase();
        assert!(head.starts_with("post /rpc http/1.1"), "{head}");
        assert!(head.contains("a2a-version: 1.0") && head.contains("authorization: bearer t"));
    }

    #[tokio::test]
    async fn an_auth_hook_failure_and_a_refused_connection_are_typed() {
        let hook: AuthHook = Arc::new(|_| Err("no credentials for a".into()));
        let (tx, mut rx) = mpsc::channel(4);
        transport(Some(hook))
            .exchange(request("http://127.0.0.1:9/x".into()), tx)
            .await;
        let Some(Input::TransportFailed { error, .. }) = rx.recv().await else {
            panic!("failure expected");
        };
        assert_eq!(error.kind, TransportErrorKind::Auth);

        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (tx, mut rx) = mpsc::channel(4);
        let t = transport(None);
        t.exchange(request(format!("http://127.0.0.1:{port}/x")), tx)
            .await;
        let Some(Input::TransportFailed { error, .. }) = rx.recv().await else {
            panic!("failure expected");
        };
        assert_eq!(error.kind, TransportErrorKind::Connect);
        assert_eq!(t.client.requests_sent(), 1);
    }

    #[tokio::test]
    async fn aborting_an_exchange_drops_its_connection() {
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
        let (tx, mut rx) = mpsc::channel(16);
        let exchange = tokio::spawn(async move { t.exchange(request(url), tx).await });
        assert!(matches!(rx.recv().await, Some(Input::ResponseHead { .. })));
        assert!(matches!(rx.recv().await, Some(Input::ResponseBody { .. })));
        exchange.abort();
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), server)
            .await
            .expect("the connection was closed")
            .unwrap();
        assert_eq!(read, 0);
    }

    #[tokio::test]
    async fn https_is_tls_and_a_broken_handshake_is_a_tls_failure() {
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
        let (tx, mut rx) = mpsc::channel(4);
        transport(None).exchange(request(url), tx).await;
        let Some(Input::TransportFailed { error, .. }) = rx.recv().await else {
            panic!("failure expected");
        };
        assert_eq!(error.kind, TransportErrorKind::Tls, "{}", error.message);
    }
}
