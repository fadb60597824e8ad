//! HTTP/2 for the gRPC binding: hyper's HTTP/2 client connection (`client::conn::http2`) over
//! the runtime's TCP connections, with prior knowledge (h2c) on `http://` and TLS with ALPN
//! `h2` on `https://` (the same TLS policy as HTTP/1.1, only the ALPN list differs).
//!
//! hyper's HTTP/2 connection runs background tasks and timers; [`RuntimeExecutor`] and
//! [`RuntimeTimer`] give it the driver's [`Runtime`] for both, so no other runtime is started.
//! One connection per origin carries every concurrent exchange (streams are multiplexed); a
//! closed connection is replaced on the next request.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::hyper_io::HyperIo;
use a2at_core::io::TransportErrorKind;
use futures_rustls::TlsConnector;
use futures_rustls::rustls::pki_types::ServerName;
use hyper::body::Incoming;
use hyper::client::conn::http2::{Builder, SendRequest};

use crate::http::{Origin, RequestBody, describe, open_tcp, origin_of};
use crate::proxy::ProxyConfig;
use crate::runtime::{BoxFuture, Runtime};

type Failure = (TransportErrorKind, String);
type Sender = SendRequest<RequestBody>;

/// hyper's executor on the driver's runtime: every background future hyper starts (the
/// connection task, stream pumps) goes to [`Runtime::spawn`].
pub(crate) struct RuntimeExecutor<R>(PhantomData<fn() -> R>);

impl<R> Clone for RuntimeExecutor<R> {
    fn clone(&self) -> Self {
        RuntimeExecutor(PhantomData)
    }
}

impl<R: Runtime, F> hyper::rt::Executor<F> for RuntimeExecutor<R>
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        crate::runtime::spawn::<R>(future);
    }
}

/// hyper's timer on the driver's runtime clock ([`Runtime::now`], [`Runtime::sleep_until`]).
pub(crate) struct RuntimeTimer<R>(PhantomData<fn() -> R>);

impl<R: Runtime> hyper::rt::Timer for RuntimeTimer<R> {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        match R::now().checked_add(duration) {
            Some(at) => self.sleep_until(at),
            None => Box::pin(RuntimeSleep(Mutex::new(Box::pin(std::future::pending())))),
        }
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(RuntimeSleep(Mutex::new(R::sleep_until(deadline))))
    }

    fn now(&self) -> Instant {
        R::now()
    }
}

/// A runtime sleep as hyper wants it (`Sync`: the future sits behind a mutex that polling
/// reaches through `&mut`, so it is never locked).
struct RuntimeSleep(Mutex<BoxFuture<()>>);

impl Future for RuntimeSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let future = self
            .get_mut()
            .0
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        future.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for RuntimeSleep {}

/// The HTTP/2 connections of one client, one per origin.
pub(crate) struct Http2Connector<R> {
    tls: TlsConnector,
    connections: Arc<Mutex<HashMap<Origin, Sender>>>,
    proxy: Arc<ProxyConfig>,
    opened: Arc<AtomicU64>,
    runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> Http2Connector<R> {
    /// A connector using `tls` (whose ALPN list it replaces with `h2`).
    /// Every connection it opens counts in `opened`.
    pub(crate) fn new(
        mut tls: rustls::ClientConfig,
        proxy: Arc<ProxyConfig>,
        opened: Arc<AtomicU64>,
    ) -> Http2Connector<R> {
        tls.alpn_protocols = vec![b"h2".to_vec()];
        Http2Connector {
            tls: TlsConnector::from(Arc::new(tls)),
            connections: Arc::default(),
            proxy,
            opened,
            runtime: PhantomData,
        }
    }

    /// Sends one request (absolute URL) on the origin's connection, opening one when there is
    /// none or it closed, and waits for the response head. A request the existing connection
    /// could not take (closed meanwhile) goes to a new one.
    ///
    /// Written with combinators, as the HTTP/1 connector's `lend` is, so that the future holds
    /// the request once: the open connection is asked to take it at once.
    pub(crate) fn request(
        &self,
        mut request: http::Request<RequestBody>,
    ) -> impl Future<Output = Result<http::Response<Incoming>, Failure>> + Send + '_ {
        use futures::future::{Either, FutureExt, ready};
        let origin = match origin_of(request.uri()) {
            Ok(origin) => origin,
            Err(failure) => return Either::Left(ready(Err(failure))),
        };
        // Connection-level headers have no place in HTTP/2; the authority travels in the URI.
        request.headers_mut().remove(http::header::HOST);
        let Some(mut sender) = self.existing(&origin) else {
            return Either::Right(Either::Left(Box::pin(self.request_on(origin, request))));
        };
        let sending = sender.try_send_request(request);
        Either::Right(Either::Right(sending.then(move |sent| {
            // The connection keeps a handle of its own here until its request is answered.
            drop(sender);
            match sent {
                Ok(response) => Either::Left(ready(Ok(response))),
                // The shared connection closed before it took the request: a new one takes it.
                Err(mut e) => match e.take_message() {
                    Some(unsent) => {
                        self.forget(&origin);
                        Either::Right(Box::pin(self.request_on(origin, unsent)))
                    }
                    None => Either::Left(ready(Err((TransportErrorKind::Io, describe(e.error()))))),
                },
            }
        })))
    }

