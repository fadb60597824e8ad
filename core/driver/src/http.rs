//! The HTTP client: hyper's HTTP/1.1 client connection (`client::conn::http1`) over the
//! runtime's TCP connections (`TCP_NODELAY` on) and `futures-rustls` (ring provider, webpki
//! roots, verification on), with a pool of idle connections per `(scheme, host, port)`
//! ([`PoolConfig`]); HTTP/2 for gRPC exchanges (see [`crate::http2`]); plus the request and
//! header helpers every sender uses (task traffic, logins, discovery).
//!
//! hyper-util's pooled `client-legacy` client is not used: it is written for tokio only, and
//! this client runs on every [`Runtime`].

use std::borrow::Cow;
use std::error::Error as StdError;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::hyper_io::HyperIo;
use a2at_core::a2a::HttpMethod;
use a2at_core::io::{HeaderField, HeaderText, TransportErrorKind};
use bytes::Bytes;
use futures_rustls::TlsConnector;
use futures_rustls::rustls::pki_types::ServerName;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::handshake;

use crate::error::EngineError;
use crate::http2::Http2Connector;
use crate::pool::{IdlePool, PoolConfig};
pub(crate) use crate::pool::{Origin, Sender};
use crate::proxy::ProxyConfig;
use crate::runtime::Runtime;
use crate::tls::{TlsConfig, client_config};

/// The body of a request the engine sends: its bytes as written, read through a cursor. A
/// `Bytes` made from a vector with spare room allocates a shared header for it, and a body
/// is written into room for a typical call.
pub(crate) type RequestBody = Full<std::io::Cursor<Vec<u8>>>;

/// Edits every outgoing request of an [`HttpClient`] just before it is sent: add gateway
/// headers, or rewrite the URI (scheme, host, port, path and query) to route through a gateway.
/// It receives the request head as the `http` crate (version 1) has it, with the absolute
/// URI and every header the engine set, authentication included; the body and the response
/// (SSE streams, gRPC frames) are never touched.
///
/// It runs for every request of the client: task traffic, logins, discovery and extension
/// exchanges. The connection is chosen after it ran, so a rewritten host or port is reached
/// directly (and through the proxy, if one applies to it); the HTTP/1.1 `Host` header follows
/// the final URI unless the hook set one. An error, or a panic, stops that
/// one request before anything is sent: the exchange fails with a transport error of kind
/// `other` whose message starts with `request hook` (a panic never takes the engine down).
///
/// Headers the hook adds show in the protocol log like the engine's own, with the values of
/// secret-looking names (`authorization`, `*token*`, `x-api-key`, …) masked.
pub type RequestHook = Arc<dyn Fn(&mut http::request::Parts) -> Result<(), String> + Send + Sync>;

/// The pooled HTTP client of an engine (http and https, TLS verified against the webpki
/// roots, `TCP_NODELAY` on): HTTP/1.1, and HTTP/2 for gRPC, optionally through a proxy
/// ([`ProxyConfig`]) and with a [`RequestHook`]. Cloning shares the connections and the
/// request counter.
pub struct HttpClient<R> {
    connector: Arc<Connector<R>>,
    http2: Arc<Http2Connector<R>>,
    sent: Arc<AtomicU64>,
    opened: Arc<AtomicU64>,
    proxy: Arc<ProxyConfig>,
    hook: Option<RequestHook>,
}

impl<R> Clone for HttpClient<R> {
    fn clone(&self) -> Self {
        HttpClient {
            connector: self.connector.clone(),
            http2: self.http2.clone(),
            sent: self.sent.clone(),
            opened: self.opened.clone(),
            proxy: self.proxy.clone(),
            hook: self.hook.clone(),
        }
    }
}

impl<R> std::fmt::Debug for HttpClient<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("requests_sent", &self.requests_sent())
            .field("connections_opened", &self.connections_opened())
            .field("proxy", &self.proxy)
            .field("request_hook", &self.hook.is_some())
            .finish_non_exhaustive()
    }
}

