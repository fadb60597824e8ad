//! End-to-end benchmark on the smol runtime (issue #11): the engine against a minimal direct
//! client on loopback. Run with `cargo bench -p a2at-smol --bench e2e`; it prints markdown
//! tables and never asserts a timing. The body is shared with `a2at-tokio`
//! (`runtime-tokio/benches/shared/e2e_suite.rs`).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2at_smol as rt;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{SendRequest, handshake};
use smol::net::TcpStream;
use smol_hyper::rt::FuturesIo;

#[path = "../../runtime-tokio/benches/shared/e2e_suite.rs"]
mod suite;

/// The runtime's name in the tables.
const RUNTIME: &str = "smol (global executor, 1 thread)";

fn block_on<F: Future>(future: F) -> F::Output {
    smol::block_on(future)
}

fn spawn<T: Send + 'static>(
    task: impl Future<Output = T> + Send + 'static,
) -> impl Future<Output = T> + Send {
    smol::spawn(task)
}

async fn sleep(d: Duration) {
    smol::Timer::after(d).await;
}

/// Idle connections kept, as the runtime's pool does per origin.
const MAX_IDLE: usize = 32;

/// The runtime's client stack without the engine: hyper's HTTP/1.1 client connections over smol
/// TCP (`TCP_NODELAY`) through `smol-hyper`, with a pool of idle connections like the runtime's
/// (one origin here: every agent shares the loopback server).
#[derive(Clone, Default)]
struct DirectClient {
    idle: Arc<Mutex<Vec<SendRequest<Full<Bytes>>>>>,
}

impl DirectClient {
    fn new() -> DirectClient {
        DirectClient::default()
    }

    fn checkout(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().expect("pool");
        while let Some(sender) = idle.pop() {
            if sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    fn checkin_when_idle(&self, mut sender: SendRequest<Full<Bytes>>) {
        let idle = self.idle.clone();
        smol::spawn(async move {
            if sender.ready().await.is_ok() {
                let mut idle = idle.lock().expect("pool");
                if idle.len() < MAX_IDLE {
                    idle.push(sender);
                }
            }
        })
        .detach();
    }

    async fn connect(authority: &str) -> SendRequest<Full<Bytes>> {
        let tcp = TcpStream::connect(authority).await.expect("connect");
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let (sender, connection) = handshake(FuturesIo::new(tcp)).await.expect("handshake");
        smol::spawn(async move {
            let _ = connection.await;
        })
        .detach();
        sender
    }

    /// POSTs a JSON-RPC body with the engine's headers and reads the whole response.
    async fn post(&self, url: &str, body: String) -> usize {
        let uri: http::Uri = url.parse().expect("URL");
        let authority = uri.authority().expect("host").as_str().to_owned();
        let body = Bytes::from(body);
        loop {
            let (mut sender, pooled) = match self.checkout() {
                Some(sender) => (sender, true),
                None => (DirectClient::connect(&authority).await, false),
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
                    self.checkin_when_idle(sender);
                    assert!(response.status().is_success(), "{}", response.status());
                    let body = response.into_body().collect().await.expect("response body");
                    return body.to_bytes().len();
                }
                Err(e) if pooled && e.message().is_some() => continue,
                Err(e) => panic!("direct request: {}", e.error()),
            }
        }
    }
}

fn main() {
    suite::main();
}
