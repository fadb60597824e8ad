//! Scripted agents served over real HTTP on 127.0.0.1, for runtime tests.
//!
//! One server holds any number of [`ScriptedAgent`]s; each agent lives under its own path prefix
//! (`http://127.0.0.1:<port>/<name>`), and [`LoopbackServer::cards`] returns cards whose
//! interface URLs point there. Every request is decoded into an [`AgentRequest`], answered by the
//! agent's script, and the [`AgentReply`] is played back with its delays: the head after
//! `delay`, then each chunk as its own HTTP body frame `chunk_gap` apart. The server also records
//! every request and the highest number of exchanges in flight per agent.
//!
//! The server runs on its own threads with smol's executor, so it serves runtime tests of any
//! runtime (tokio, smol) and never needs the caller's runtime. A connection that opens with the
//! HTTP/2 preface (gRPC agents, prior knowledge) is served as HTTP/2, any other as HTTP/1.1;
//! gRPC replies end with their trailers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use a2at_core::OpId;
use a2at_core::a2a::{AgentCard, HttpMethod};
use a2at_core::io::{HttpRequest, OpPurpose};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use smol::Executor;
use smol::net::TcpListener;
use smol_hyper::rt::FuturesIo;

use crate::agent::{AgentReply, AgentRequest, ScriptedAgent};

type ReplyBody = StreamBody<futures_stream::Body>;

/// Threads serving the executor of one server.
const SERVER_THREADS: usize = 2;

#[derive(Default)]
struct State {
    agents: BTreeMap<String, ScriptedAgent>,
    requests: BTreeMap<String, Vec<AgentRequest>>,
    in_flight: BTreeMap<String, usize>,
    max_in_flight: BTreeMap<String, usize>,
    in_flight_total: usize,
    max_in_flight_total: usize,
    total: u64,
    http2: u64,
}

/// Counts one exchange in flight for an agent until dropped.
struct InFlight {
    state: Arc<Mutex<State>>,
    agent: String,
}

impl InFlight {
    fn enter(state: &Arc<Mutex<State>>, agent: &str) -> InFlight {
        let mut s = lock(state);
        let n = s.in_flight.entry(agent.to_owned()).or_default();
        *n += 1;
        let now = *n;
        let max = s.max_in_flight.entry(agent.to_owned()).or_default();
        *max = (*max).max(now);
        s.in_flight_total += 1;
        s.max_in_flight_total = s.max_in_flight_total.max(s.in_flight_total);
        InFlight {
            state: state.clone(),
            agent: agent.to_owned(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = lock(&self.state);
        s.in_flight_total = s.in_flight_total.saturating_sub(1);
        if let Some(n) = s.in_flight.get_mut(&self.agent) {
            *n = n.saturating_sub(1);
        }
    }
}

fn lock(state: &Arc<Mutex<State>>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A loopback HTTP server playing scripted agents. The server stops when dropped.
pub struct LoopbackServer {
    addr: SocketAddr,
    base_url: String,
    state: Arc<Mutex<State>>,
    /// Closing it stops the server threads (and drops every task of the executor).
    _stop: smol::channel::Sender<()>,
}

impl LoopbackServer {
    /// Binds 127.0.0.1 on a free port and serves `agents` from background threads. Needs no
    /// runtime; it is `async` so runtime tests can await it.
    pub async fn start(agents: Vec<ScriptedAgent>) -> LoopbackServer {
        LoopbackServer::spawn(agents)
    }

    /// [`LoopbackServer::start`] without `async`.
    pub fn spawn(agents: Vec<ScriptedAgent>) -> LoopbackServer {
        LoopbackServer::spawn_with(agents, None)
    }

    /// A server behind TLS with `config` (its certificate must be valid for `localhost`): the
    /// cards point at `https://localhost:<port>`, and a connection whose ALPN settled on `h2`
    /// is served as HTTP/2, any other as HTTP/1.1.
    pub fn spawn_tls(
        agents: Vec<ScriptedAgent>,
        config: Arc<rustls::ServerConfig>,
    ) -> LoopbackServer {
        LoopbackServer::spawn_with(agents, Some(futures_rustls::TlsAcceptor::from(config)))
    }

    fn spawn_with(
        agents: Vec<ScriptedAgent>,
        tls: Option<futures_rustls::TlsAcceptor>,
    ) -> LoopbackServer {
        let base_url = |addr: SocketAddr| match tls {
            Some(_) => format!("https://localhost:{}", addr.port()),
            None => format!("http://{addr}"),
        };
        let listener = deep_listener();
        let addr = listener.local_addr().expect("local address");
        let base_url = base_url(addr);
        let state = Arc::new(Mutex::new(State {
            agents: agents.into_iter().map(|a| (a.name.clone(), a)).collect(),
            ..State::default()
        }));
        let executor = Arc::new(Executor::new());
        let accept_state = state.clone();
        let ex = executor.clone();
        executor
            .spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let state = accept_state.clone();
                    let spawner = ex.clone();
                    let tls = tls.clone();
                    ex.spawn(async move {
                        match tls {
                            None => {
                                let http2 = starts_with_http2_preface(&stream).await;
                                serve_connection(stream, http2, state, spawner, addr).await;
                            }
                            Some(acceptor) => {
                                let Ok(stream) = acceptor.accept(stream).await else {
                                    return;
                                };
                                let http2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                                serve_connection(stream, http2, state, spawner, addr).await;
                            }
                        }
                    })
                    .detach();
                }
            })
            .detach();
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        for i in 0..SERVER_THREADS {
            let ex = executor.clone();
            let stopped = stopped.clone();
            std::thread::Builder::new()
                .name(format!("loopback-{i}"))
                .spawn(move || smol::block_on(ex.run(stopped.recv())))
                .expect("server thread");
        }
        LoopbackServer {
            addr,
            base_url,
            state,
            _stop: stop,
        }
    }

