//! The two seams every backend implements: extraction and matching.

use crate::error::Result;
use crate::image::GrayImage;
use crate::types::{Features, Match};

/// Turns a grey frame into keypoints and descriptors.
///
/// An extractor owns whatever it reuses between frames (pyramids, GPU buffers), so
/// consecutive frames of one size allocate nothing.
pub trait Extractor: Send {
    fn extract(&mut self, image: &GrayImage) -> Result<Features>;

    /// `"cpu"` or `"cuda"`, as written in outputs.
    fn backend_name(&self) -> &'static str;

    /// The device that runs it, e.g. the GPU's name or `"cpu (16 threads)"`.
    fn device_name(&self) -> String;
}

/// Finds correspondences between two feature sets of the same descriptor kind.
pub trait Matcher: Send {
    /// Matches for `query` against `train`; `Match::query` indexes `query`.
    fn match_features(&mut self, query: &Features, train: &Features) -> Result<Vec<Match>>;
}
