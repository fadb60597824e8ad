//! One HTTP exchange with an agent, the same for workflow subtasks and for the extension
//! operations: the request the driver transmits, built from a call and the agent's chosen
//! interface, and the decoding of the response inputs that come back for it.

use core::time::Duration;
use std::sync::Arc;

use crate::a2a::grpc::GrpcEncodeError;
use crate::a2a::{
    A2aCall, DecodeLimits, ResponseDecoder, ResponseItem, StreamResponse, encode_call,
};
use crate::agents::AgentEntry;
use crate::ids::OpId;
use crate::io::{Correlation, HttpRequest, Input, OpPurpose};
use crate::tracectx::TraceContext;

/// What opening an exchange needs besides the call itself.
pub(crate) struct ExchangeSpec<'a> {
    /// The exchange's id, unique within its machine.
    pub op: OpId,
    /// The JSON-RPC id of the request (ignored by the other bindings); the decoder keeps it
    /// to match the answer.
    pub rpc_id: String,
    /// Why the exchange is sent.
    pub purpose: OpPurpose,
    /// Extensions activated on the request (the `A2A-Extensions` header or metadata).
    pub extensions: &'a [String],
    /// Time left for the exchange; gRPC sends it as `grpc-timeout`.
    pub timeout: Option<Duration>,
    /// Bounds on what the decoder accepts.
    pub limits: DecodeLimits,
    /// Local correlation fields for logs, shared with the operation's own record.
    pub correlation: Arc<Correlation>,
    /// The trace the request joins; its `traceparent` names this exchange's span.
    pub trace: &'a TraceContext,
}

/// Encodes `call` for `agent`'s interface: the request to transmit and the decoder of its
/// answer. Fails only for a message the binding cannot carry.
pub(crate) fn open(
    agent: &AgentEntry,
    call: &A2aCall<'_>,
    spec: ExchangeSpec<'_>,
) -> Result<(HttpRequest, ResponseDecoder), GrpcEncodeError> {
    let mut encoded = encode_call(
        &agent.endpoint,
        call,
        &spec.rpc_id,
        spec.extensions,
        spec.timeout,
    )?;
    spec.trace.push_headers(spec.op, &mut encoded.headers);
    let decoder = ResponseDecoder::new(
        agent.endpoint.binding,
        call.kind(),
        spec.rpc_id,
        spec.limits,
    );
    let request = HttpRequest {
        op: spec.op,
        agent: agent.name.clone(),
        purpose: spec.purpose,
        method: encoded.method,
        url: encoded.url,
        headers: encoded.headers,
        body: encoded.body,
        streaming: call.kind().is_streaming(),
        http2: agent.endpoint.binding.needs_http2(),
        correlation: spec.correlation,
    };
    Ok((request, decoder))
}

/// Runs one response input (head, body chunk, trailers or end) through its exchange's decoder
/// and returns the items it completed; other inputs give nothing. The input is taken: a body
/// chunk moves into the decoder's buffer.
pub(crate) fn decode(decoder: &mut ResponseDecoder, input: Input) -> Vec<ResponseItem> {
    let mut items = Vec::new();
    match input {
        Input::ResponseHead {
            status, headers, ..
        } => decoder.on_head(status, &headers),
        Input::ResponseBody { chunk, .. } => decoder.on_body_owned(chunk, &mut items),
        Input::ResponseTrailers { trailers, .. } => decoder.on_trailers(&trailers, &mut items),
        Input::ResponseEnd { .. } => {
            // A unary answer ends with its one event and the end mark; an item is a few
            // hundred bytes, so the default first room for four would be half unused.
            items.reserve_exact(2);
            decoder.on_end(&mut items);
        }
        _ => {}
    }
    items
}

/// The exchange a response input belongs to, if it is one.
pub(crate) fn response_op(input: &Input) -> Option<OpId> {
    match input {
        Input::ResponseHead { op, .. }
        | Input::ResponseBody { op, .. }
        | Input::ResponseTrailers { op, .. }
        | Input::ResponseEnd { op } => Some(*op),
        _ => None,
    }
}

