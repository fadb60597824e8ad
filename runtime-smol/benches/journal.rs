//! The cost of durable runs on smol: `cargo bench -p a2at-smol --bench journal`. It prints
//! markdown tables and never asserts a timing; the body is `a2at_tests::journal_bench`.

a2at_tests::smol_test_runtime!(OnSmol);

fn main() {
    a2at_tests::journal_bench::main::<OnSmol>(Vec::new());
}
