//! Camera and video input read in-process (`input.source: camera`): no image topic,
//! no copies between the capture and the extractor.

mod device;
mod pacing;

#[cfg(feature = "camera")]
mod capture;
#[cfg(feature = "camera")]
mod gstreamer_log;

pub use device::Device;
pub use pacing::{Pacer, Step};

#[cfg(feature = "camera")]
pub use capture::{Capture, Captured, Read};
