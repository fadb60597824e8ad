//! The cost of durable runs on tokio: `cargo bench -p a2at-tokio --bench journal`. It prints
//! markdown tables and never asserts a timing; the body is `a2at_tests::journal_bench`.

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);

fn main() {
    a2at_tests::journal_bench::main::<OnTokio>();
}
