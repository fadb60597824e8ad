//! End-to-end benchmark on the tokio runtime (issue #11): the engine against a minimal direct
//! client on loopback. Run with `cargo bench -p a2at-tokio --bench e2e`; it prints markdown
//! tables and never asserts a timing. The body is shared with `a2at-smol`
//! (`benches/shared/e2e_suite.rs`).

use std::future::Future;
use std::time::Duration;

use a2at_tokio as rt;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

#[path = "shared/e2e_suite.rs"]
mod suite;

/// The runtime's name in the tables.
const RUNTIME: &str = "tokio (multi-thread, 2 workers)";

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

fn spawn<T: Send + 'static>(
    task: impl Future<Output = T> + Send + 'static,
) -> impl Future<Output = T> + Send {
    let handle = tokio::spawn(task);
    async move { handle.await.expect("task completed") }
}

async fn sleep(d: Duration) {
    tokio::time::sleep(d).await;
}

/// The runtime's client stack without the engine: hyper-util's pooled legacy client over an
/// `HttpConnector` with `TCP_NODELAY` (the engine wraps the same connector in hyper-rustls,
/// which passes `http://` through).
#[derive(Clone)]
struct DirectClient {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl DirectClient {
    fn new() -> DirectClient {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        DirectClient {
            client: Client::builder(TokioExecutor::new()).build(http),
        }
    }

    /// POSTs a JSON-RPC body with the engine's headers and reads the whole response.
    async fn post(&self, url: &str, body: String) -> usize {
        let request = http::Request::post(url)
            .header("A2A-Version", "1.0")
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .body(Full::new(Bytes::from(body)))
            .expect("valid request");
        let response = self.client.request(request).await.expect("direct request");
        assert!(response.status().is_success(), "{}", response.status());
        let body = response.into_body().collect().await.expect("response body");
        body.to_bytes().len()
    }
}

fn main() {
    suite::main();
}
