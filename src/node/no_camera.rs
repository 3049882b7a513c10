//! Builds without the `camera` feature: camera input cannot be opened.

use std::sync::atomic::AtomicBool;

use super::{Node, Outputs};
use crate::config::Config;
use crate::error::{Error, Result};

/// Never exists in this build.
pub enum CameraInput {}

impl CameraInput {
    pub fn open(_config: &Config) -> Result<Self> {
        Err(Error::InvalidParameter {
            name: "input.source".into(),
            reason: "this build has no camera input: enable the `camera` feature".into(),
        })
    }

    pub fn run(self, _node: &mut Node, _outputs: &dyn Outputs, _stop: &AtomicBool) -> Result<()> {
        match self {}
    }
}