impl<R> HttpClient<R> {
    /// How many requests this client (and its clones) has handed to the connection pool.
    pub fn requests_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// How many TCP connections this client (and its clones) has opened, HTTP/1.1 and HTTP/2
    /// alike (through a proxy, each tunnel counts once). Beside [`HttpClient::requests_sent`]
    /// it shows how many requests reused a connection.
    pub fn connections_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// How this client keeps idle HTTP/1.1 connections.
    pub fn pool_config(&self) -> PoolConfig {
        self.connector.idle.config()
    }

    /// The proxy settings this client connects with.
    pub fn proxy(&self) -> &ProxyConfig {
        &self.proxy
    }

    /// This client with `hook` editing every request it sends (replacing any hook it had);
    /// the connections stay shared with the client it came from.
    pub fn with_request_hook(mut self, hook: RequestHook) -> HttpClient<R> {
        self.hook = Some(hook);
        self
    }

    /// The request hook, if any (an [`ExtensionSender`](crate::ExtensionSender) built from an
    /// engine gets the engine's).
    pub(crate) fn request_hook(&self) -> Option<RequestHook> {
        self.hook.clone()
    }

    /// `url` parsed, from the targets this client sent to lately when it is one of them.
    pub(crate) fn uri_of(&self, url: &str) -> Result<http::Uri, http::Error> {
        self.connector.targets.uri_of(url)
    }

    /// Runs the request hook on `request` (nothing without one). Its error or panic becomes
    /// a failure of this request, which is then never sent.
    pub(crate) fn prepare(
        &self,
        request: http::Request<RequestBody>,
    ) -> Result<http::Request<RequestBody>, Failure> {
        let Some(hook) = &self.hook else {
            return Ok(request);
        };
        let (mut parts, body) = request.into_parts();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&mut parts))) {
            Ok(Ok(())) => Ok(http::Request::from_parts(parts, body)),
            Ok(Err(message)) => Err((
                TransportErrorKind::Other,
                format!("request hook refused the request: {message}"),
            )),
            Err(panic) => {
                let reason = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                Err((
                    TransportErrorKind::Other,
                    format!("request hook panicked: {reason}"),
                ))
            }
        }
    }
}

impl<R: Runtime> HttpClient<R> {
    /// A new client with its own connection pool, verifying servers against the webpki roots,
    /// with the proxies of the environment ([`ProxyConfig::from_env`]).
    pub fn new() -> Result<HttpClient<R>, EngineError> {
        HttpClient::with_tls(&TlsConfig::default())
    }

    /// A new client with its own connection pool and the given TLS policy, with the proxies
    /// of the environment ([`ProxyConfig::from_env`]); a policy that cannot be built
    /// (unreadable PEM, a key that does not match) or an unusable proxy variable is an error.
    pub fn with_tls(tls: &TlsConfig) -> Result<HttpClient<R>, EngineError> {
        HttpClient::with_tls_and_proxy(tls, ProxyConfig::from_env()?)
    }

    /// A new client with its own connection pool, the given TLS policy and these proxy
    /// settings (the environment is not read: [`ProxyConfig::none`] connects directly).
    pub fn with_tls_and_proxy(
        tls: &TlsConfig,
        proxy: ProxyConfig,
    ) -> Result<HttpClient<R>, EngineError> {
        HttpClient::with_tls_proxy_and_pool(tls, proxy, PoolConfig::default())
    }

    /// Like [`HttpClient::with_tls_and_proxy`], keeping idle connections as `pool` says.
    pub fn with_tls_proxy_and_pool(
        tls: &TlsConfig,
        proxy: ProxyConfig,
        pool: PoolConfig,
    ) -> Result<HttpClient<R>, EngineError> {
        let config = client_config(tls)?;
        let proxy = Arc::new(proxy);
        let opened = Arc::new(AtomicU64::new(0));
        Ok(HttpClient {
            http2: Arc::new(Http2Connector::new(
                config.clone(),
                proxy.clone(),
                opened.clone(),
            )),
            connector: Arc::new(Connector::new(config, proxy.clone(), pool, opened.clone())),
            sent: Arc::new(AtomicU64::new(0)),
            opened,
            proxy,
            hook: None,
        })
    }

