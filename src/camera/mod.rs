//! Camera and video input read in-process (`input.source: camera`): no image topic,
//! no copies between the capture and the extractor.

mod device;
mod pacing;

#[cfg(feature = "camera")]
mod capture;

pub use device::Device;
pub use pacing::{Pacer, Step};

#[cfg(feature = "camera")]
pub use capture::{Capture, Captured, Read};
