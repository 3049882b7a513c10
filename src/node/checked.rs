//! A frame's pixels once the node has checked them: ready for the extractor, and
//! kept beside its features for the debug image.

use std::borrow::Cow;
use std::time::Instant;

use crate::error::Result;
use crate::extractor::Extractor;
use crate::image::GrayImage;
use crate::msgs::{self, Header, Image};
use crate::types::Features;

use super::source::Camera;

pub enum CheckedPixels {
    Gray(GrayImage),
    /// A `sensor_msgs/Image` whose fields `msgs::raw_frame` accepted: the extractor
    /// converts it (on the GPU, without a copy on the CPU).
    Raw(Image),
}

impl CheckedPixels {
    /// Hands the frame to `extractor` ([`Extractor::submit_frame`]): the features of
    /// the oldest frame in flight come back once done.
    pub fn submit(&self, extractor: &mut dyn Extractor) -> Result<Option<Features>> {
        match self {
            CheckedPixels::Gray(gray) => extractor.submit(gray),
            CheckedPixels::Raw(image) => extractor.submit_frame(&msgs::raw_frame(image, u64::MAX)?),
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

/// A checked frame handed to the extractor, waiting for its features.
pub struct Submitted {
    pub camera: Camera,
    pub header: Header,
    pub pixels: CheckedPixels,
    /// When the node's process got it: the start of its latency.
    pub received: Instant,
}
