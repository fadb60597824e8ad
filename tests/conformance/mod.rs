//! The conformance scenarios, compiled once per driver: the including module binds `D`.
//! Add a file here (and a `mod` line) and it runs on every driver.

use super::D;

mod failures;
mod flows;
mod protocol;
mod resilience;
