//! Outgoing proxies: [`ProxyConfig`] (explicit, or read from `HTTPS_PROXY`, `HTTP_PROXY`,
//! `ALL_PROXY` and `NO_PROXY` the way curl reads them) and the HTTP/1.1 `CONNECT` tunnel every
//! proxied connection goes through.
//!
//! Every proxied connection is a `CONNECT` tunnel, for `https://` and `http://` targets alike:
//! TLS to the agent runs inside the tunnel (verified against the agent's host name, never the
//! proxy's), and HTTP/2 with prior knowledge (gRPC over `http://`) works the same way, which
//! absolute-form proxy requests could not carry.

use std::net::IpAddr;

use a2at_core::io::TransportErrorKind;
use base64::Engine as _;
use futures::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::EngineError;
use crate::http::describe;
use crate::runtime::Runtime;

type Failure = (TransportErrorKind, String);

/// Where an engine's HTTP client opens its connections: directly, or through an HTTP proxy
/// (HTTP/1.1 `CONNECT` tunnels, for `https://` and `http://` agents alike) with an optional
/// list of destinations that bypass it.
///
/// Plain `http://` agents are tunnelled too (not sent as absolute-form proxy requests), so one
/// mechanism carries HTTP/1.1, HTTP/2 with prior knowledge and TLS alike; a proxy that only
/// tunnels to port 443 (Squid's default policy) refuses other ports, which shows as a connect
/// failure naming the proxy and its status.
///
/// The clients of this crate read it from the environment by default
/// ([`ProxyConfig::from_env`], as curl does); [`ProxyConfig::none`] connects directly whatever
/// the environment says. A proxy's password never appears in `Debug` output, logs or errors.
#[derive(Clone, Default)]
pub struct ProxyConfig {
    http: Option<Proxy>,
    https: Option<Proxy>,
    no_proxy: NoProxy,
    /// Loopback destinations connect directly (the environment's proxies are meant for
    /// leaving the machine, and a loopback agent behind a corporate proxy is never reachable).
    direct_loopback: bool,
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("http", &self.http)
            .field("https", &self.https)
            .field("no_proxy", &self.no_proxy.0)
            .field("direct_loopback", &self.direct_loopback)
            .finish()
    }
}

/// One proxy: where it listens and the `Proxy-Authorization` value, if it needs one.
#[derive(Clone)]
pub(crate) struct Proxy {
    host: String,
    port: u16,
    authorization: Option<String>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The credentials are a secret: only whether there are any.
        write!(
            f,
            "{} (credentials: {})",
            authority(&self.host, self.port),
            self.authorization.is_some()
        )
    }
}

/// The environment variables [`ProxyConfig::from_env`] reads, lowercase first (curl's
/// precedence).
const HTTPS_VARS: [&str; 4] = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"];
const HTTP_VARS: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];
const NO_PROXY_VARS: [&str; 2] = ["no_proxy", "NO_PROXY"];

impl ProxyConfig {
    /// No proxy: every connection goes directly to the agent, whatever the environment says.
    pub fn none() -> ProxyConfig {
        ProxyConfig::default()
    }

    /// Every connection (`http://` and `https://` agents) through the proxy at `url`
    /// (`http://[user:password@]host[:port]`, port 1080 when omitted as in curl; a URL without
    /// a scheme is taken as `http://`). The user and password may be percent-encoded; they
    /// become a `Proxy-Authorization: Basic` header. Only HTTP proxies are supported: another
    /// scheme (`https://`, `socks5://`) is an error.
    pub fn new(url: &str) -> Result<ProxyConfig, EngineError> {
        let proxy = Proxy::parse(url).map_err(|e| EngineError::Proxy(format!("proxy URL: {e}")))?;
        Ok(ProxyConfig {
            http: Some(proxy.clone()),
            https: Some(proxy),
            no_proxy: NoProxy::default(),
            direct_loopback: false,
        })
    }

