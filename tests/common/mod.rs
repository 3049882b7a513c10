//! Helpers shared by the integration tests.
// Each test crate compiles this module and uses only part of it.
#![allow(dead_code)]

pub mod confinement;
pub mod encoded;
pub mod frames;
pub mod invariance;
pub mod listener;
pub mod node_report;
pub mod orb;
pub mod peer;
pub mod recorder;
pub mod ros;
