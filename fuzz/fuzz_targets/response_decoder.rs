//! The response decoder never panics and always ends with exactly one `End` item.
#![no_main]
use a2at_core::a2a::{Binding, CallKind, DecodeLimits, ResponseDecoder, ResponseItem};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let binding = if selector & 1 == 0 { Binding::JsonRpc } else { Binding::HttpJson };
    let kind = match (selector >> 1) % 5 {
        0 => CallKind::SendMessage,
        1 => CallKind::SendStreamingMessage,
        2 => CallKind::GetTask,
        3 => CallKind::CancelTask,
        _ => CallKind::SubscribeToTask,
    };
    let content_type = if selector & 0x40 == 0 { "application/json" } else { "text/event-stream" };
    let status = if selector & 0x80 == 0 { 200 } else { 400 };
    let mut decoder = ResponseDecoder::new(binding, kind, "1", DecodeLimits { max_event_bytes: 4096, max_body_bytes: 65536 });
    decoder.on_head(status, &[("content-type".into(), content_type.into())]);
    let mut out = Vec::new();
    for chunk in body.chunks(7) {
        decoder.on_body(chunk, &mut out);
    }
    decoder.on_end(&mut out);
    let ends = out.iter().filter(|i| matches!(i, ResponseItem::End { .. })).count();
    assert_eq!(ends, 1);
    assert!(matches!(out.last(), Some(ResponseItem::End { .. })));
});
