//! Transports between the node runtime and ROS 2. They know nothing of CUDA or of
//! extraction: they subscribe the input topics into an [`InputQueue`], publish what
//! [`Outputs`] is given, and serve the node's services while [`Transport::spin`] runs.

pub mod args;
#[cfg(feature = "dds")]
pub mod dds;
#[cfg(any(feature = "dds", feature = "r2r"))]
pub mod priority;
pub mod qos;
#[cfg(feature = "r2r")]
pub mod r2r;
#[cfg(feature = "dds")]
mod receive_buffer;
#[cfg(feature = "dds")]
mod sequence_gaps;
#[cfg(any(feature = "dds", feature = "r2r"))]
mod shutdown;

pub use args::RosArgs;
#[cfg(any(feature = "dds", feature = "r2r"))]
pub use shutdown::{Reason, Shutdown};

#[cfg(any(feature = "dds", feature = "r2r"))]
use std::sync::Arc;

use crate::config::ImageTransport;
use crate::error::{ConfigError, Error, Result};
#[cfg(any(feature = "dds", feature = "r2r"))]
use crate::node::{Camera, InputQueue, LiveParameters, Outputs};

/// What the node runtime needs from a ROS 2 transport.
#[cfg(any(feature = "dds", feature = "r2r"))]
pub trait Transport {
    type Outputs: Outputs + Send + 'static;

    /// The node's fully qualified name, `/namespace/name`.
    fn node_name(&self) -> String;

    /// The node's publishers; with `republish`, also `image` for the frames a camera
    /// input captures.
    fn outputs(&mut self, republish: bool) -> Result<Self::Outputs>;

    /// Subscribes each of `topics` (names relative to the node's namespace, before
    /// `transport` adds its suffix); every message received goes into `queue`, and one
    /// that cannot be decoded is counted there.
    fn subscribe(
        &mut self,
        topics: &[(Camera, &str)],
        transport: ImageTransport,
        queue: Arc<InputQueue>,
    ) -> Result<()>;

    /// Serves the ROS parameter services under the node's name (`ros2 param`) from
    /// `parameters`, and publishes accepted changes on `/parameter_events`.
    fn serve_parameters(&mut self, parameters: Arc<LiveParameters>) -> Result<()>;

    /// Delivers messages and serves requests until a shutdown is requested.
    fn spin(&mut self, shutdown: &Shutdown) -> Result<()>;
}

/// The topic `name` carries images on with `transport`, as `image_transport` names it.
pub fn image_topic(name: &str, transport: ImageTransport) -> String {
    match transport {
        ImageTransport::Raw => name.to_string(),
        ImageTransport::Compressed => format!("{name}/compressed"),
    }
}

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
            .ok_or_else(|| {
                Error::Config(ConfigError::RosArgs(format!(
                    "ROS_DOMAIN_ID={text:?} is not in 0..=232"
                )))
            }),
        Err(err) => Err(Error::Config(ConfigError::RosArgs(format!(
            "ROS_DOMAIN_ID: {err}"
        )))),
    }
}