    /// Runs the request hook, then sends the request and waits for the response head.
    pub(crate) async fn send(
        &self,
        request: http::Request<RequestBody>,
    ) -> Result<http::Response<hyper::body::Incoming>, (TransportErrorKind, String)> {
        let request = self.prepare(request)?;
        self.send_prepared(request).await
    }

    /// Sends one request the hook already ran on ([`HttpClient::prepare`]) and waits for the
    /// response head.
    pub(crate) async fn send_prepared(
        &self,
        request: http::Request<RequestBody>,
    ) -> Result<http::Response<hyper::body::Incoming>, (TransportErrorKind, String)> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.connector.request(request).await
    }

    /// Like [`HttpClient::send_prepared`], for a caller that reads the response body itself
    /// and then gives its connection back to the pool ([`Lent::give_back`]): nothing waits
    /// for the connection to become idle meanwhile.
    ///
    /// Not an `async fn`, nor is what it calls: each such layer would keep its own copy of the
    /// request in the exchange's future.
    pub(crate) fn send_lending(
        &self,
        request: http::Request<RequestBody>,
    ) -> impl Future<Output = Result<(http::Response<Incoming>, Lent<R>), Failure>> + Send + '_
    {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.connector.lend(request)
    }

    /// Sends one request the hook already ran on over HTTP/2 (prior knowledge on `http://`,
    /// ALPN `h2` on `https://`) and waits for the response head; the body ends with the
    /// trailers, if any.
    pub(crate) fn send_http2_prepared(
        &self,
        request: http::Request<RequestBody>,
    ) -> impl Future<Output = Result<http::Response<Incoming>, Failure>> + Send + '_ {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.http2.request(request)
    }
}

pub(crate) type Failure = (TransportErrorKind, String);

/// The pooled connections behind an [`HttpClient`].
struct Connector<R> {
    tls: TlsConnector,
    idle: Arc<IdlePool<R>>,
    proxy: Arc<ProxyConfig>,
    opened: Arc<AtomicU64>,
    targets: RecentTargets,
}

impl<R: Runtime> Connector<R> {
    fn new(
        tls: rustls::ClientConfig,
        proxy: Arc<ProxyConfig>,
        pool: PoolConfig,
        opened: Arc<AtomicU64>,
    ) -> Connector<R> {
        Connector {
            tls: TlsConnector::from(Arc::new(tls)),
            idle: Arc::new(IdlePool::new(pool)),
            proxy,
            opened,
            targets: RecentTargets::default(),
        }
    }

    /// Sends one request on an idle or new connection and waits for the response head. A
    /// request that an idle connection could not take (closed meanwhile) goes to a new one.
    /// The connection goes back to the pool once its response body has been read to the end.
    async fn request(
        &self,
        request: http::Request<RequestBody>,
    ) -> Result<http::Response<Incoming>, Failure> {
        let (response, lent) = self.lend(request).await?;
        lent.give_back_when_idle();
        Ok(response)
    }

    /// Like [`Connector::request`], but the caller, which reads the body, gives the connection
    /// back itself ([`Lent::give_back`]).
    ///
    /// Written with combinators rather than as an `async` block, so that the future holds the
    /// request once. A block holds it in its captured argument beside hyper's future, which
    /// holds it again until the connection takes it; every exchange's future carries that
    /// size. An idle connection is asked to take the request at once. Only when none is idle,
    /// or the idle one closed meanwhile, does the request wait in a boxed future of its own.
    fn lend(
        &self,
        mut request: http::Request<RequestBody>,
    ) -> impl Future<Output = Result<(http::Response<Incoming>, Lent<R>), Failure>> + Send + '_
    {
        use futures::future::{Either, FutureExt, ready};
        let origin = match self.targets.origin_form(&mut request) {
            Ok(origin) => origin,
            Err(failure) => return Either::Left(ready(Err(failure))),
        };
        let Some(mut sender) = self.idle.checkout(&origin) else {
            return Either::Right(Either::Left(Box::pin(self.lend_on(origin, request))));
        };
        let sending = sender.try_send_request(request);
        Either::Right(Either::Right(sending.then(move |sent| match sent {
            Ok(response) => Either::Left(ready(Ok((response, self.lent(origin, sender))))),
            // The idle connection closed before it took the request: another one takes it.
            Err(mut e) => match e.take_message() {
                Some(unsent) => Either::Right(Box::pin(self.lend_on(origin, unsent))),
                None => Either::Left(ready(Err((TransportErrorKind::Io, describe(e.error()))))),
            },
        })))
    }