    /// Connections to `https://` agents through the proxy at `url` (same form as
    /// [`ProxyConfig::new`]), replacing any proxy set for them before.
    pub fn https_proxy(mut self, url: &str) -> Result<ProxyConfig, EngineError> {
        self.https = Some(
            Proxy::parse(url).map_err(|e| EngineError::Proxy(format!("HTTPS proxy URL: {e}")))?,
        );
        Ok(self)
    }

    /// Connections to `http://` agents through the proxy at `url` (same form as
    /// [`ProxyConfig::new`]), replacing any proxy set for them before.
    pub fn http_proxy(mut self, url: &str) -> Result<ProxyConfig, EngineError> {
        self.http = Some(
            Proxy::parse(url).map_err(|e| EngineError::Proxy(format!("HTTP proxy URL: {e}")))?,
        );
        Ok(self)
    }

    /// Destinations that bypass the proxy, in curl's `NO_PROXY` syntax (replacing any list
    /// set before): comma-separated entries, `*` for every destination, a domain name
    /// (`example.com` or `.example.com`, both matching the domain and all its subdomains), an
    /// IP address or network (`10.0.0.0/8`, `::1`), each optionally with `:port` to bypass
    /// only that port (`[::1]:8080` for IPv6; `*.example.com` is read as `.example.com`).
    /// An explicit configuration proxies loopback addresses too unless they are listed
    /// (`localhost,127.0.0.1,::1`); one read from the environment never does. Entries that cannot be read are ignored, as curl
    /// does.
    pub fn no_proxy(mut self, list: &str) -> ProxyConfig {
        self.no_proxy = NoProxy::parse(list);
        self
    }

    /// The proxies of the process environment, as curl reads them: `https_proxy` (then
    /// `HTTPS_PROXY`) for `https://` agents, `http_proxy` (then `HTTP_PROXY`) for `http://`
    /// agents, `all_proxy` (then `ALL_PROXY`) for either when its own variable is unset, and
    /// `no_proxy` (then `NO_PROXY`) for the bypass list ([`ProxyConfig::no_proxy`]); loopback
    /// destinations (`localhost`, `127.0.0.0/8`, `::1`) always connect directly. Empty
    /// variables count as unset; without any, this is [`ProxyConfig::none`]. A variable holding
    /// an unusable URL (another scheme than `http://`, no host, a bad port) is an error naming
    /// the variable, never a silent direct connection.
    pub fn from_env() -> Result<ProxyConfig, EngineError> {
        ProxyConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`ProxyConfig::from_env`] over any variable lookup.
    pub(crate) fn from_lookup(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<ProxyConfig, EngineError> {
        let first = |names: &[&'static str]| {
            names.iter().find_map(|&name| {
                var(name)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (name, v))
            })
        };
        let proxy = |names: &[&'static str]| {
            first(names)
                .map(|(name, value)| {
                    Proxy::parse(&value).map_err(|e| EngineError::Proxy(format!("{name}: {e}")))
                })
                .transpose()
        };
        Ok(ProxyConfig {
            https: proxy(&HTTPS_VARS)?,
            http: proxy(&HTTP_VARS)?,
            no_proxy: first(&NO_PROXY_VARS)
                .map(|(_, v)| NoProxy::parse(&v))
                .unwrap_or_default(),
            direct_loopback: true,
        })
    }

    /// Whether connections to `host:port` bypass the proxy: listed in
    /// [`ProxyConfig::no_proxy`], or a loopback destination (`localhost`, `127.0.0.0/8`,
    /// `::1`) of a configuration read from the environment.
    pub fn bypasses(&self, host: &str, port: u16) -> bool {
        (self.direct_loopback && is_loopback(host)) || self.no_proxy.matches(host, port)
    }

    /// The proxy a connection to the origin goes through, if any.
    pub(crate) fn proxy_for(&self, https: bool, host: &str, port: u16) -> Option<&Proxy> {
        let proxy = if https { &self.https } else { &self.http };
        proxy.as_ref().filter(|_| !self.bypasses(host, port))
    }
}

