//! A real HTTP `CONNECT` proxy on loopback, as corporate egress proxies work: it reads
//! `CONNECT host:port HTTP/1.1`, optionally demands `Proxy-Authorization: Basic …` (answering
//! 407 otherwise), opens the TCP connection to the target, answers 200 and then pipes bytes
//! both ways without looking at them (TLS and HTTP/2 pass through untouched). It counts the
//! tunnels and records their targets, so a test can tell proxied from direct traffic. It runs
//! on plain threads, so it works under any runtime.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use base64::Engine as _;

#[derive(Debug, Default)]
struct Shared {
    /// The `Proxy-Authorization` value required, if any.
    required: Option<String>,
    tunnels: AtomicUsize,
    refused: AtomicUsize,
    targets: Mutex<Vec<String>>,
    /// Every request head received, as text (to check what the client sent the proxy).
    heads: Mutex<Vec<String>>,
    stop: AtomicBool,
}

/// A running proxy; dropping it stops accepting connections (open tunnels run on until
/// either side closes).
#[derive(Debug)]
pub struct ConnectProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl ConnectProxy {
    /// A proxy on a free loopback port that tunnels for anyone.
    pub fn start() -> ConnectProxy {
        ConnectProxy::start_with(None)
    }

    /// A proxy that tunnels only for `user:password` (HTTP basic), answering 407 otherwise.
    pub fn with_basic_auth(user: &str, password: &str) -> ConnectProxy {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        ConnectProxy::start_with(Some(format!("Basic {token}")))
    }

    fn start_with(required: Option<String>) -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            required,
            ..Shared::default()
        });
        let accept = shared.clone();
        thread::Builder::new()
            .name("connect-proxy".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if accept.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = stream else { continue };
                    let shared = accept.clone();
                    let _ = thread::Builder::new()
                        .name("connect-proxy-conn".into())
                        .spawn(move || serve(client, &shared));
                }
            })
            .expect("proxy thread");
        ConnectProxy { addr, shared }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Tunnels opened so far.
    pub fn tunnels(&self) -> usize {
        self.shared.tunnels.load(Ordering::SeqCst)
    }

    /// Tunnel requests answered 407 so far.
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// The `host:port` of every tunnel opened, in order.
    pub fn targets(&self) -> Vec<String> {
        self.shared
            .targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every request head the proxy received (tunnelled bytes excluded).
    pub fn heads(&self) -> Vec<String> {
        self.shared
            .heads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// One client connection: the `CONNECT` head, then the tunnel.
fn serve(mut client: TcpStream, shared: &Shared) {
    let _ = client.set_nodelay(true);
    // Byte by byte: whatever follows the head belongs to the tunnel.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) if head.len() < 64 * 1024 => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    shared
        .heads
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(head.clone());
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut words = request_line.split(' ');
    let (Some("CONNECT"), Some(target)) = (words.next(), words.next()) else {
        let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let authorization = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_owned())
    });
    if shared.required.is_some() && authorization != shared.required {
        shared.refused.fetch_add(1, Ordering::SeqCst);
        let _ = client.write_all(
            b"HTTP/1.1 407 Proxy Authentication Required\r\n\
              Proxy-Authenticate: Basic realm=\"loopback\"\r\nContent-Length: 0\r\n\r\n",
        );
        return;
    }
    let Ok(upstream) = TcpStream::connect(target) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let _ = upstream.set_nodelay(true);
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    shared.tunnels.fetch_add(1, Ordering::SeqCst);
    shared
        .targets
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(target.to_owned());
    let (Ok(client_read), Ok(upstream_write)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = thread::spawn(move || pipe(client_read, upstream_write));
    pipe(upstream, client);
    let _ = up.join();
}

/// Copies `from` into `to` until `from` ends, then closes `to` for writing (and `from` for
/// reading, so the other direction ends too once its peer is gone).
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}
