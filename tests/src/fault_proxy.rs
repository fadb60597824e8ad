//! A TCP proxy that injects network faults between the engine and a real agent (a scripted
//! loopback agent or a Python `a2a-sdk` one): connections refused until a moment, and response
//! streams cut after a number of SSE events. It runs on plain threads, so it works under any
//! runtime, and it records the bytes the engine sent so a test can count requests at the wire.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What the proxy does to the traffic it forwards.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// Nothing listens on the proxy's port until this long after the start: connections are
    /// refused.
    pub refuse_for: Duration,
    /// Cut the connection once a response carried this many SSE events (`data:` lines), after
    /// forwarding them …
    pub cut_after_events: Option<usize>,
    /// … for this many responses (each cut consumes one).
    pub cuts: usize,
    /// When cutting, also forward half of the next event first (a truncated chunk).
    pub truncate: bool,
}

#[derive(Debug, Default)]
struct Shared {
    sent: Mutex<Vec<u8>>,
    cuts_left: AtomicUsize,
    cuts_done: AtomicUsize,
    stop: AtomicBool,
}

/// A running proxy; dropping it stops accepting connections.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port forwarding to `upstream`.
    pub fn start(upstream: SocketAddr, plan: FaultPlan) -> FaultProxy {
        // Reserve a port, then free it: until the proxy binds it again, connecting is refused.
        let addr = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port");
        let shared = Arc::new(Shared {
            cuts_left: AtomicUsize::new(plan.cuts),
            ..Shared::default()
        });
        let bound = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let accept_shared = shared.clone();
        let accept_bound = bound.clone();
        let refuse_for = plan.refuse_for;
        thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                thread::sleep(plan.refuse_for);
                let listener = bind_again(addr);
                {
                    let (flag, cvar) = &*accept_bound;
                    *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
                    cvar.notify_all();
                }
                for stream in listener.incoming() {
                    if accept_shared.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = stream else { continue };
                    let Ok(server) = TcpStream::connect(upstream) else {
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    spawn_pipes(client, server, &plan, accept_shared.clone());
                }
            })
            .expect("proxy thread");
        if refuse_for.is_zero() {
            let (flag, cvar) = &*bound;
            let mut ready = flag.lock().unwrap_or_else(|e| e.into_inner());
            while !*ready {
                ready = cvar.wait(ready).unwrap_or_else(|e| e.into_inner());
            }
        }
        FaultProxy { addr, shared }
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the authority of `url` (scheme://host:port/...) with the proxy's.
    pub fn rewrite(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
        let path = rest.find('/').map_or("", |i| &rest[i..]);
        format!("{scheme}://{}{path}", self.addr)
    }

    /// How many responses were cut.
    pub fn cuts_done(&self) -> usize {
        self.shared.cuts_done.load(Ordering::SeqCst)
    }

    /// How many times `needle` occurs in what the engine sent through the proxy.
    pub fn count_sent(&self, needle: &str) -> usize {
        let sent = self.shared.sent.lock().unwrap_or_else(|e| e.into_inner());
        count(&sent, needle.as_bytes())
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn bind_again(addr: SocketAddr) -> TcpListener {
    for _ in 0..200 {
        if let Ok(l) = TcpListener::bind(addr) {
            return l;
        }
        thread::sleep(Duration::from_millis(5));
    }
    panic!("cannot bind the proxy port {addr} again");
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    if needle.is_empty() || haystack.len() < needle.len() {
        return 0;
    }
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

fn spawn_pipes(client: TcpStream, server: TcpStream, plan: &FaultPlan, shared: Arc<Shared>) {
    let (Ok(client_read), Ok(server_write)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let up_shared = shared.clone();
    thread::spawn(move || {
        let (mut from, mut to) = (client_read, server_write);
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    up_shared
                        .sent
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&buf[..n]);
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    let cut_after = plan.cut_after_events;
    let truncate = plan.truncate;
    thread::spawn(move || {
        let (mut from, mut to) = (server, client);
        let mut buf = [0u8; 16 * 1024];
        // Events seen in the current response; a new status line starts a new response.
        let mut events = 0usize;
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            let mut window = std::mem::take(&mut tail);
            let carried = window.len();
            window.extend_from_slice(chunk);
            if count(&window[..], b"HTTP/1.1 ") > 0 {
                events = 0;
            }
            events += count(&window, b"data:") - count(&window[..carried], b"data:");
            tail = window[window.len().saturating_sub(8)..].to_vec();
            if let Some(limit) = cut_after {
                // A truncating cut waits for the next event, to forward half of it.
                if events >= limit + usize::from(truncate) && take_cut(&shared) {
                    // Forward up to the limit-th event, then break the connection.
                    let keep = prefix_before_event(chunk, events - limit, truncate);
                    let _ = to.write_all(&chunk[..keep]);
                    let _ = to.flush();
                    let _ = to.shutdown(Shutdown::Both);
                    let _ = from.shutdown(Shutdown::Both);
                    return;
                }
            }
            if to.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

fn take_cut(shared: &Shared) -> bool {
    let taken = shared
        .cuts_left
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if taken {
        shared.cuts_done.fetch_add(1, Ordering::SeqCst);
    }
    taken
}

/// The length of `chunk` before its `excess`-th-from-last `data:` event (so the events beyond
/// the limit are not forwarded); with `truncate`, half of the first dropped event is kept.
fn prefix_before_event(chunk: &[u8], excess: usize, truncate: bool) -> usize {
    if excess == 0 {
        return chunk.len();
    }
    let starts: Vec<usize> = chunk
        .windows(5)
        .enumerate()
        .filter(|(_, w)| *w == b"data:")
        .map(|(i, _)| i)
        .collect();
    let Some(&first_dropped) = starts.get(starts.len().saturating_sub(excess)) else {
        return 0;
    };
    // Drop from the start of that event's line (keep the chunk framing bytes before it).
    if truncate {
        let end = starts
            .iter()
            .find(|&&s| s > first_dropped)
            .copied()
            .unwrap_or(chunk.len());
        first_dropped + (end - first_dropped) / 2
    } else {
        first_dropped
    }
}