    /// [`Connector::lend`] for a request no idle connection took yet: the next idle one, else
    /// a new one. A request an idle connection could not take (closed meanwhile) tries the
    /// next.
    async fn lend_on(
        &self,
        origin: Origin,
        mut request: http::Request<RequestBody>,
    ) -> Result<(http::Response<Incoming>, Lent<R>), Failure> {
        loop {
            let (mut sender, pooled) = match self.idle.checkout(&origin) {
                Some(sender) => (sender, true),
                // Boxed: a connect (TCP, TLS, proxy tunnel) is a large future, and this one
                // waits on for the answer once the request is sent.
                None => (Box::pin(self.connect(&origin)).await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => return Ok((response, self.lent(origin, sender))),
                Err(mut e) => match e.take_message() {
                    Some(unsent) if pooled => request = unsent,
                    _ => return Err((TransportErrorKind::Io, describe(e.error()))),
                },
            }
        }
    }

    /// `sender`, which took a request to `origin`, lent to its exchange.
    fn lent(&self, origin: Origin, sender: Sender) -> Lent<R> {
        Lent {
            origin,
            sender,
            idle: self.idle.clone(),
        }
    }

    async fn connect(&self, origin: &Origin) -> Result<Sender, Failure> {
        let tcp = open_tcp::<R>(&self.proxy, origin).await?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        let (https, host, _) = origin;
        if !*https {
            return start::<R, _>(HyperIo::new(tcp)).await;
        }
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| (TransportErrorKind::Tls, format!("invalid TLS name: {e}")))?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| (TransportErrorKind::Tls, describe(&e)))?;
        start::<R, _>(HyperIo::new(tls)).await
    }
}

/// An HTTP/1 connection lent to one exchange, to go back to its pool when the response is
/// read. Dropped instead, the connection closes with it (a body left half read cannot carry
/// another request).
pub(crate) struct Lent<R> {
    origin: Origin,
    sender: Sender,
    idle: Arc<IdlePool<R>>,
}

impl<R: Runtime> Lent<R> {
    /// Gives the connection back after its response body was read to the end. It is nearly
    /// always ready for the next request by then and goes back at once; otherwise a task waits
    /// for it, as [`Lent::give_back_when_idle`] does, so no exchange waits on its own
    /// connection.
    pub(crate) fn give_back(self) {
        if self.sender.is_ready() {
            self.idle.put(self.origin, self.sender);
        } else {
            self.give_back_when_idle();
        }
    }

    /// Gives the connection back once it is ready for another request (its response body read
    /// to the end by whoever holds it); a connection that closes (body dropped, server gone)
    /// is forgotten.
    fn give_back_when_idle(self) {
        let Lent {
            origin,
            mut sender,
            idle,
        } = self;
        crate::runtime::spawn::<R>(async move {
            if sender.ready().await.is_ok() {
                idle.put(origin, sender);
            }
        });
    }
}

/// A TCP connection to the origin: direct, or a tunnel through the proxy that applies to it
/// (TLS and HTTP then run inside the tunnel, verified against the origin's host name).
pub(crate) async fn open_tcp<R: Runtime>(
    proxy: &ProxyConfig,
    (https, host, port): &Origin,
) -> Result<R::TcpStream, Failure> {
    match proxy.proxy_for(*https, host, *port) {
        Some(proxy) => proxy.tunnel::<R>(host, *port).await,
        None => R::connect(host, *port)
            .await
            .map_err(|e| (TransportErrorKind::Connect, describe(&e))),
    }
}

