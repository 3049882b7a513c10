//! The standard ROS 2 messages the node reads and writes, field for field.

use serde::{Deserialize, Serialize};

use super::{FrameBytes, RosMessage};

/// `builtin_interfaces/Time`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Time {
    pub sec: i32,
    pub nanosec: u32,
}

impl Time {
    pub fn as_secs_f64(self) -> f64 {
        self.sec as f64 + self.nanosec as f64 * 1e-9
    }

    /// The wall clock now, for messages that have no input stamp (diagnostics).
    pub fn now() -> Self {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            sec: since_epoch.as_secs() as i32,
            nanosec: since_epoch.subsec_nanos(),
        }
    }
}

/// `std_msgs/Header`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub stamp: Time,
    pub frame_id: String,
}

ros_message!("std_msgs", Header);

/// `sensor_msgs/Image`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub encoding: String,
    pub is_bigendian: u8,
    pub step: u32,
    /// Decoded into page-locked memory where the GPU backend offers it.
    pub data: FrameBytes,
}

ros_message!("sensor_msgs", Image);

/// `diagnostic_msgs/KeyValue`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

/// `diagnostic_msgs/DiagnosticStatus`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticStatus {
    /// OK = 0, WARN = 1, ERROR = 2, STALE = 3.
    pub level: u8,
    pub name: String,
    pub message: String,
    pub hardware_id: String,
    pub values: Vec<KeyValue>,
}

impl DiagnosticStatus {
    pub const OK: u8 = 0;
    pub const WARN: u8 = 1;
}

/// `diagnostic_msgs/DiagnosticArray`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticArray {
    pub header: Header,
    pub status: Vec<DiagnosticStatus>,
}

impl DiagnosticArray {
    /// The value of `key` in the first status that reports it.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.status
            .iter()
            .flat_map(|status| &status.values)
            .find(|pair| pair.key == key)
            .map(|pair| pair.value.as_str())
    }
}

ros_message!("diagnostic_msgs", DiagnosticArray);

/// `sensor_msgs/CompressedImage`: what `image_transport`'s `compressed` plugin sends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompressedImage {
    pub header: Header,
    /// `jpeg` or `png`, optionally after the raw encoding (`bgr8; jpeg compressed bgr8`).
    pub format: String,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

ros_message!("sensor_msgs", CompressedImage);