    /// `http://127.0.0.1:<port>` (`https://localhost:<port>` behind TLS).
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The cards of every served agent, with interfaces pointing at this server.
    pub fn cards(&self) -> Vec<AgentCard> {
        self.cards_at(&self.base_url())
    }

    /// The cards of every served agent with interfaces under `base` (`http://host:port`), e.g.
    /// a proxy in front of this server.
    pub fn cards_at(&self, base: &str) -> Vec<AgentCard> {
        lock(&self.state)
            .agents
            .values()
            .map(|a| {
                AgentCard::from_json_value(&a.card_at(&format!("{base}/{}", a.name)))
                    .expect("scripted card parses")
            })
            .collect()
    }

    /// Every request `agent` received, in arrival order.
    pub fn requests(&self, agent: &str) -> Vec<AgentRequest> {
        lock(&self.state)
            .requests
            .get(agent)
            .cloned()
            .unwrap_or_default()
    }

    /// Requests `agent` received with the given A2A method (e.g. `CancelTask`).
    pub fn requests_to(&self, agent: &str, method: &str) -> Vec<AgentRequest> {
        self.requests(agent)
            .into_iter()
            .filter(|r| r.method == method)
            .collect()
    }

    /// Requests received by all agents together.
    pub fn total_requests(&self) -> u64 {
        lock(&self.state).total
    }

    /// Requests received over HTTP/2, all agents together.
    pub fn http2_requests(&self) -> u64 {
        lock(&self.state).http2
    }

    /// The highest number of exchanges that were in flight at once for `agent`.
    pub fn max_in_flight(&self, agent: &str) -> usize {
        lock(&self.state)
            .max_in_flight
            .get(agent)
            .copied()
            .unwrap_or(0)
    }

    /// The highest number of exchanges that were in flight at once, all agents together.
    pub fn max_in_flight_total(&self) -> usize {
        lock(&self.state).max_in_flight_total
    }

    /// A snapshot of `agent` (its task table and the tasks it was asked to cancel).
    pub fn agent(&self, agent: &str) -> ScriptedAgent {
        lock(&self.state)
            .agents
            .get(agent)
            .cloned()
            .expect("agent is served")
    }
}

/// hyper's HTTP/2 server tasks on the server's own executor.
#[derive(Clone)]
struct SmolExecutor(Arc<Executor<'static>>);

impl<F: std::future::Future<Output = ()> + Send + 'static> hyper::rt::Executor<F> for SmolExecutor {
    fn execute(&self, future: F) {
        self.0.spawn(future).detach();
    }
}

