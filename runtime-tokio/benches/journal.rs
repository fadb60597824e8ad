//! The cost of durable runs on tokio: `cargo bench -p a2at-tokio --bench journal`, with
//! `--features postgres` also on a throwaway PostgreSQL server (started as in the tests). It
//! prints markdown tables and never asserts a timing; the body is `a2at_tests::journal_bench`.

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);

#[cfg(feature = "postgres")]
fn more() -> (
    Vec<a2at_tests::journal_bench::StoreKind>,
    Option<a2at_tests::pg::PgServer>,
) {
    use std::sync::Arc;
    let Some(server) = a2at_tests::pg::PgServer::start_or_skip() else {
        return (Vec::new(), None);
    };
    let url = server.url();
    let kind = a2at_tests::journal_bench::StoreKind {
        label: "PostgreSQL (loopback, leased)".into(),
        open: Box::new(move |_, _| {
            Arc::new(a2at_tokio::PostgresJournal::connect(&url).expect("postgres journal"))
        }),
    };
    (vec![kind], Some(server))
}

#[cfg(not(feature = "postgres"))]
fn more() -> (Vec<a2at_tests::journal_bench::StoreKind>, Option<()>) {
    (Vec::new(), None)
}

fn main() {
    // The server (when there is one) lives until the bench is done.
    let (stores, _server) = more();
    a2at_tests::journal_bench::main::<OnTokio>(stores);
}
