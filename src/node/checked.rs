//! A frame's pixels once the node has checked them: ready for the extractor, and
//! kept beside its features for the debug image.

use std::borrow::Cow;

use crate::error::Result;
use crate::extractor::Extractor;
use crate::image::GrayImage;
use crate::msgs::{self, Image};
use crate::types::Features;

pub enum CheckedPixels {
    Gray(GrayImage),
    /// A `sensor_msgs/Image` whose fields `msgs::raw_frame` accepted: the extractor
    /// converts it (on the GPU, without a copy on the CPU).
    Raw(Image),
}

impl CheckedPixels {
    pub fn extract(&self, extractor: &mut dyn Extractor) -> Result<Features> {
        match self {
            CheckedPixels::Gray(gray) => extractor.extract(gray),
            CheckedPixels::Raw(image) => {
                extractor.extract_frame(&msgs::raw_frame(image, u64::MAX)?)
            }
        }
    }

    /// The frame in grey, converted on the CPU if it came raw (only a debug image
    /// needs that).
    pub fn gray(&self) -> Result<Cow<'_, GrayImage>> {
        Ok(match self {
            CheckedPixels::Gray(gray) => Cow::Borrowed(gray),
            CheckedPixels::Raw(image) => Cow::Owned(msgs::gray_from_image(image, u64::MAX)?),
        })
    }
}
