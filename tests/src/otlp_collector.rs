//! A stand-in for an OpenTelemetry collector: a loopback HTTP/1.1 server on a std thread that
//! accepts OTLP/HTTP protobuf posts, keeps every request (path, headers, raw body) and decodes
//! the spans, for the tests of the `otel` export.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use prost::Message;

/// One HTTP request the collector received.
#[derive(Debug, Clone)]
pub struct CollectorRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The request target, e.g. `/v1/traces`.
    pub path: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

/// One exported span, decoded, with its ids as lowercase hex.
#[derive(Debug, Clone)]
pub struct ExportedSpan {
    /// The span's name.
    pub name: String,
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits.
    pub span_id: String,
    /// 16 hex digits, empty for a root span.
    pub parent_span_id: String,
    /// The OTLP span kind (1 internal, 3 client).
    pub kind: i32,
    /// The attributes, values as text.
    pub attributes: BTreeMap<String, String>,
    /// The OTLP status code (0 unset, 1 ok, 2 error).
    pub status_code: i32,
    /// The status message.
    pub status_message: String,
    /// The `service.name` of the span's resource.
    pub service_name: String,
}

impl ExportedSpan {
    /// The attribute `name` as text; panics naming the span when it is missing.
    pub fn attr(&self, name: &str) -> &str {
        self.attributes
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{} has no {name}: {:?}", self.name, self.attributes))
    }
}

/// The collector stand-in; it serves until the process ends.
#[derive(Debug, Clone)]
pub struct OtlpCollector {
    port: u16,
    received: Arc<Mutex<Vec<CollectorRequest>>>,
}

impl OtlpCollector {
    /// Starts listening on a free loopback port.
    pub fn start() -> OtlpCollector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let store = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let store = store.clone();
                std::thread::spawn(move || serve(stream, &store));
            }
        });
        OtlpCollector { port, received }
    }

    /// The base URL to configure as the OTLP endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<CollectorRequest> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every span of every `POST /v1/traces` received so far, decoded.
    pub fn spans(&self) -> Vec<ExportedSpan> {
        let mut out = Vec::new();
        for req in self.requests() {
            assert_eq!(
                (req.method.as_str(), req.path.as_str()),
                ("POST", "/v1/traces")
            );
            let export = ExportTraceServiceRequest::decode(req.body.as_slice())
                .expect("an OTLP protobuf ExportTraceServiceRequest");
            for rs in export.resource_spans {
                let service_name = rs
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|kv| kv.key == "service.name")
                    .and_then(|kv| kv.value.as_ref())
                    .map(text)
                    .unwrap_or_default();
                for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
                    let status = span.status.unwrap_or_default();
                    out.push(ExportedSpan {
                        name: span.name,
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        kind: span.kind,
                        attributes: span
                            .attributes
                            .iter()
                            .map(|kv| {
                                (
                                    kv.key.clone(),
                                    kv.value.as_ref().map(text).unwrap_or_default(),
                                )
                            })
                            .collect(),
                        status_code: status.code,
                        status_message: status.message,
                        service_name: service_name.clone(),
                    });
                }
            }
        }
        out
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(v: &AnyValue) -> String {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// Serves one keep-alive connection: each request with a `Content-Length` body gets an empty
/// 200 (an empty protobuf `ExportTraceServiceResponse`: everything accepted).
fn serve(stream: TcpStream, store: &Mutex<Vec<CollectorRequest>>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let path = parts.next().unwrap_or_default().to_owned();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((n, v)) = h.split_once(':') {
                headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let len = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(CollectorRequest {
                method,
                path,
                headers,
                body,
            });
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