/// `localhost` (and its subdomains) or a loopback IP literal.
fn is_loopback(host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Proxy {
    /// Reads `[http://][user[:password]@]host[:port][/]`. Errors never repeat the URL, which
    /// may hold the password.
    fn parse(url: &str) -> Result<Proxy, String> {
        let url = url.trim();
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => {
                return Err(format!(
                    "unsupported proxy scheme {scheme:?} (only http:// proxies are supported)"
                ));
            }
            None => url,
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport).ok_or("the proxy URL has a bad port")?;
        if host.is_empty() {
            return Err("the proxy URL has no host".into());
        }
        let authorization = userinfo.map(|userinfo| {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            let pair = [percent_decode(user), percent_decode(password)].join(":");
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        Ok(Proxy {
            host: host.to_owned(),
            port: port.unwrap_or(1080),
            authorization,
        })
    }

    /// Opens a TCP connection to the proxy and a `CONNECT` tunnel through it to `host:port`.
    pub(crate) async fn tunnel<R: Runtime>(
        &self,
        host: &str,
        port: u16,
    ) -> Result<R::TcpStream, Failure> {
        let proxy = authority(&self.host, self.port);
        let mut tcp = R::connect(&self.host, self.port).await.map_err(|e| {
            (
                TransportErrorKind::Connect,
                format!("cannot reach the proxy {proxy}: {}", describe(&e)),
            )
        })?;
        handshake(&mut tcp, &proxy, self.authorization.as_deref(), host, port).await?;
        tracing::debug!(%proxy, target = %authority(host, port), "proxy tunnel open");
        Ok(tcp)
    }
}

/// Asks the proxy on `io` for a tunnel to `host:port` and reads its answer. Anything but a 2xx
/// status is a [`TransportErrorKind::Connect`] failure naming the proxy and the status: the
/// request never reached the agent.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    proxy: &str,
    authorization: Option<&str>,
    host: &str,
    port: u16,
) -> Result<(), Failure> {
    let target = authority(host, port);
    let broken = |e: std::io::Error| {
        (
            TransportErrorKind::Connect,
            format!(
                "the proxy {proxy} broke the tunnel request to {target}: {}",
                describe(&e)
            ),
        )
    };
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(value) = authorization {
        head.push_str("Proxy-Authorization: ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    io.write_all(head.as_bytes()).await.map_err(broken)?;
    io.flush().await.map_err(broken)?;
    // One byte at a time: what follows the head belongs to the tunnel (TLS, HTTP/2), so it
    // must not be read here. The head is a few dozen bytes, once per connection.
    let mut response = Vec::new();
    let mut byte = [0u8; 1];
    while !response.ends_with(b"\r\n\r\n") {
        if response.len() >= MAX_RESPONSE_HEAD {
            return Err((
                TransportErrorKind::Connect,
                format!(
                    "the proxy {proxy} sent an oversized answer to the tunnel request to {target}"
                ),
            ));
        }
        if io.read(&mut byte).await.map_err(broken)? == 0 {
            return Err((
                TransportErrorKind::Connect,
                format!(
                    "the proxy {proxy} closed the connection instead of opening a tunnel to {target}"
                ),
            ));
        }
        response.push(byte[0]);
    }
    let status_line = String::from_utf8_lossy(&response);
    let status_line = status_line.lines().next().unwrap_or_default();
    let mut words = status_line.splitn(3, ' ');
    let version = words.next().unwrap_or_default();
    let status = words.next().and_then(|s| s.parse::<u16>().ok());
    let reason = words.next().unwrap_or_default().trim();
    match status {
        Some(200..=299) if version.starts_with("HTTP/1.") => Ok(()),
        Some(status) if version.starts_with("HTTP/1.") => {
            let hint = match (status, authorization.is_some()) {
                (407, false) => {
                    " (proxy authentication required: give the proxy URL a user and password)"
                }
                (407, true) => {
                    " (proxy authentication required: the proxy rejected the credentials)"
                }
                _ => "",
            };
            Err((
                TransportErrorKind::Connect,
                format!(
                    "the proxy {proxy} refused the tunnel to {target}: {status} {reason}{hint}"
                ),
            ))
        }
        _ => Err((
            TransportErrorKind::Connect,
            format!("the proxy {proxy} did not answer the tunnel request to {target} with HTTP"),
        )),
    }
}

/// The largest `CONNECT` answer head read from a proxy.
const MAX_RESPONSE_HEAD: usize = 16 * 1024;

/// `host:port`, with an IPv6 address in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `host[:port]` or `[v6][:port]` → (host without brackets, port); `None` for a bad port.
fn split_host_port(s: &str) -> Option<(&str, Option<u16>)> {
    if let Some(inner) = s.strip_prefix('[') {
        let (host, after) = inner.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(port) => Some((host, Some(port.parse().ok()?))),
            None if after.is_empty() => Some((host, None)),
            None => None,
        };
    }
    // A bare IPv6 address (several colons) has no port.
    if s.matches(':').count() > 1 {
        return Some((s, None));
    }
    match s.split_once(':') {
        Some((host, port)) => Some((host, Some(port.parse().ok()?))),
        None => Some((s, None)),
    }
}

/// `%XX` decoding of a URL's user or password (invalid escapes stay as they are).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The bypass list ([`ProxyConfig::no_proxy`]).
#[derive(Clone, Debug, Default)]
struct NoProxy(Vec<Bypass>);

#[derive(Clone, Debug, PartialEq)]
enum Bypass {
    /// `*`.
    All,
    /// A domain name and its subdomains (lowercase, without leading or trailing dots).
    Domain(String, Option<u16>),
    /// An address or network.
    Network(IpAddr, u8, Option<u16>),
}

impl NoProxy {
    fn parse(list: &str) -> NoProxy {
        NoProxy(list.split(',').filter_map(Bypass::parse).collect())
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.0.iter().any(|bypass| match bypass {
            Bypass::All => true,
            Bypass::Domain(name, p) => {
                p.is_none_or(|p| p == port)
                    && (host == *name
                        || host
                            .strip_suffix(name.as_str())
                            .is_some_and(|rest| rest.ends_with('.')))
            }
            Bypass::Network(net, prefix, p) => {
                p.is_none_or(|p| p == port) && ip.is_some_and(|ip| in_network(ip, *net, *prefix))
            }
        })
    }
}

impl Bypass {
    fn parse(entry: &str) -> Option<Bypass> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        if entry == "*" {
            return Some(Bypass::All);
        }
        // A network: address/prefix, never with a port.
        if let Some((addr, prefix)) = entry.split_once('/') {
            let addr: IpAddr = addr.trim_matches(['[', ']']).parse().ok()?;
            let prefix: u8 = prefix.parse().ok()?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            return (prefix <= max).then_some(Bypass::Network(addr, prefix, None));
        }
        let (host, port) = split_host_port(entry)?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            let bits = if ip.is_ipv4() { 32 } else { 128 };
            return Some(Bypass::Network(ip, bits, port));
        }
        // `*.example.com`, which curl does not know but other tools write, means the same as
        // `.example.com` rather than nothing.
        let host = host.strip_prefix("*.").unwrap_or(host);
        let name = host
            .trim_start_matches('.')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        (!name.is_empty()).then_some(Bypass::Domain(name, port))
    }
}

