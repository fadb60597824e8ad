//! The smol HTTP stack: hyper's HTTP/1.1 client connection (`client::conn::http1`) over
//! `async-net` TCP (`TCP_NODELAY` on) and `futures-rustls` (ring provider, webpki roots,
//! verification on), adapted to hyper's IO traits by `smol-hyper`, with a small pool of idle
//! connections per `(scheme, host, port)`. The exchange task itself is shared
//! (`shared/transport.rs`).
//!
//! hyper-util's pooled `client-legacy` client is not used: it pulls in tokio (`net`, `sync`) and
//! its connector runs on tokio's reactor.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use a2at_core::io::TransportErrorKind;
use bytes::Bytes;
use futures_rustls::TlsConnector;
use futures_rustls::rustls::pki_types::ServerName;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{SendRequest, handshake};
use smol::net::TcpStream;
use smol_hyper::rt::FuturesIo;

use crate::shared::engine::EngineError;
use crate::shared::tls::{TlsConfig, client_config};
use crate::shared::transport::describe;

/// Idle connections kept per origin.
const MAX_IDLE_PER_ORIGIN: usize = 32;

type Sender = SendRequest<Full<Bytes>>;
type Failure = (TransportErrorKind, String);

/// `(https, host, port)`.
type Origin = (bool, String, u16);

/// The pooled connections behind an [`HttpClient`](crate::HttpClient).
pub(crate) struct Connector {
    tls: TlsConnector,
    idle: Arc<Mutex<HashMap<Origin, Vec<Sender>>>>,
}

impl Connector {
    pub(crate) fn new(tls: &TlsConfig) -> Result<Connector, EngineError> {
        Ok(Connector {
            tls: TlsConnector::from(Arc::new(client_config(tls)?)),
            idle: Arc::default(),
        })
    }

    /// Sends one request on an idle or new connection and waits for the response head. A
    /// request that an idle connection could not take (closed meanwhile) goes to a new one.
    pub(crate) async fn request(
        &self,
        mut request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<Incoming>, Failure> {
        let origin = origin_form(&mut request)?;
        loop {
            let (mut sender, pooled) = match self.checkout(&origin) {
                Some(sender) => (sender, true),
                None => (self.connect(&origin).await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.checkin_when_idle(origin, sender);
                    return Ok(response);
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if pooled => request = unsent,
                    _ => return Err((TransportErrorKind::Io, describe(e.error()))),
                },
            }
        }
    }

    fn checkout(&self, origin: &Origin) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(origin)?;
        while let Some(sender) = list.pop() {
            if sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// Returns the connection to the pool once its response body has been read to the end;
    /// a connection that closes (body dropped, server gone) is forgotten.
    fn checkin_when_idle(&self, origin: Origin, mut sender: Sender) {
        let idle = self.idle.clone();
        smol::spawn(async move {
            if sender.ready().await.is_ok() {
                let mut idle = idle.lock().unwrap_or_else(|e| e.into_inner());
                let list = idle.entry(origin).or_default();
                if list.len() < MAX_IDLE_PER_ORIGIN {
                    list.push(sender);
                }
            }
        })
        .detach();
    }

    async fn connect(&self, (https, host, port): &Origin) -> Result<Sender, Failure> {
        let connect_failure = |e: std::io::Error| (TransportErrorKind::Connect, describe(&e));
        let tcp = TcpStream::connect((host.as_str(), *port))
            .await
            .map_err(connect_failure)?;
        tcp.set_nodelay(true).map_err(connect_failure)?;
        if !*https {
            return start(FuturesIo::new(tcp)).await;
        }
        let name = ServerName::try_from(host.clone())
            .map_err(|e| (TransportErrorKind::Tls, format!("invalid TLS name: {e}")))?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| (TransportErrorKind::Tls, describe(&e)))?;
        start(FuturesIo::new(tls)).await
    }
}

/// Handshakes HTTP/1.1 on `io` and drives the connection on smol's executor.
async fn start<T>(io: T) -> Result<Sender, Failure>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = handshake(io)
        .await
        .map_err(|e| (TransportErrorKind::Io, describe(&e)))?;
    smol::spawn(async move {
        let _ = connection.await;
    })
    .detach();
    Ok(sender)
}

/// Rewrites an absolute URL to origin form with a `Host` header; returns the origin.
fn origin_form(request: &mut http::Request<Full<Bytes>>) -> Result<Origin, Failure> {
    let bad = |m: String| (TransportErrorKind::Other, m);
    let uri = request.uri().clone();
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
        .to_owned();
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    if !request.headers().contains_key(http::header::HOST) {
        let value = http::HeaderValue::from_str(authority.as_str())
            .map_err(|e| bad(format!("invalid host: {e}")))?;
        request.headers_mut().insert(http::header::HOST, value);
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = path
        .parse()
        .map_err(|e| bad(format!("invalid path: {e}")))?;
    Ok((https, host, port))
}
