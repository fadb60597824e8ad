//! Reading and writing trace files (the core only formats and parses lines).

use std::path::{Path, PathBuf};

use a2at_core::trace::{Trace, parse_trace, replay};

/// `tests/fixtures/traces`, the golden trace folder.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/traces")
}

/// Every `*.jsonl` file in `dir`, sorted by name.
pub fn trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// Reads and parses a trace file; panics naming the file and line on error.
pub fn read_trace(path: &Path) -> Trace {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse_trace(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses a trace a run recorded and replays it through a fresh core; panics naming `who` and
/// the divergence when the core's outputs differ from the recorded ones.
pub fn assert_replays(text: &str, who: &str) {
    let parsed = parse_trace(text)
        .unwrap_or_else(|e| panic!("{who}: the recorded trace does not parse: {e}"));
    if let Err(divergence) = replay(&parsed) {
        panic!("{who}: the recorded trace does not replay: {divergence}");
    }
}

/// Writes trace text to `path`, creating the folder.
pub fn write_trace(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Saves the trace of a failing case under `target/a2at-failures/<name>.jsonl` and returns the
/// path, so a failure message can point at a reproducer.
pub fn save_failure(name: &str, text: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = target.join("a2at-failures").join(format!("{name}.jsonl"));
    write_trace(&path, text);
    path
}