fn in_network(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bypass(list: &str, host: &str, port: u16) -> bool {
        NoProxy::parse(list).matches(host, port)
    }

    #[test]
    fn no_proxy_follows_curl() {
        assert!(bypass("*", "anything.example", 443));
        assert!(bypass("example.com", "example.com", 443));
        assert!(bypass("example.com", "api.example.com", 443));
        assert!(bypass(".example.com", "example.com", 443));
        assert!(bypass(".example.com", "a.b.example.com", 80));
        assert!(bypass("EXAMPLE.com.", "Api.Example.COM", 80));
        assert!(bypass("*.example.com", "api.example.com", 80));
        assert!(bypass("*.example.com", "example.com", 80));
        assert!(!bypass("example.com", "notexample.com", 443));
        assert!(!bypass("example.com", "example.org", 443));
        assert!(!bypass("api.example.com", "example.com", 443));
        assert!(bypass(" foo , example.com:8443 ", "x.example.com", 8443));
        assert!(!bypass("example.com:8443", "example.com", 443));
        assert!(bypass("127.0.0.1", "127.0.0.1", 9000));
        assert!(!bypass("127.0.0.1", "127.0.0.2", 9000));
        assert!(bypass("127.0.0.1:9000", "127.0.0.1", 9000));
        assert!(!bypass("127.0.0.1:9000", "127.0.0.1", 9001));
        assert!(bypass("10.0.0.0/8", "10.20.30.40", 1));
        assert!(!bypass("10.0.0.0/8", "11.0.0.1", 1));
        assert!(bypass("0.0.0.0/0", "1.2.3.4", 1));
        assert!(bypass("::1", "::1", 1));
        assert!(bypass("::1", "[::1]", 1));
        assert!(bypass("[::1]:8080", "::1", 8080));
        assert!(!bypass("[::1]:8080", "::1", 8081));
        assert!(bypass("fd00::/8", "fd12::1", 1));
        assert!(!bypass("fd00::/8", "fe80::1", 1));
        // Loopback is proxied unless listed; an IP entry never matches a name.
        assert!(!bypass("example.com", "127.0.0.1", 80));
        assert!(!bypass("127.0.0.1", "localhost", 80));
        assert!(!bypass("", "example.com", 80));
        // Unreadable entries are skipped, the rest still apply.
        assert!(bypass(
            "10.0.0.0/99,host:notaport,.,example.com",
            "example.com",
            1
        ));
        assert!(!bypass("10.0.0.0/99,host:notaport,.", "host", 1));
    }

    fn env(vars: &[(&str, &str)]) -> Result<ProxyConfig, EngineError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ProxyConfig::from_lookup(|name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn target(config: &ProxyConfig, https: bool, host: &str, port: u16) -> Option<String> {
        config
            .proxy_for(https, host, port)
            .map(|p| authority(&p.host, p.port))
    }

    #[test]
    fn the_environment_never_proxies_loopback_but_an_explicit_proxy_does() {
        let from_env = env(&[("all_proxy", "http://p:3128")]).unwrap();
        for host in [
            "127.0.0.1",
            "127.8.9.10",
            "[::1]",
            "localhost",
            "LOCALHOST.",
            "a.localhost",
        ] {
            assert_eq!(target(&from_env, false, host, 80), None, "{host}");
            assert!(from_env.bypasses(host, 80), "{host}");
        }
        for host in ["10.0.0.1", "localhost.example", "notlocalhost", "[::2]"] {
            assert_eq!(
                target(&from_env, true, host, 443).as_deref(),
                Some("p:3128"),
                "{host}"
            );
        }
        let explicit = ProxyConfig::new("http://p:3128").unwrap();
        assert_eq!(
            target(&explicit, false, "127.0.0.1", 80).as_deref(),
            Some("p:3128"),
            "an explicit proxy is asked to reach a loopback agent too"
        );
        assert!(!explicit.bypasses("localhost", 80));
    }

    #[test]
    fn environment_variables_follow_curl_precedence() {
        let none = env(&[]).unwrap();
        assert_eq!(target(&none, true, "a.example", 443), None);
        assert_eq!(target(&none, false, "a.example", 80), None);

        let c = env(&[
            ("HTTPS_PROXY", "http://upper:1"),
            ("https_proxy", "http://lower:2"),
            ("HTTP_PROXY", "upper-http:3"),
            ("ALL_PROXY", "http://all:4"),
        ])
        .unwrap();
        assert_eq!(
            target(&c, true, "a.example", 443).as_deref(),
            Some("lower:2")
        );
        assert_eq!(
            target(&c, false, "a.example", 80).as_deref(),
            Some("upper-http:3")
        );

        let c = env(&[("all_proxy", "http://all:4"), ("https_proxy", "  ")]).unwrap();
        assert_eq!(target(&c, true, "a.example", 443).as_deref(), Some("all:4"));
        assert_eq!(target(&c, false, "a.example", 80).as_deref(), Some("all:4"));

        let c = env(&[
            ("https_proxy", "http://p"),
            ("NO_PROXY", "other.example"),
            ("no_proxy", "a.example"),
        ])
        .unwrap();
        assert_eq!(target(&c, true, "a.example", 443), None);
        assert_eq!(
            target(&c, true, "other.example", 443).as_deref(),
            Some("p:1080")
        );

        let c = env(&[("https_proxy", "http://[::1]:3128/")]).unwrap();
        assert_eq!(
            target(&c, true, "a.example", 443).as_deref(),
            Some("[::1]:3128")
        );

        let err = env(&[("HTTPS_PROXY", "socks5://user:hunter2@p:1")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("HTTPS_PROXY") && err.contains("socks5"),
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
        let err = env(&[("http_proxy", "http://user:hunter2@p:notaport")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("http_proxy") && err.contains("port"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert!(env(&[("ALL_PROXY", "http://:8080")]).is_err());
    }

    #[test]
    fn credentials_become_basic_auth_and_never_show() {
        let p = Proxy::parse("http://us%40er:p%3Ass@proxy.example:8080").unwrap();
        assert_eq!(p.host, "proxy.example");
        assert_eq!(p.port, 8080);
        let expected = base64::engine::general_purpose::STANDARD.encode("us@er:p:ss");
        assert_eq!(
            p.authorization.as_deref(),
            Some(format!("Basic {expected}").as_str())
        );
        let config = ProxyConfig::new("http://user:hunter2@proxy.example:8080").unwrap();
        let shown = format!("{config:?}");
        assert!(shown.contains("proxy.example:8080"), "{shown}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("Basic"),
            "{shown}"
        );
        assert!(
            Proxy::parse("http://user@p")
                .unwrap()
                .authorization
                .is_some()
        );
        assert!(Proxy::parse("http://p").unwrap().authorization.is_none());
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }

    /// Runs the handshake against a canned proxy answer; returns what was sent and the result.
    fn handshake_with(answer: &[u8], auth: Option<&str>) -> (String, Result<(), Failure>, Vec<u8>) {
        let mut duplex = Duplex {
            read: futures::io::Cursor::new(answer.to_vec()),
            written: Vec::new(),
        };
        let result = smol::block_on(handshake(&mut duplex, "proxy:1", auth, "::1", 8443));
        let mut rest = Vec::new();
        smol::block_on(duplex.read.read_to_end(&mut rest)).unwrap();
        (String::from_utf8(duplex.written).unwrap(), result, rest)
    }

    struct Duplex {
        read: futures::io::Cursor<Vec<u8>>,
        written: Vec<u8>,
    }

    impl AsyncRead for Duplex {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut [u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            std::pin::Pin::new(&mut self.read).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Duplex {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.written.extend_from_slice(buf);
            std::task::Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_close(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn connect_handshake_reads_only_the_answer_head() {
        let (sent, result, rest) = handshake_with(
            b"HTTP/1.1 200 Connection established\r\nVia: p\r\n\r\n\x16\x03tls",
            Some("Basic abc"),
        );
        assert_eq!(
            sent,
            "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\nProxy-Authorization: Basic abc\r\n\r\n"
        );
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(rest, b"\x16\x03tls", "the tunnel's first bytes stay unread");

        let (sent, result, _) =
            handshake_with(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n", None);
        assert!(!sent.contains("Proxy-Authorization"));
        let (kind, message) = result.unwrap_err();
        assert_eq!(kind, TransportErrorKind::Connect);
        assert!(
            message.contains("proxy:1") && message.contains("407"),
            "{message}"
        );
        assert!(
            message.contains("proxy authentication required"),
            "{message}"
        );

        let (_, result, _) = handshake_with(b"HTTP/1.1 403 Forbidden\r\n\r\n", Some("Basic abc"));
        let (kind, message) = result.unwrap_err();
        assert_eq!(kind, TransportErrorKind::Connect);
        assert!(
            message.contains("403 Forbidden") && !message.contains("abc"),
            "{message}"
        );

        let (_, result, _) = handshake_with(b"HTTP/1.1 200 OK\r\n", None);
        assert!(result.unwrap_err().1.contains("closed the connection"));
        let (_, result, _) = handshake_with(b"SSH-2.0-x\r\n\r\n", None);
        assert!(result.unwrap_err().1.contains("did not answer"));
    }
}
