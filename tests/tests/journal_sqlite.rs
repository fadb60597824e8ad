//! `SqliteJournal` keeps the journal store contract, and the file is the store.

use a2at_driver::{JournalStore, SqliteJournal};
use a2at_tests::store_contract::check_store_contract;

#[test]
fn appends_in_order_and_refuses_duplicates_gaps_and_unknown_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let j = SqliteJournal::open(dir.path().join("j.db")).expect("open");
    check_store_contract(&j, |_| {});
    // The file is the store: a second connection reads the same journal.
    drop(j);
    let again = SqliteJournal::open(dir.path().join("j.db")).expect("reopen");
    assert_eq!(again.load("r1").expect("load").lines.len(), 3);
}
