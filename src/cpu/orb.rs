//! PLACEHOLDER: replaced by the ORB reference (helper orb-cpu).
use crate::config::OrbConfig;
use crate::error::Result;
use crate::extractor::Extractor;
use crate::image::GrayImage;
use crate::types::Features;

pub struct OrbExtractor {
    _config: OrbConfig,
}

impl OrbExtractor {
    pub fn new(config: OrbConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { _config: config })
    }
}

impl Extractor for OrbExtractor {
    fn extract(&mut self, _image: &GrayImage) -> Result<Features> {
        todo!("ORB reference")
    }
    fn backend_name(&self) -> &'static str {
        "cpu"
    }
    fn device_name(&self) -> String {
        "cpu".into()
    }
}
