//! What every [`JournalStore`] must do, checked the same way for each store: runs are created
//! once, appends continue the journal exactly (a duplicate, a gap, an unknown or a finished
//! run is refused with its typed error and changes nothing), and a load or a listing shows
//! what was appended.

use a2at_driver::{JournalError, JournalStore, RunSummary};

/// `v` as owned journal lines.
pub fn lines(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs the contract on an empty `store`, leaving run `r1` with lines `a`, `b`, `c`, finished.
/// `before_finish` sees the run's listing while it is still open (for a store's own fields,
/// such as a lease); the listing after the finish is returned for the same purpose.
pub fn check_store_contract(
    j: &dyn JournalStore,
    before_finish: impl FnOnce(&RunSummary),
) -> RunSummary {
    j.create_run("r1", "H", 42).expect("create");
    assert_eq!(
        j.create_run("r1", "H", 42),
        Err(JournalError::AlreadyExists {
            run_id: "r1".into()
        })
    );
    j.append("r1", 1, &lines(&["a", "b"])).expect("append");
    j.append("r1", 3, &lines(&["c"])).expect("append");
    // A duplicate and a gap are refused, and leave the journal as it was.
    assert!(matches!(
        j.append("r1", 3, &lines(&["x"])),
        Err(JournalError::OutOfOrder {
            expected: 4,
            got: 3,
            ..
        })
    ));
    assert!(matches!(
        j.append("r1", 6, &lines(&["x"])),
        Err(JournalError::OutOfOrder {
            expected: 4,
            got: 6,
            ..
        })
    ));
    assert!(matches!(
        j.append("nope", 1, &lines(&["x"])),
        Err(JournalError::UnknownRun { .. })
    ));
    assert!(matches!(
        j.load("nope"),
        Err(JournalError::UnknownRun { .. })
    ));
    let run = j.load("r1").expect("load");
    assert_eq!(run.header, "H");
    assert_eq!(run.started_at_ms, 42);
    assert_eq!(run.lines, lines(&["a", "b", "c"]));
    assert!(!run.finished);
    let listed = j.list().expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].lines, 3);
    assert!(!listed[0].finished);
    before_finish(&listed[0]);
    j.mark_finished("r1").expect("finish");
    assert!(matches!(
        j.append("r1", 4, &lines(&["d"])),
        Err(JournalError::Finished { .. })
    ));
    let listed = j.list().expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].lines, 3);
    assert!(listed[0].finished);
    listed.into_iter().next().expect("one run")
}