/// Handshakes HTTP/1.1 on `io` and drives the connection in a runtime task.
async fn start<R: Runtime, T>(io: T) -> Result<Sender, Failure>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = handshake(io)
        .await
        .map_err(|e| (TransportErrorKind::Io, describe(&e)))?;
    crate::runtime::spawn::<R>(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// The origin (scheme, host, port) of an absolute `http` or `https` URL.
pub(crate) fn origin_of(uri: &http::Uri) -> Result<Origin, Failure> {
    let bad = |m: String| (TransportErrorKind::Other, m);
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        other => return Err(bad(format!("unsupported URL scheme {other:?}"))),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| bad("URL without a host".into()))?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .into();
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok((https, host, port))
}

/// What an absolute `http` or `https` URL becomes on an HTTP/1.1 connection: the origin that
/// picks the connection, the `Host` header and the origin-form target.
#[derive(Clone)]
struct OriginForm {
    origin: Origin,
    host: http::HeaderValue,
    target: http::Uri,
}

impl OriginForm {
    fn of(uri: &http::Uri) -> Result<OriginForm, Failure> {
        let bad = |m: String| (TransportErrorKind::Other, m);
        let origin = origin_of(uri)?;
        // `origin_of` refused a URL without an authority.
        let authority = uri.authority().map_or("", http::uri::Authority::as_str);
        let host = http::HeaderValue::from_str(authority)
            .map_err(|e| bad(format!("invalid host: {e}")))?;
        let mut target = http::uri::Parts::default();
        target.path_and_query = Some(
            uri.path_and_query()
                .cloned()
                .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/")),
        );
        let target =
            http::Uri::from_parts(target).map_err(|e| bad(format!("invalid path: {e}")))?;
        Ok(OriginForm {
            origin,
            host,
            target,
        })
    }

    /// Puts `request` in this form (a `Host` header it already has is kept); returns the
    /// origin.
    fn apply<B>(self, request: &mut http::Request<B>) -> Origin {
        if !request.headers().contains_key(http::header::HOST) {
            request.headers_mut().insert(http::header::HOST, self.host);
        }
        *request.uri_mut() = self.target;
        self.origin
    }
}

/// How many request targets a client keeps taken apart: an engine sends to a handful of agent
/// URLs over and over.
const RECENT_TARGETS: usize = 16;

/// The request targets a client sent to lately, each parsed and taken apart once. A lookup
/// compares the target with the few kept ones, which costs less than parsing it again for
/// every request.
#[derive(Default)]
struct RecentTargets {
    /// Most recently added last; the oldest goes when a new one comes past the limit.
    kept: std::sync::Mutex<std::collections::VecDeque<Target>>,
}

struct Target {
    url: Box<str>,
    absolute: http::Uri,
    form: OriginForm,
}

impl RecentTargets {
    /// `url` parsed; an absolute `http` or `https` URL is kept taken apart for the request's
    /// [`RecentTargets::origin_form`].
    fn uri_of(&self, url: &str) -> Result<http::Uri, http::Error> {
        if let Some(uri) = self.with(|kept| {
            kept.iter()
                .find(|t| *t.url == *url)
                .map(|t| t.absolute.clone())
        }) {
            return Ok(uri);
        }
        let uri = http::Uri::try_from(url)?;
        // A URL the client cannot send to is not kept: its request fails as it always did.
        if let Ok(form) = OriginForm::of(&uri) {
            let target = Target {
                url: url.into(),
                absolute: uri.clone(),
                form,
            };
            self.with(|kept| {
                if kept.len() == RECENT_TARGETS {
                    kept.pop_front();
                }
                kept.push_back(target);
            });
        }
        Ok(uri)
    }

