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

/// Camera images in: the sensor-data profile, so best-effort and reliable
/// publishers both match, and only recent frames wait.
pub const IMAGES_IN: Qos = Qos {
    reliability: Reliability::BestEffort,
    depth: 5,
};

/// `features`, `matches` and `/diagnostics`: reliable with some history, what
/// default subscribers (reliable, depth 10) ask for.
pub const RESULTS: Qos = Qos {
    reliability: Reliability::Reliable,
    depth: 10,
};

/// `debug_image` and the republished `image`: reliable, so a default (reliable)
/// subscriber matches as well as a sensor-data one; a short history because frames
/// are large.
pub const IMAGES_OUT: Qos = Qos {
    reliability: Reliability::Reliable,
    depth: 2,
};

/// `/parameter_events`, as rclcpp and rclpy publish it.
pub const PARAMETER_EVENTS: Qos = Qos {
    reliability: Reliability::Reliable,
    depth: 1000,
};

/// Parameter services, as rclcpp and rclpy serve them.
pub const SERVICES: Qos = Qos {
    reliability: Reliability::Reliable,
    depth: 10,
};
