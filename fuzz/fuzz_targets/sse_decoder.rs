//! The SSE decoder never panics, whatever the bytes and however they are split.
#![no_main]
use a2at_core::a2a::SseDecoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| usize::from(*b).max(1));
    let mut decoder = SseDecoder::new(4096);
    let mut out = Vec::new();
    for chunk in data.chunks(split) {
        let _ = decoder.push(chunk, &mut out);
    }
    let _ = decoder.finish(&mut out);
});