    /// [`Http2Connector::request`] for a request no shared connection took yet: the origin's
    /// shared connection if it has one by now, else a new one.
    async fn request_on(
        &self,
        origin: Origin,
        mut request: http::Request<RequestBody>,
    ) -> Result<http::Response<Incoming>, Failure> {
        loop {
            let (mut sender, shared) = match self.existing(&origin) {
                Some(sender) => (sender, true),
                None => {
                    // Boxed, as the HTTP/1.1 connect is: this future waits on for the answer.
                    let sender = Box::pin(self.connect(&origin)).await?;
                    self.connections
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(origin.clone(), sender.clone());
                    (sender, false)
                }
            };
            match sender.try_send_request(request).await {
                Ok(response) => return Ok(response),
                Err(mut e) => match e.take_message() {
                    Some(unsent) if shared => {
                        self.forget(&origin);
                        request = unsent;
                    }
                    _ => return Err((TransportErrorKind::Io, describe(e.error()))),
                },
            }
        }
    }

    fn existing(&self, origin: &Origin) -> Option<Sender> {
        let mut map = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(origin) {
            Some(sender) if !sender.is_closed() && sender.is_ready() => Some(sender.clone()),
            Some(_) => {
                map.remove(origin);
                None
            }
            None => None,
        }
    }

    fn forget(&self, origin: &Origin) {
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(origin);
    }

    async fn connect(&self, origin: &Origin) -> Result<Sender, Failure> {
        let tcp = open_tcp::<R>(&self.proxy, origin).await?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        let (https, host, _) = origin;
        if !*https {
            return handshake::<R, _>(HyperIo::new(tcp)).await;
        }
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| (TransportErrorKind::Tls, format!("invalid TLS name: {e}")))?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| (TransportErrorKind::Tls, describe(&e)))?;
        let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        if alpn.as_deref() != Some(b"h2".as_slice()) {
            return Err((
                TransportErrorKind::Tls,
                format!(
                    "the server did not agree to HTTP/2 (ALPN h2) for gRPC; it chose {}",
                    alpn.map_or_else(
                        || "no protocol".to_owned(),
                        |p| format!("{:?}", String::from_utf8_lossy(&p))
                    )
                ),
            ));
        }
        handshake::<R, _>(HyperIo::new(tls)).await
    }
}

/// Handshakes HTTP/2 on `io` and drives the connection in a runtime task.
async fn handshake<R: Runtime, T>(io: T) -> Result<Sender, Failure>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = Builder::new(RuntimeExecutor::<R>(PhantomData))
        .timer(RuntimeTimer::<R>(PhantomData))
        .handshake(io)
        .await
        .map_err(|e| (TransportErrorKind::Io, describe(&e)))?;
    crate::runtime::spawn::<R>(async move {
        let _ = connection.await;
    });
    Ok(sender)
}
