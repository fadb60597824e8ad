//! End-to-end benchmark on the smol runtime (issue #11): the engine against a minimal direct
//! client on loopback. Run with `cargo bench -p a2at-smol --bench e2e`; it prints markdown
//! tables and never asserts a timing. The body is `a2at_tests::e2e`, shared with `a2at-tokio`.

use std::future::Future;
use std::sync::{Arc, Mutex};

use a2at_tests::e2e::{BenchRuntime, DirectClient};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{SendRequest, handshake};
use smol::net::TcpStream;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// Counts every allocation of the process (the agents live in the child process), so live heap
/// and allocations per run can be read. `stats_alloc` holds the `unsafe impl GlobalAlloc`; this
/// bench has no unsafe code of its own. The counters are atomics: they cost both the engine and
/// the direct client a little on every allocation.
#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

struct OnSmol;

impl BenchRuntime for OnSmol {
    type Rt = a2at_smol::Smol;
    type Client = Direct;
    const LABEL: &'static str = "smol (global executor, 1 thread)";

    fn block_on<F: Future>(future: F) -> F::Output {
        smol::block_on(future)
    }

    fn spawn<T: Send + 'static>(
        task: impl Future<Output = T> + Send + 'static,
    ) -> impl Future<Output = T> + Send {
        smol::spawn(task)
    }
}

/// The runtime's client stack without the engine: hyper's HTTP/1.1 client connections over smol
/// TCP (`TCP_NODELAY`) through the engine's own I/O adapter (`HyperIo`), with a pool that keeps
/// every idle connection, as hyper-util's pool (the tokio bench's direct client) does by
/// default and the engine's does under the bench's in-flight bound (one origin here: every
/// agent shares the loopback server).
#[derive(Clone, Default)]
struct Direct {
    idle: Arc<Mutex<Vec<SendRequest<Full<Bytes>>>>>,
    /// The one HTTP/2 connection for gRPC calls (streams are multiplexed on it).
    http2: Arc<async_lock::Mutex<Option<Http2Sender>>>,
}

type Http2Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

/// hyper's HTTP/2 background tasks on smol's global executor.
#[derive(Clone, Copy)]
struct SmolExecutor;

impl<F: Future<Output = ()> + Send + 'static> hyper::rt::Executor<F> for SmolExecutor {
    fn execute(&self, future: F) {
        smol::spawn(future).detach();
    }
}

impl DirectClient for Direct {
    fn new() -> Direct {
        Direct::default()
    }

    async fn post(&self, url: &str, body: String) -> usize {
        self.post_via_pool(url, body).await
    }

    async fn post_grpc(&self, url: &str, body: Vec<u8>) -> usize {
        let uri: http::Uri = url.parse().expect("URL");
        let mut sender = {
            let mut slot = self.http2.lock().await;
            match slot.as_ref().filter(|s| !s.is_closed()) {
                Some(sender) => sender.clone(),
                None => {
                    let authority = uri.authority().expect("host").as_str().to_owned();
                    let tcp = TcpStream::connect(authority).await.expect("connect");
                    tcp.set_nodelay(true).expect("TCP_NODELAY");
                    let (sender, connection) = hyper::client::conn::http2::handshake(
                        SmolExecutor,
                        a2at_smol::HyperIo::new(tcp),
                    )
                    .await
                    .expect("HTTP/2 handshake");
                    smol::spawn(async move {
                        let _ = connection.await;
                    })
                    .detach();
                    *slot = Some(sender.clone());
                    sender
                }
            }
        };
        let mut request = http::Request::post(uri);
        for (name, value) in a2at_tests::e2e::GRPC_HEADERS {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .expect("valid request");
        let response = sender.send_request(request).await.expect("direct request");
        assert!(response.status().is_success(), "{}", response.status());
        let body = response.into_body().collect().await.expect("response body");
        let ok = body
            .trailers()
            .and_then(|t| t.get("grpc-status"))
            .is_some_and(|s| s == "0");
        assert!(ok, "the gRPC call did not end with status OK");
        body.to_bytes().len()
    }
}

impl Direct {
    fn checkout(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().expect("pool");
        while let Some(sender) = idle.pop() {
            if sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// Gives a connection whose response was read to the end back to the pool: at once when
    /// it is ready for another request (nearly always by then), else from a task that waits,
    /// as the engine does.
    fn checkin(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_ready() {
            self.idle.lock().expect("pool").push(sender);
        } else {
            self.checkin_when_idle(sender);
        }
    }

    fn checkin_when_idle(&self, mut sender: SendRequest<Full<Bytes>>) {
        let idle = self.idle.clone();
        smol::spawn(async move {
            if sender.ready().await.is_ok() {
                idle.lock().expect("pool").push(sender);
            }
        })
        .detach();
    }

    async fn connect(authority: &str) -> SendRequest<Full<Bytes>> {
        let tcp = TcpStream::connect(authority).await.expect("connect");
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let (sender, connection) = handshake(a2at_smol::HyperIo::new(tcp))
            .await
            .expect("handshake");
        smol::spawn(async move {
            let _ = connection.await;
        })
        .detach();
        sender
    }

    /// POSTs a JSON-RPC body with the engine's headers and reads the whole response.
    async fn post_via_pool(&self, url: &str, body: String) -> usize {
        let uri: http::Uri = url.parse().expect("URL");
        let authority = uri.authority().expect("host").as_str().to_owned();
        let body = Bytes::from(body);
        loop {
            let (mut sender, pooled) = match self.checkout() {
                Some(sender) => (sender, true),
                None => (Direct::connect(&authority).await, false),
            };
            let request = http::Request::post(uri.path())
                .header("Host", &authority)
                .header("A2A-Version", "1.0")
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .body(Full::new(body.clone()))
                .expect("valid request");
            match sender.try_send_request(request).await {
                Ok(response) => {
                    assert!(response.status().is_success(), "{}", response.status());
                    let body = response.into_body().collect().await.expect("response body");
                    self.checkin(sender);
                    return body.to_bytes().len();
                }
                Err(e) if pooled && e.message().is_some() => continue,
                Err(e) => panic!("direct request: {}", e.error()),
            }
        }
    }
}

fn main() {
    a2at_tests::e2e::main::<OnSmol>(|| INSTRUMENTED_SYSTEM.stats());
}
