//! The messages of `msgs/orbsift_msgs`, in the field order of their `.msg` files.

use serde::{Deserialize, Serialize};

use super::{Header, RosMessage};

/// `orbsift_msgs/Features`: keypoints as parallel arrays and one descriptor block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Features {
    pub header: Header,
    pub image_width: u32,
    pub image_height: u32,
    pub algorithm: String,
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub size: Vec<f32>,
    pub angle: Vec<f32>,
    pub response: Vec<f32>,
    pub octave: Vec<i32>,
    pub descriptor_type: String,
    pub descriptor_size: u32,
    /// Written as one block, not byte by byte: CDR lays out a byte sequence the same way.
    #[serde(with = "serde_bytes")]
    pub descriptors: Vec<u8>,
}

ros_message!("orbsift_msgs", Features, encoded by super::sequence_cdr::features);

/// `orbsift_msgs/Matches`: index pairs into the query and train Features.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Matches {
    pub header: Header,
    pub train_header: Header,
    pub mode: String,
    pub query_idx: Vec<u32>,
    pub train_idx: Vec<u32>,
    pub distance: Vec<f32>,
}

ros_message!("orbsift_msgs", Matches, encoded by super::sequence_cdr::matches);