/// Serves one connection as HTTP/2 or HTTP/1.1.
async fn serve_connection<IO>(
    io: IO,
    http2: bool,
    state: Arc<Mutex<State>>,
    executor: Arc<Executor<'static>>,
    addr: SocketAddr,
) where
    IO: futures::io::AsyncRead + futures::io::AsyncWrite + Unpin + Send + 'static,
{
    let runner = executor.clone();
    let service = service_fn(move |req| serve(state.clone(), executor.clone(), addr, req));
    if http2 {
        let _ = hyper::server::conn::http2::Builder::new(SmolExecutor(runner))
            .serve_connection(FuturesIo::new(io), service)
            .await;
    } else {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(FuturesIo::new(io), service)
            .await;
    }
}

/// Whether the client opened with the HTTP/2 connection preface (`PRI * HTTP/2.0`).
async fn starts_with_http2_preface(stream: &smol::net::TcpStream) -> bool {
    let mut buf = [0u8; 3];
    loop {
        match stream.peek(&mut buf).await {
            Ok(n) if n >= 3 => return &buf == b"PRI",
            Ok(0) | Err(_) => return false,
            Ok(_) => smol::Timer::after(std::time::Duration::from_millis(1)).await,
        };
    }
}

async fn serve(
    state: Arc<Mutex<State>>,
    executor: Arc<Executor<'static>>,
    addr: SocketAddr,
    req: Request<Incoming>,
) -> Result<Response<ReplyBody>, std::io::Error> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let agent = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("")
        .to_owned();
    let http2 = req.version() == hyper::Version::HTTP_2;
    let method = if req.method() == hyper::Method::GET {
        HttpMethod::Get
    } else {
        HttpMethod::Post
    };
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .map_err(std::io::Error::other)?;
    let guard = InFlight::enter(&state, &agent);
    let reply = {
        let mut s = lock(&state);
        s.total += 1;
        s.http2 += u64::from(http2);
        let http = HttpRequest {
            op: OpId(s.total),
            agent: agent.clone().into(),
            purpose: OpPurpose::Send,
            method,
            url: format!("http://{addr}{path}"),
            headers: headers
                .into_iter()
                .map(|(n, v)| (n.into(), v.into()))
                .collect(),
            body,
            streaming: false,
            http2: false,
            correlation: Default::default(),
        };
        let decoded = AgentRequest::decode(&http);
        s.requests
            .entry(agent.clone())
            .or_default()
            .push(decoded.clone());
        match s.agents.get_mut(&agent) {
            Some(a) => a.handle(&decoded),
            None => AgentReply::Http {
                delay: std::time::Duration::ZERO,
                status: 404,
                headers: vec![],
                chunks: vec![],
                chunk_gap: std::time::Duration::ZERO,
                end: true,
            },
        }
    };
    match reply {
        AgentReply::Hang => {
            let _guard = guard;
            std::future::pending::<()>().await;
            unreachable!("pending never resolves")
        }
        AgentReply::TransportError { delay, .. } => {
            smol::Timer::after(delay).await;
            drop(guard);
            // An error from the service makes hyper drop the connection without a response.
            Err(std::io::Error::other("scripted transport failure"))
        }
        AgentReply::Http {
            delay,
            status,
            headers,
            chunks,
            chunk_gap,
            end,
        } => {
            smol::Timer::after(delay).await;
            let (tx, rx) = smol::channel::bounded::<Result<Frame<Bytes>, std::io::Error>>(4);
            // A body that never ends keeps a sender and the in-flight count until hyper drops
            // it (the client closed the connection).
            let (body_guard, player_guard) = if end {
                (None, Some(guard))
            } else {
                (Some(guard), None)
            };
            let body = futures_stream::Body {
                rx: Box::pin(rx),
                _keep: (!end).then(|| tx.clone()),
                _in_flight: body_guard,
            };
            executor
                .spawn(async move {
                    for (i, chunk) in chunks.into_iter().enumerate() {
                        if i > 0 {
                            smol::Timer::after(chunk_gap).await;
                        }
                        if tx.send(Ok(Frame::data(Bytes::from(chunk)))).await.is_err() {
                            return;
                        }
                    }
                    // Leave the in-flight count before the client can see the end of the body.
                    drop(player_guard);
                    drop(tx);
                })
                .detach();
            let mut builder = Response::builder().status(status);
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            Ok(builder
                .body(StreamBody::new(body))
                .expect("valid scripted response"))
        }
        AgentReply::Grpc {
            delay,
            headers,
            frames,
            frame_gap,
            trailers,
        } => {
            smol::Timer::after(delay).await;
            let (tx, rx) = smol::channel::bounded::<Result<Frame<Bytes>, std::io::Error>>(4);
            let end = trailers.is_some();
            let (body_guard, player_guard) = if end {
                (None, Some(guard))
            } else {
                (Some(guard), None)
            };
            let body = futures_stream::Body {
                rx: Box::pin(rx),
                _keep: (!end).then(|| tx.clone()),
                _in_flight: body_guard,
            };
            executor
                .spawn(async move {
                    for (i, frame) in frames.into_iter().enumerate() {
                        if i > 0 {
                            smol::Timer::after(frame_gap).await;
                        }
                        if tx.send(Ok(Frame::data(Bytes::from(frame)))).await.is_err() {
                            return;
                        }
                    }
                    if let Some(trailers) = trailers.filter(|t| !t.is_empty()) {
                        let mut map = hyper::HeaderMap::new();
                        for (name, value) in trailers {
                            map.append(
                                hyper::header::HeaderName::try_from(name).expect("trailer name"),
                                hyper::header::HeaderValue::try_from(value).expect("trailer value"),
                            );
                        }
                        if tx.send(Ok(Frame::trailers(map))).await.is_err() {
                            return;
                        }
                    }
                    drop(player_guard);
                    drop(tx);
                })
                .detach();
            let mut builder = Response::builder().status(200);
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            Ok(builder
                .body(StreamBody::new(body))
                .expect("valid scripted response"))
        }
        AgentReply::Cut {
            delay,
            headers,
            chunks,
            chunk_gap,
        } => {
            smol::Timer::after(delay).await;
            let (tx, rx) = smol::channel::bounded::<Result<Frame<Bytes>, std::io::Error>>(4);
            let body = futures_stream::Body {
                rx: Box::pin(rx),
                _keep: None,
                _in_flight: None,
            };
            executor
                .spawn(async move {
                    for chunk in chunks {
                        if tx.send(Ok(Frame::data(Bytes::from(chunk)))).await.is_err() {
                            return;
                        }
                        smol::Timer::after(chunk_gap).await;
                    }
                    // Cut only after hyper took every chunk and, with the body pending, wrote
                    // it out: a queued error would make it drop unwritten chunks, and a loaded
                    // machine would then cut at a different place than the script says.
                    while !tx.is_empty() {
                        smol::Timer::after(std::time::Duration::from_millis(1)).await;
                    }
                    smol::Timer::after(std::time::Duration::from_millis(20)).await;
                    drop(guard);
                    // A body error makes hyper abort the connection without ending the body.
                    let _ = tx
                        .send(Err(std::io::Error::other("scripted connection cut")))
                        .await;
                })
                .detach();
            let mut builder = Response::builder().status(200);
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            Ok(builder
                .body(StreamBody::new(body))
                .expect("valid scripted response"))
        }
    }
}

/// A minimal `Stream` of body frames, so the crate needs no extra stream library.
mod futures_stream {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use hyper::body::Frame;

    type Item = Result<Frame<Bytes>, std::io::Error>;

    /// Body frames from the chunk player.
    pub struct Body {
        pub rx: Pin<Box<smol::channel::Receiver<Item>>>,
        pub _keep: Option<smol::channel::Sender<Item>>,
        pub _in_flight: Option<super::InFlight>,
    }

    impl futures_core::Stream for Body {
        type Item = Item;

        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
            self.rx.as_mut().poll_next(cx)
        }
    }
}

/// A listener on a free loopback port whose accept queue holds 4,096 connections. `bind` asks
/// for 128, and a burst of new connections beyond it (hundreds of runs, each opening its own
/// connection at once) has SYNs dropped, which the client repeats only after a second: the
/// bench would time a one-second stall of the agents' listener, not the client.
fn deep_listener() -> TcpListener {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .expect("a TCP socket");
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("loopback address");
    socket.bind(&addr.into()).expect("bind 127.0.0.1");
    socket.listen(4096).expect("listen");
    TcpListener::try_from(std::net::TcpListener::from(socket)).expect("a non-blocking listener")
}