/// The identity rule for one event of an exchange on `context_id`: a context id, when present,
/// must be ours; a task id must be non-blank and never change. Learns the task id from the first event that
/// names one. `Err` carries the detail of what changed.
pub(crate) fn track_identity(
    event: &StreamResponse,
    context_id: &str,
    remote_task_id: &mut Option<String>,
) -> Result<(), String> {
    let (task_id, event_context) = match event {
        StreamResponse::Task(t) => (Some(t.id.as_str()), t.context_id.as_deref()),
        StreamResponse::StatusUpdate(u) => (Some(u.task_id.as_str()), u.context_id.as_deref()),
        StreamResponse::ArtifactUpdate(u) => (Some(u.task_id.as_str()), u.context_id.as_deref()),
        StreamResponse::Message(m) => (m.task_id.as_deref(), m.context_id.as_deref()),
    };
    if let Some(ctx) = event_context.filter(|c| !c.is_empty()) {
        if ctx != context_id {
            return Err(format!(
                "context {ctx} differs from this exchange's context {context_id}"
            ));
        }
    }
    if let Some(id) = task_id {
        if id.trim().is_empty() {
            return Err("remote task id is blank".into());
        }
        match remote_task_id {
            Some(known) if known != id => {
                return Err(format!("remote task id changed from {known} to {id}"));
            }
            Some(_) => {}
            None => *remote_task_id = Some(id.to_owned()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{Binding, CallKind, DecodeLimits};
    use crate::io::HeaderField;

    const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":"7","result":{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}}}"#;

    fn decoder(max_body_bytes: usize) -> ResponseDecoder {
        let limits = DecodeLimits {
            max_body_bytes,
            ..DecodeLimits::default()
        };
        ResponseDecoder::new(Binding::JsonRpc, CallKind::SendMessage, "7", limits)
    }

    fn head() -> Vec<HeaderField> {
        vec![("content-type".into(), "application/json".into())]
    }

    /// `body` cut at `cuts` (ascending offsets inside it).
    fn pieces<'b>(body: &'b [u8], cuts: &[usize]) -> impl Iterator<Item = &'b [u8]> {
        let ends = cuts.iter().copied().chain([body.len()]);
        let starts = [0].into_iter().chain(cuts.iter().copied());
        starts.zip(ends).map(|(from, to)| &body[from..to])
    }

    /// The items of `body` cut at `cuts`, its chunks moved in as inputs.
    fn moved_in(body: &[u8], cuts: &[usize], max_body_bytes: usize) -> String {
        let mut d = decoder(max_body_bytes);
        let op = OpId(1);
        let mut items = decode(
            &mut d,
            Input::ResponseHead {
                op,
                status: 200,
                headers: head(),
            },
        );
        for piece in pieces(body, cuts) {
            let chunk = piece.to_vec();
            items.extend(decode(&mut d, Input::ResponseBody { op, chunk }));
        }
        items.extend(decode(&mut d, Input::ResponseEnd { op }));
        format!("{items:?}")
    }

    /// The items of `body` cut at `cuts`, its chunks fed by reference.
    fn fed_by_reference(body: &[u8], cuts: &[usize], max_body_bytes: usize) -> String {
        let mut d = decoder(max_body_bytes);
        let mut items = Vec::new();
        d.on_head(200, &head());
        for piece in pieces(body, cuts) {
            d.on_body(piece, &mut items);
        }
        d.on_end(&mut items);
        format!("{items:?}")
    }

    /// A body whose chunks move into the decoder reads as the same body fed by reference,
    /// however it is cut: the first chunk becomes the buffer, the next ones are added to it.
    #[test]
    fn a_body_moved_in_reads_as_one_fed_by_reference_however_it_is_cut() {
        let len = ANSWER.len();
        for cuts in [
            vec![],
            vec![1],
            vec![30, 31, 90],
            vec![len - 1],
            (1..len).collect(),
        ] {
            assert_eq!(pieces(ANSWER, &cuts).count(), cuts.len() + 1);
            assert_eq!(pieces(ANSWER, &cuts).collect::<Vec<_>>().concat(), ANSWER);
            let moved = moved_in(ANSWER, &cuts, usize::MAX);
            assert!(moved.contains("state: Completed"), "{cuts:?}: {moved}");
            assert_eq!(
                moved,
                fed_by_reference(ANSWER, &cuts, usize::MAX),
                "{cuts:?}"
            );
        }
    }

    /// A first chunk larger than the body limit is refused, not kept as the buffer; a body
    /// that reaches the limit over several chunks is refused as well.
    #[test]
    fn a_body_over_the_limit_is_refused_whether_its_first_chunk_is_or_a_later_one() {
        for cuts in [vec![], vec![60]] {
            let moved = moved_in(ANSWER, &cuts, 80);
            assert!(moved.contains("a2a.body_too_large"), "{cuts:?}: {moved}");
            assert!(!moved.contains("state: Completed"), "{cuts:?}: {moved}");
            assert_eq!(moved, fed_by_reference(ANSWER, &cuts, 80), "{cuts:?}");
        }
    }
}
