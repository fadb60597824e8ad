//! End-to-end benchmark on the tokio runtime (issue #11): the engine against a minimal direct
//! client on loopback. Run with `cargo bench -p a2at-tokio --bench e2e`; it prints markdown
//! tables and never asserts a timing. The body is `a2at_tests::e2e`, shared with `a2at-smol`.

use std::future::Future;

use a2at_tests::e2e::{BenchRuntime, DirectClient};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// Counts every allocation of the process (the agents live in the child process), so live heap
/// and allocations per run can be read. `stats_alloc` holds the `unsafe impl GlobalAlloc`; this
/// bench has no unsafe code of its own. The counters are atomics: they cost both the engine and
/// the direct client a little on every allocation.
#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

struct OnTokio;

impl BenchRuntime for OnTokio {
    type Rt = a2at_tokio::Tokio;
    type Client = Direct;
    const LABEL: &'static str = "tokio (multi-thread, 2 workers)";

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
}

/// tokio's usual client stack without the engine: hyper-util's pooled legacy client over an
/// `HttpConnector` with `TCP_NODELAY` (and the same client in HTTP/2-only mode for gRPC).
#[derive(Clone)]
struct Direct {
    client: Client<HttpConnector, Full<Bytes>>,
    http2: Client<HttpConnector, Full<Bytes>>,
}

impl DirectClient for Direct {
    fn new() -> Direct {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        Direct {
            client: Client::builder(TokioExecutor::new()).build(http.clone()),
            http2: Client::builder(TokioExecutor::new())
                .http2_only(true)
                .build(http),
        }
    }

    async fn post_grpc(&self, url: &str, body: Vec<u8>) -> usize {
        let mut request = http::Request::post(url);
        for (name, value) in a2at_tests::e2e::GRPC_HEADERS {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .expect("valid request");
        let response = self.http2.request(request).await.expect("direct request");
        assert!(response.status().is_success(), "{}", response.status());
        let body = response.into_body().collect().await.expect("response body");
        let ok = body
            .trailers()
            .and_then(|t| t.get("grpc-status"))
            .is_some_and(|s| s == "0");
        assert!(ok, "the gRPC call did not end with status OK");
        body.to_bytes().len()
    }

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
    a2at_tests::e2e::main::<OnTokio>(|| INSTRUMENTED_SYSTEM.stats());
}
