//! The JSON documents `orbsift extract` and `orbsift match` write. Their field names
//! are a contract that scripts outside the project parse.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::Algorithm;
use crate::error::{Error, Result};
use crate::types::{DescriptorKind, Features, Match};

/// One keypoint, in pixels of the input image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeypointRecord {
    pub x: f32,
    pub y: f32,
    pub size: f32,
    pub angle: f32,
    pub response: f32,
    pub octave: i32,
}

/// What `orbsift extract` writes: the image, how it was processed, and its features.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeaturesReport {
    /// The image path as given.
    pub image: String,
    pub width: usize,
    pub height: usize,
    pub algorithm: Algorithm,
    /// `"cpu"` or `"cuda"`: where extraction actually ran.
    pub backend: String,
    pub keypoints: Vec<KeypointRecord>,
    pub descriptor_type: DescriptorKind,
    /// One lowercase hex string per keypoint, bytes in descriptor order.
    pub descriptors: Vec<String>,
}

impl FeaturesReport {
    pub fn new(image: &Path, algorithm: Algorithm, backend: &str, features: &Features) -> Self {
        let k = &features.keypoints;
        let keypoints = (0..k.len())
            .map(|i| KeypointRecord {
                x: k.x[i],
                y: k.y[i],
                size: k.size[i],
                angle: k.angle[i],
                response: k.response[i],
                octave: k.octave[i],
            })
            .collect();
        Self {
            image: image.display().to_string(),
            width: features.width,
            height: features.height,
            algorithm,
            backend: backend.to_string(),
            keypoints,
            descriptor_type: features.descriptors.kind,
            descriptors: features.descriptors.iter().map(hex).collect(),
        }
    }
}

/// What `orbsift match` writes; `Match::query` indexes `a`, `Match::train` indexes `b`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchReport {
    pub a: FeaturesReport,
    pub b: FeaturesReport,
    pub matches: Vec<Match>,
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            // Writing to a String cannot fail.
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let write_error = |source| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(write_error)?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| write_error(e.into()))?;
    out.flush().map_err(write_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Descriptors, Keypoints};

    #[test]
    fn every_keypoint_and_descriptor_is_written_in_order() {
        let mut keypoints = Keypoints::default();
        keypoints.push(10.5, 20.0, 31.0, 90.0, 0.25, 0);
        keypoints.push(1.0, 2.0, 37.2, 359.5, 1e-3, 1);
        let mut data = vec![0u8; 64];
        data[0] = 0xab;
        data[31] = 0x01;
        data[32] = 0xff;
        let features = Features {
            width: 64,
            height: 48,
            keypoints,
            descriptors: Descriptors {
                kind: DescriptorKind::Orb256,
                data,
            },
        };
        let report = FeaturesReport::new(Path::new("a.png"), Algorithm::Orb, "cpu", &features);
        let json: serde_json::Value = serde_json::to_value(&report).unwrap();
        assert_eq!(json["image"], "a.png");
        assert_eq!(json["algorithm"], "orb");
        assert_eq!(json["descriptor_type"], "orb256");
        assert_eq!(json["keypoints"][1]["size"].as_f64().unwrap() as f32, 37.2);
        assert_eq!(json["keypoints"][1]["octave"], 1);
        let d = &report.descriptors;
        assert_eq!(d.len(), 2);
        assert_eq!(d[0], format!("ab{}01", "00".repeat(30)));
        assert_eq!(d[1], format!("ff{}", "00".repeat(31)));
    }
}
