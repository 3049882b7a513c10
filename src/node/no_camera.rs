//! Builds without the `camera` feature: camera input cannot be opened.

use std::time::Instant;

use super::source::{FrameSource, Next};
use crate::config::InputConfig;
use crate::error::{ConfigError, Error, Result};

/// Never exists in this build.
pub enum CameraSource {}

impl CameraSource {
    pub fn open(_input: &InputConfig, _max_image_pixels: u64) -> Result<Self> {
        Err(Error::Config(ConfigError::Invalid {
            name: "input.source".into(),
            reason: "this build has no camera input: enable the `camera` feature".into(),
        }))
    }
}

impl FrameSource for CameraSource {
    fn next(&mut self, _deadline: Instant) -> Result<Next> {
        match *self {}
    }

    fn dropped(&self) -> u64 {
        match *self {}
    }
}