    /// Rewrites `request`'s absolute URL to origin form with a `Host` header and returns its
    /// origin, from the kept parts when its target is one of them.
    fn origin_form<B>(&self, request: &mut http::Request<B>) -> Result<Origin, Failure> {
        let uri = request.uri();
        let kept = self.with(|kept| {
            kept.iter()
                .find(|t| same_target(&t.absolute, uri))
                .map(|t| t.form.clone())
        });
        let form = match kept {
            Some(form) => form,
            None => OriginForm::of(uri)?,
        };
        Ok(form.apply(request))
    }

    fn with<T>(&self, f: impl FnOnce(&mut std::collections::VecDeque<Target>) -> T) -> T {
        // A panic while the lock was held left nothing half-done: the list is only searched,
        // pushed to and popped from.
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut kept)
    }
}

/// Whether two URIs name the same target, text for text (the authority too, whose case
/// `Uri`'s own equality ignores but the `Host` header keeps).
fn same_target(a: &http::Uri, b: &http::Uri) -> bool {
    a.scheme_str() == b.scheme_str()
        && a.authority().map(http::uri::Authority::as_str)
            == b.authority().map(http::uri::Authority::as_str)
        && a.path_and_query().map(http::uri::PathAndQuery::as_str)
            == b.path_and_query().map(http::uri::PathAndQuery::as_str)
}

/// The `http` method of an engine request.
pub(crate) fn http_method(method: HttpMethod) -> http::Method {
    match method {
        HttpMethod::Get => http::Method::GET,
        HttpMethod::Post => http::Method::POST,
    }
}

/// One outgoing request for every sender (task traffic, logins, discovery).
pub(crate) fn build_request<N: AsRef<str>, V: AsRef<str>>(
    method: http::Method,
    url: &str,
    headers: &[(N, V)],
    body: Vec<u8>,
) -> Result<http::Request<RequestBody>, http::Error> {
    build_request_to(method, http::Uri::try_from(url)?, headers, body)
}

/// [`build_request`] for a URL already parsed.
pub(crate) fn build_request_to<N: AsRef<str>, V: AsRef<str>>(
    method: http::Method,
    uri: http::Uri,
    headers: &[(N, V)],
    body: Vec<u8>,
) -> Result<http::Request<RequestBody>, http::Error> {
    let fields = headers.iter().map(|(name, value)| (name, value));
    build_request_from(method, uri, fields, body, |value: &V| {
        header_value(value.as_ref())
    })
}

/// [`build_request_to`] taking the header texts themselves: a value written for this request
/// alone (`traceparent`, credentials) becomes the header's value without a copy.
pub(crate) fn build_request_owning(
    method: http::Method,
    uri: http::Uri,
    headers: Vec<(HeaderText, HeaderText)>,
    body: Vec<u8>,
) -> Result<http::Request<RequestBody>, http::Error> {
    build_request_from(
        method,
        uri,
        headers.into_iter(),
        body,
        |value| match value {
            Cow::Borrowed(text) => header_value(text),
            Cow::Owned(text) => Ok(http::HeaderValue::from_maybe_shared(Bytes::from(text))?),
        },
    )
}

fn build_request_from<N: AsRef<str>, V>(
    method: http::Method,
    uri: http::Uri,
    headers: impl ExactSizeIterator<Item = (N, V)>,
    body: Vec<u8>,
    value_of: impl Fn(V) -> Result<http::HeaderValue, http::Error>,
) -> Result<http::Request<RequestBody>, http::Error> {
    // Filled in place: `http::request::Builder` moves its whole request head through every
    // `header` call, which cost more than the headers themselves.
    let mut request = http::Request::new(Full::new(std::io::Cursor::new(body)));
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    let fields = request.headers_mut();
    fields.try_reserve(headers.len())?;
    for (name, value) in headers {
        fields.try_append(header_name(name.as_ref())?, value_of(value)?)?;
    }
    Ok(request)
}

