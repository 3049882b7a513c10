//! The two seams every backend implements: extraction and matching.

use std::sync::Arc;

use crate::config::MatchConfig;
use crate::error::{Error, FeaturesError, Result};
use crate::frame_memory::PageLockedPool;
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

    /// The page-locked pool this backend uploads frames from without a copy, for the
    /// transport to decode frames into ([`crate::frame_memory`]); `None` where frames
    /// are not uploaded (the CPU, or a GPU that reads host memory in place).
    fn receive_pool(&self) -> Option<Arc<PageLockedPool>> {
        None
    }

    /// The features of the oldest frame still in flight once it is done; `None` when
    /// there is none.
    fn finish_frame(&mut self) -> Result<Option<Features>> {
        Ok(None)
    }

    /// Matches frames where their features are computed (`None` stops), with
    /// `config`'s ratio test, cross-check and distance limit, exactly as a [`Matcher`]
    /// would: each frame is matched with the features kept in one of two slots, then
    /// its own are kept in a slot, as [`set_residency`](Self::set_residency) says.
    /// Starting empties both slots. `Ok(false)`: this backend does not, and the caller
    /// matches with a [`Matcher`].
    fn match_resident(&mut self, config: Option<&MatchConfig>) -> Result<bool> {
        let _ = config;
        Ok(false)
    }

    /// How the frames submitted from now on are matched and kept while matching
    /// resident features ([`Residency::PREVIOUS`] until set).
    fn set_residency(&mut self, residency: Residency) {
        let _ = residency;
    }

    /// After a frame's features came back while matching resident features: its
    /// matches with the slot it was matched with (`Match::query` indexes the query
    /// side its [`Residency`] names), `None` when that slot held nothing.
    fn resident_matches(&mut self) -> Option<Vec<Match>> {
        None
    }

    /// `"cpu"` or `"cuda"`, as written in outputs.
    fn backend_name(&self) -> &'static str;

    /// The device that runs it, e.g. the GPU's name or `"cpu (16 threads)"`.
    fn device_name(&self) -> String;
}

/// One of the two places where an extractor that matches resident features keeps a
/// frame's features ([`Extractor::match_resident`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    First,
    Second,
}

impl Slot {
    pub fn index(self) -> usize {
        match self {
            Slot::First => 0,
            Slot::Second => 1,
        }
    }
}

/// What an extractor matching resident features does with one frame's features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Residency {
    /// The slot the frame is matched with: the features last kept there.
    pub match_with: Slot,
    /// `true`: the frame is the query of its matches; `false`: the slot's features are
    /// the query and the frame is the train set.
    pub frame_is_query: bool,
    /// The slot the frame's features are kept in once matched, replacing what it held.
    pub keep_as: Slot,
}

impl Residency {
    /// Temporal matching: each frame, the query, against the frame before it.
    pub const PREVIOUS: Self = Self {
        match_with: Slot::First,
        frame_is_query: true,
        keep_as: Slot::First,
    };
    /// Stereo matching, a left frame: the query, against the latest right frame.
    pub const LEFT: Self = Self {
        match_with: Slot::Second,
        frame_is_query: true,
        keep_as: Slot::First,
    };
    /// Stereo matching, a right frame: the train set of the latest left frame.
    pub const RIGHT: Self = Self {
        match_with: Slot::First,
        frame_is_query: false,
        keep_as: Slot::Second,
    };
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
