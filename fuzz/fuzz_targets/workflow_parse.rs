//! Workflow parsing and validation never panic, and a valid workflow round-trips.
#![no_main]
use a2at_core::workflow::{ValidatedWorkflow, Workflow};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(wf) = Workflow::from_json_str(text) {
        if let Ok(valid) = ValidatedWorkflow::new(wf.clone()) {
            assert_eq!(valid.topological_order().len(), valid.len());
            let again = Workflow::from_json_value(&wf.to_json()).expect("canonical form parses");
            assert_eq!(again, wf);
        }
    }
});
