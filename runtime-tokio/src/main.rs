//! The `a2at` command-line tool.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("a2at: the command-line tool is not built yet");
    std::process::exit(2);
}
