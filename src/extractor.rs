//! The two seams every backend implements: extraction and matching.

use crate::config::MatchConfig;
use crate::error::{Error, FeaturesError, Result};
use crate::image::{GrayImage, RawFrame};
use crate::types::{DescriptorKind, Features, Match};

/// Turns a grey frame into keypoints and descriptors.
///
/// An extractor owns whatever it reuses between frames (pyramids, GPU buffers), so
/// consecutive frames of one size allocate nothing.
pub trait Extractor: Send {
    fn extract(&mut self, image: &GrayImage) -> Result<Features>;

    /// Extracts from a frame in any camera encoding, converted to grey as
    /// `GrayImage::from_raw` converts it. Backends that can convert where they extract
    /// (the GPU) take the frame as it is and skip the copy.
    fn extract_frame(&mut self, frame: &RawFrame<'_>) -> Result<Features> {
        self.extract(&GrayImage::from_raw(frame)?)
    }

    /// Starts extracting `frame` and returns the features of the oldest frame submitted
    /// and not yet returned, once it is done: this frame itself on a backend that works
    /// a frame at a time (the default), the frame before it where this frame's copy and
    /// upload overlap that frame's computation (CUDA ORB). Features come back in the
    /// order the frames went in; [`finish_frame`](Self::finish_frame) returns the ones
    /// still in flight. After an error no frame is in flight.
    fn submit_frame(&mut self, frame: &RawFrame<'_>) -> Result<Option<Features>> {
        self.extract_frame(frame).map(Some)
    }

    /// [`submit_frame`](Self::submit_frame) for a grey image, as [`extract`](Self::extract)
    /// is [`extract_frame`](Self::extract_frame) for one.
    fn submit(&mut self, image: &GrayImage) -> Result<Option<Features>> {
        self.extract(image).map(Some)
    }

    /// The features of the oldest frame still in flight once it is done; `None` when
    /// there is none.
    fn finish_frame(&mut self) -> Result<Option<Features>> {
        Ok(None)
    }

    /// Matches each frame against the frame extracted before it where the features
    /// are computed (`None` stops), with `config`'s ratio test, cross-check and
    /// distance limit, exactly as a [`Matcher`] would. `Ok(false)`: this backend does
    /// not, and the caller matches consecutive frames with a [`Matcher`].
    fn match_consecutive_frames(&mut self, config: Option<&MatchConfig>) -> Result<bool> {
        let _ = config;
        Ok(false)
    }

    /// After an extraction in consecutive mode: the frame's matches with the frame
    /// before it (`Match::query` indexes this frame), `None` for the first frame.
    fn matches_with_previous(&mut self) -> Option<Vec<Match>> {
        None
    }

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

/// `Ok` when a query set of `query` descriptors can be matched against a train set of
/// `train` ones: both of one kind, else the error every backend's matcher returns.
pub(crate) fn check_same_kind(query: DescriptorKind, train: DescriptorKind) -> Result<()> {
    if query == train {
        return Ok(());
    }
    Err(Error::Features(FeaturesError::DescriptorMismatch {
        query: query.name().into(),
        train: train.name().into(),
    }))
}
