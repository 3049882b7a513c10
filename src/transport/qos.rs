//! The node's QoS, one table for every transport (docs/ros-node.md shows it).

/// Whether a writer repairs lost samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reliability {
    Reliable,
    BestEffort,
}

/// Volatile durability and keep-last history of `depth` for every endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Qos {
    pub reliability: Reliability,
    pub depth: usize,
}

impl Qos {
    /// Reliable, keeping the last `depth` samples.
    pub const fn reliable(depth: usize) -> Self {
        Self {
            reliability: Reliability::Reliable,
            depth,
        }
    }

    /// Best effort, keeping the last `depth` samples.
    pub const fn best_effort(depth: usize) -> Self {
        Self {
            reliability: Reliability::BestEffort,
            depth,
        }
    }
}

/// Camera images in: the sensor-data profile, so best-effort and reliable
/// publishers both match, and only recent frames wait.
pub const IMAGES_IN: Qos = Qos::best_effort(5);

/// `features`, `matches` and `/diagnostics`: reliable with some history, what
/// default subscribers (reliable, depth 10) ask for.
pub const RESULTS: Qos = Qos::reliable(10);

/// `debug_image` and the republished `image`: reliable, so a default (reliable)
/// subscriber matches as well as a sensor-data one; a short history because frames
/// are large.
pub const IMAGES_OUT: Qos = Qos::reliable(2);

/// `/parameter_events`, as rclcpp and rclpy publish it.
pub const PARAMETER_EVENTS: Qos = Qos::reliable(1000);

/// Parameter services, as rclcpp and rclpy serve them.
pub const SERVICES: Qos = Qos::reliable(10);
