//! Runs every fuzz body over every committed corpus file (`tests/fuzz/corpus/<target>/`), plus
//! a small deterministic pseudo-random sweep, so `cargo test` exercises the fuzz targets without
//! cargo-fuzz.

use std::path::Path;

use a2at_tests::fuzz_bodies;

type Body = fn(&[u8]);

const TARGETS: [(&str, Body); 6] = [
    ("sse_decoder", fuzz_bodies::sse_decoder),
    ("response_decoder", fuzz_bodies::response_decoder),
    ("grpc_decoder", fuzz_bodies::grpc_decoder),
    ("workflow_parse", fuzz_bodies::workflow_parse),
    ("trace_lines", fuzz_bodies::trace_lines),
    ("run_inputs", fuzz_bodies::run_inputs),
];

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn every_body_runs_over_every_corpus_file() {
    for (target, body) in TARGETS {
        let files = corpus(target);
        assert!(!files.is_empty(), "no seed files for {target}");
        for (name, data) in files {
            let caught = std::panic::catch_unwind(|| body(&data));
            assert!(caught.is_ok(), "{target} panicked on {name}");
        }
    }
}

#[test]
fn run_inputs_survives_a_pseudo_random_sweep() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for case in 0..400 {
        let len = (next() % 300) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let caught = std::panic::catch_unwind(|| fuzz_bodies::run_inputs(&data));
        assert!(
            caught.is_ok(),
            "run_inputs panicked on sweep case {case}: {data:?}"
        );
        fuzz_bodies::trace_lines(&data);
    }
}
