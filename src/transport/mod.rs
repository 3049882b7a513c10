//! Transports between the node runtime and ROS 2. They know nothing of CUDA or
//! of extraction: they move `sensor_msgs/Image` in and the runtime's messages out.

pub mod args;
#[cfg(feature = "dds")]
pub mod dds;
#[cfg(feature = "r2r")]
pub mod r2r;

pub use args::RosArgs;

use crate::error::{Error, Result};

/// The DDS domain from `ROS_DOMAIN_ID` (0 when unset), as every ROS 2 process reads it.
pub fn domain_id_from_env() -> Result<u16> {
    match std::env::var("ROS_DOMAIN_ID") {
        Err(std::env::VarError::NotPresent) => Ok(0),
        Ok(text) if text.trim().is_empty() => Ok(0),
        Ok(text) => text
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|id| *id <= 232)
            .ok_or_else(|| Error::RosArgs(format!("ROS_DOMAIN_ID={text:?} is not in 0..=232"))),
        Err(err) => Err(Error::RosArgs(format!("ROS_DOMAIN_ID: {err}"))),
    }
}
