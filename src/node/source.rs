//! The one seam every frame comes through: a [`FrameSource`] (image topics through
//! the input queue, or a camera, video file or image sequence read in-process) hands
//! [`Frame`]s to [`super::Node::run`].

use std::time::Instant;

use crate::error::Result;
use crate::image::GrayImage;
use crate::msgs::{CompressedImage, Header, Image};

/// Which camera of the node a frame belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Camera {
    /// `image`: the single camera of `none` and `temporal` modes.
    Mono,
    /// `left/image` in stereo mode.
    Left,
    /// `right/image` in stereo mode.
    Right,
}

/// A frame's pixels as they arrived; the node turns them grey.
#[derive(Clone, Debug)]
pub enum Pixels {
    /// A `sensor_msgs/Image` in one of the camera encodings.
    Raw(Image),
    /// A `sensor_msgs/CompressedImage` (JPEG or PNG).
    Compressed(CompressedImage),
    /// Already grey (a camera read in-process converts while it copies).
    Gray(GrayImage),
}

/// One frame on its way to the node.
#[derive(Clone, Debug)]
pub struct Frame {
    pub camera: Camera,
    pub header: Header,
    pub pixels: Pixels,
    /// When the node's process got it: the start of the node's own latency.
    pub received: Instant,
    /// The frame as captured, to publish on `image` (camera input with
    /// `input.publish_image`).
    pub republish: Option<Image>,
}

impl Frame {
    /// A frame received now.
    pub fn now(camera: Camera, header: Header, pixels: Pixels) -> Self {
        Self {
            camera,
            header,
            pixels,
            received: Instant::now(),
            republish: None,
        }
    }

    /// A `sensor_msgs/Image` received now.
    pub fn from_image(camera: Camera, image: Image) -> Self {
        Self::now(camera, image.header.clone(), Pixels::Raw(image))
    }

    /// A `sensor_msgs/CompressedImage` received now.
    pub fn from_compressed(camera: Camera, image: CompressedImage) -> Self {
        Self::now(camera, image.header.clone(), Pixels::Compressed(image))
    }
}

/// What a source gave.
#[derive(Debug)]
pub enum Next {
    Frame(Box<Frame>),
    /// Frames that arrived but could not be read (undecodable message, camera hiccup):
    /// how many, and why the last one failed.
    Unreadable {
        count: u64,
        reason: String,
    },
    /// Nothing before the deadline.
    Idle,
    /// The source has ended (end of a file, or the transport closed it).
    End,
}

/// What a transport delivered to the node and what its stack lost on the way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrivals {
    /// Messages handed to the node, readable or not.
    pub received: u64,
    /// Messages the stack skipped (gaps in a publisher's sequence numbers).
    pub lost_in_stack: u64,
}

/// Where the node's frames come from.
pub trait FrameSource: Send {
    /// The next frame, or what happened instead, waiting until `deadline` at most.
    /// An error ends the node (a camera that stopped delivering).
    fn next(&mut self, deadline: Instant) -> Result<Next>;

    /// Frames the source let go before the node saw them, because newer ones
    /// replaced them (the latest frame wins) or the playback clock passed them.
    fn dropped(&self) -> u64;

    /// What a transport delivered and lost; `None` for a source read in-process.
    fn arrivals(&self) -> Option<Arrivals> {
        None
    }

    /// Whether reading should wait until `features` has a subscriber, so that no
    /// frame of a stored video is processed for nobody.
    fn waits_for_subscriber(&self) -> bool {
        false
    }
}