/// The names A2A requests carry, as the core writes them and in the order a request lists them.
/// A name found here by its exact text costs one comparison; any other goes through
/// `HeaderName::from_bytes`, which lowercases it and copies a name `http` does not know. A
/// `static`, not a `const`: searching a `const` array of values with a destructor copies the
/// whole array onto the stack first, at every call.
static SENT_NAMES: [(&str, http::header::HeaderName); 6] = [
    (
        "A2A-Version",
        http::header::HeaderName::from_static("a2a-version"),
    ),
    ("Content-Type", http::header::CONTENT_TYPE),
    ("Accept", http::header::ACCEPT),
    (
        a2at_core::tracectx::TRACEPARENT,
        http::header::HeaderName::from_static("traceparent"),
    ),
    (
        "A2A-Extensions",
        http::header::HeaderName::from_static("a2a-extensions"),
    ),
    (
        a2at_core::tracectx::TRACESTATE,
        http::header::HeaderName::from_static("tracestate"),
    ),
];

/// The values most requests carry, kept for the same reasons.
static SENT_VALUES: [http::HeaderValue; 3] = [
    http::HeaderValue::from_static(a2at_core::a2a::A2A_VERSION),
    http::HeaderValue::from_static("application/json"),
    http::HeaderValue::from_static("text/event-stream"),
];

fn header_name(name: &str) -> Result<http::header::HeaderName, http::Error> {
    match SENT_NAMES.iter().find(|(text, _)| *text == name) {
        Some((_, known)) => Ok(known.clone()),
        None => Ok(http::header::HeaderName::from_bytes(name.as_bytes())?),
    }
}

fn header_value(value: &str) -> Result<http::HeaderValue, http::Error> {
    match SENT_VALUES.iter().find(|known| *known == value) {
        Some(known) => Ok(known.clone()),
        None => Ok(http::HeaderValue::from_str(value)?),
    }
}

/// Response headers as the core and the protocol log take them (values read lossily). Names
/// and values that most responses repeat are borrowed rather than copied for each response.
pub(crate) fn header_pairs(headers: &http::HeaderMap) -> Vec<HeaderField> {
    headers
        .iter()
        .map(|(n, v)| {
            let value = match std::str::from_utf8(v.as_bytes()) {
                Ok(text) => common_text(text, &COMMON_HEADER_VALUES),
                Err(_) => Cow::Owned(String::from_utf8_lossy(v.as_bytes()).into_owned()),
            };
            (common_text(n.as_str(), &COMMON_HEADER_NAMES), value)
        })
        .collect()
}

/// Header names of A2A responses over JSON-RPC, HTTP+JSON and gRPC, and of the HTTP servers
/// that carry them, the most frequent first.
const COMMON_HEADER_NAMES: [&str; 16] = [
    "content-type",
    "content-length",
    "date",
    "server",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "cache-control",
    "retry-after",
    "location",
    "vary",
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "grpc-encoding",
    "grpc-accept-encoding",
];

/// Header values of the same responses, looked for apart from the names: a value is never
/// compared with the names first.
const COMMON_HEADER_VALUES: [&str; 10] = [
    "application/json",
    "application/json; charset=utf-8",
    "text/event-stream",
    "text/event-stream; charset=utf-8",
    "application/grpc",
    "application/grpc+proto",
    "chunked",
    "close",
    "no-cache",
    "0",
];

