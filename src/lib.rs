//! orbsift: ORB and SIFT feature extraction and matching on NVIDIA GPUs, with a
//! CPU reference beside every GPU path.
//!
//! ```no_run
//! use orbsift::{Config, GrayImage};
//! let config = Config::load(None, &[])?;
//! let mut extractor = orbsift::create_extractor(&config)?;
//! let image = GrayImage::open("frame.png".as_ref())?;
//! let features = extractor.extract(&image)?;
//! println!("{} keypoints", features.len());
//! # Ok::<(), orbsift::Error>(())
//! ```

pub mod backend;
pub mod camera;
pub mod config;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod draw;
pub mod error;
pub mod extractor;
pub mod frame_memory;
pub mod image;
pub mod msgs;
pub mod node;
pub mod report;
pub mod spec;
pub mod transport;
pub mod types;

pub use backend::{create_extractor, create_matcher};
pub use config::{Algorithm, Backend, Config, MatchConfig, OrbConfig, SiftConfig};
pub use error::{
    CameraError, ConfigError, CudaError, Error, FeaturesError, ImageError, Result, TransportError,
};
pub use extractor::{Extractor, Matcher, Residency, Slot};
pub use image::{Encoding, GrayImage, RawFrame};
pub use types::{DescriptorKind, Descriptors, Features, Keypoints, Match};
