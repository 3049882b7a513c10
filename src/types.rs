//! What extraction and matching produce: keypoints as separate arrays, one flat
//! descriptor block, and matches. Both backends fill exactly these types.

use serde::{Deserialize, Serialize};

/// Keypoints as a structure of arrays, all of one length.
///
/// `x`, `y` are pixels of the input image (OpenCV convention: pixel centres at
/// integers), `size` is the diameter of the described region, `angle` is in
/// degrees `[0, 360)`, `octave` is the pyramid level (ORB) or octave (SIFT).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Keypoints {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub size: Vec<f32>,
    pub angle: Vec<f32>,
    pub response: Vec<f32>,
    pub octave: Vec<i32>,
}

impl Keypoints {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            x: Vec::with_capacity(n),
            y: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            angle: Vec::with_capacity(n),
            response: Vec::with_capacity(n),
            octave: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.x.len()
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    pub fn push(&mut self, x: f32, y: f32, size: f32, angle: f32, response: f32, octave: i32) {
        self.x.push(x);
        self.y.push(y);
        self.size.push(size);
        self.angle.push(angle);
        self.response.push(response);
        self.octave.push(octave);
    }

    pub fn clear(&mut self) {
        self.x.clear();
        self.y.clear();
        self.size.clear();
        self.angle.clear();
        self.response.clear();
        self.octave.clear();
    }
}

/// The layout of one descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DescriptorKind {
    /// 256 rBRIEF bits in 32 bytes, OpenCV's bit order (byte i, bit j = test 8i+j).
    #[serde(rename = "orb256")]
    Orb256,
    /// 128 SIFT bins quantised to u8 as OpenCV does.
    #[serde(rename = "sift128u8")]
    Sift128U8,
}

impl DescriptorKind {
    pub fn bytes(self) -> usize {
        match self {
            DescriptorKind::Orb256 => 32,
            DescriptorKind::Sift128U8 => 128,
        }
    }

    /// The name used in JSON output and ROS messages.
    pub fn name(self) -> &'static str {
        match self {
            DescriptorKind::Orb256 => "orb256",
            DescriptorKind::Sift128U8 => "sift128u8",
        }
    }
}

/// `len * kind.bytes()` bytes, one descriptor per keypoint, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Descriptors {
    pub kind: DescriptorKind,
    pub data: Vec<u8>,
}

impl Descriptors {
    pub fn new(kind: DescriptorKind) -> Self {
        Self {
            kind,
            data: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.data.len() / self.kind.bytes()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Descriptor `i` as bytes.
    pub fn get(&self, i: usize) -> &[u8] {
        let n = self.kind.bytes();
        &self.data[i * n..(i + 1) * n]
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, u8> {
        self.data.chunks_exact(self.kind.bytes())
    }
}

/// Keypoints and their descriptors from one image.
#[derive(Clone, Debug, PartialEq)]
pub struct Features {
    pub width: usize,
    pub height: usize,
    pub keypoints: Keypoints,
    pub descriptors: Descriptors,
}

impl Features {
    pub fn len(&self) -> usize {
        self.keypoints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keypoints.is_empty()
    }
}

/// A correspondence: `query` indexes the first set, `train` the second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Match {
    pub query: u32,
    pub train: u32,
    /// Hamming distance (ORB) or L2 distance (SIFT).
    pub distance: f32,
}