/// `text` borrowed from `common` when it is one of them, else copied.
fn common_text(text: &str, common: &[&'static str]) -> Cow<'static, str> {
    match common.iter().find(|known| **known == text) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(text.to_owned()),
    }
}

/// One header's value, when it is present and readable.
pub(crate) fn header_text(
    headers: &http::HeaderMap,
    name: http::header::HeaderName,
) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The error with its source chain, for logs (hyper errors carry no request data).
pub(crate) fn describe(e: &(dyn StdError + 'static)) -> String {
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

    fn sent_to(targets: &RecentTargets, url: &str) -> (http::Request<()>, Origin) {
        let mut request = http::Request::new(());
        *request.uri_mut() = targets.uri_of(url).expect("a valid URL");
        let origin = targets.origin_form(&mut request).expect("an http URL");
        (request, origin)
    }

    fn host(request: &http::Request<()>) -> &str {
        request.headers()[http::header::HOST].to_str().unwrap()
    }

    #[test]
    fn a_kept_target_gives_the_same_request_as_a_fresh_one() {
        let targets = RecentTargets::default();
        let url = "http://Agent.example:8080/a2a/v1?x=1";
        let (first, first_origin) = sent_to(&targets, url);
        assert_eq!(targets.with(|kept| kept.len()), 1);
        let (again, again_origin) = sent_to(&targets, url);
        assert_eq!(targets.with(|kept| kept.len()), 1, "found, not added again");
        for (request, origin) in [(&first, &first_origin), (&again, &again_origin)] {
            assert_eq!(request.uri().to_string(), "/a2a/v1?x=1");
            assert_eq!(host(request), "Agent.example:8080");
            assert_eq!(*origin, (false, "Agent.example".into(), 8080));
        }
        // The kept origin is handed out, not copied: its host is one shared text.
        assert!(Arc::ptr_eq(&first_origin.1, &again_origin.1));
        // A Host header the request already has is kept.
        let mut own = http::Request::new(());
        *own.uri_mut() = targets.uri_of(url).unwrap();
        own.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::from_static("gateway"),
        );
        targets.origin_form(&mut own).unwrap();
        assert_eq!(host(&own), "gateway");
    }

    #[test]
    fn a_target_differing_in_any_part_is_not_taken_for_a_kept_one() {
        let targets = RecentTargets::default();
        sent_to(&targets, "https://agent.example/a?q=1");
        // `Uri`'s own equality ignores the authority's case; the Host header does not.
        let (upper, _) = sent_to(&targets, "https://AGENT.example/a?q=1");
        assert_eq!(host(&upper), "AGENT.example");
        let (other_query, _) = sent_to(&targets, "https://agent.example/a?q=2");
        assert_eq!(other_query.uri().to_string(), "/a?q=2");
        let (plain, origin) = sent_to(&targets, "http://agent.example/a?q=1");
        assert_eq!(origin, (false, "agent.example".into(), 80));
        assert_eq!(plain.uri().to_string(), "/a?q=1");
        // A URI rewritten after it was parsed (a request hook) is taken apart afresh.
        let mut rewritten = http::Request::new(());
        *rewritten.uri_mut() = targets.uri_of("https://agent.example/a?q=1").unwrap();
        *rewritten.uri_mut() = "https://elsewhere.example:9443/b".parse().unwrap();
        let origin = targets.origin_form(&mut rewritten).unwrap();
        assert_eq!(origin, (true, "elsewhere.example".into(), 9443));
        assert_eq!(host(&rewritten), "elsewhere.example:9443");
        assert_eq!(rewritten.uri().to_string(), "/b");
    }

    #[test]
    fn only_the_latest_targets_are_kept_and_unusable_ones_never() {
        let targets = RecentTargets::default();
        for i in 0..=RECENT_TARGETS {
            sent_to(&targets, &format!("http://agent{i}.example/"));
        }
        let urls: Vec<String> =
            targets.with(|kept| kept.iter().map(|t| t.url.to_string()).collect());
        assert_eq!(urls.len(), RECENT_TARGETS);
        assert_eq!(urls[0], "http://agent1.example/", "the oldest went");
        assert_eq!(
            urls[RECENT_TARGETS - 1],
            format!("http://agent{RECENT_TARGETS}.example/")
        );
        // A URL the client cannot send to parses but is not kept; its request still fails.
        let uri = targets.uri_of("ftp://files.example/x").unwrap();
        assert_eq!(targets.with(|kept| kept.len()), RECENT_TARGETS);
        let mut request = http::Request::new(());
        *request.uri_mut() = uri;
        let (kind, message) = targets.origin_form(&mut request).unwrap_err();
        assert_eq!(kind, TransportErrorKind::Other);
        assert!(message.contains("unsupported URL scheme"), "{message}");
        assert!(targets.uri_of("http://bad host/").is_err());
    }
}
