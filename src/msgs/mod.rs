//! ROS 2 message structs shared by every transport, and their CDR encoding.
//!
//! Field order is the wire order: CDR has no field names, so each struct mirrors
//! its `.msg` file exactly (a test checks ours against `msgs/orbsift_msgs/msg`).
//! Bytes are little-endian CDR behind the 4-byte encapsulation header, the form
//! rmw implementations put on the wire and r2r's untyped API exchanges.

/// `impl RosMessage` for the message type `$message` of interface package `$package`,
/// under the type's own name unless `$name` is given, encoded by `$encode` instead of
/// serde where given.
macro_rules! ros_message {
    ($package:literal, $message:ident) => {
        ros_message!($package, $message, stringify!($message));
    };
    ($package:literal, $message:ident, $name:expr) => {
        impl RosMessage for $message {
            const PACKAGE: &'static str = $package;
            const NAME: &'static str = $name;
        }
    };
    ($package:literal, $message:ident, encoded by $encode:path) => {
        impl RosMessage for $message {
            const PACKAGE: &'static str = $package;
            const NAME: &'static str = stringify!($message);

            fn to_cdr(&self) -> std::result::Result<Vec<u8>, cdr::Error> {
                $encode(self)
            }
        }
    };
}

mod convert;
mod orbsift;
pub mod rcl_interfaces;
mod sequence_cdr;
mod standard;

pub use crate::frame_memory::FrameBytes;
pub use convert::{
    features_message, gray_from_compressed, gray_from_image, gray_from_raw, raw_frame,
};
pub use orbsift::{Features, Matches};
pub use standard::{
    CompressedImage, DiagnosticArray, DiagnosticStatus, Header, Image, KeyValue, Time,
};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result, TransportError};

/// A message type with its ROS 2 interface name.
pub trait RosMessage: Serialize + DeserializeOwned + Send + 'static {
    /// The interface package, e.g. `sensor_msgs`.
    const PACKAGE: &'static str;
    /// The message name inside the package, e.g. `Image`.
    const NAME: &'static str;

    /// The DDS type name rmw uses: `sensor_msgs::msg::dds_::Image_`.
    fn dds_type_name() -> String {
        format!("{}::msg::dds_::{}_", Self::PACKAGE, Self::NAME)
    }

    /// Little-endian CDR with its encapsulation header, through serde.
    fn to_cdr(&self) -> std::result::Result<Vec<u8>, cdr::Error> {
        cdr::serialize::<_, _, cdr::CdrLe>(self, cdr::Infinite)
    }
}

/// Encodes `message` as little-endian CDR with its encapsulation header.
pub fn encode<M: RosMessage>(message: &M) -> Result<Vec<u8>> {
    message.to_cdr().map_err(|source| {
        Error::Transport(TransportError::Cdr {
            message: M::NAME,
            source,
        })
    })
}

/// Decodes CDR (either byte order, as the encapsulation header says), reading byte
/// sequences where they lie: image data goes once from the received bytes to where it
/// is kept ([`crate::frame_memory`]).
pub fn decode<M: RosMessage>(bytes: &[u8]) -> Result<M> {
    use byteorder::{BigEndian, LittleEndian};
    let error = |source| {
        Error::Transport(TransportError::CdrDecode {
            message: M::NAME,
            source,
        })
    };
    let Some((&[_, representation, _, _], payload)) = bytes.split_first_chunk::<4>() else {
        return Err(error(cdr_encoding::Error::Eof));
    };
    let decoded = match representation {
        0 | 2 => cdr_encoding::from_bytes::<M, BigEndian>(payload),
        1 | 3 => cdr_encoding::from_bytes::<M, LittleEndian>(payload),
        other => Err(cdr_encoding::Error::Message(format!(
            "unknown CDR representation {other} in the encapsulation header"
        ))),
    };
    decoded.map(|(message, _)| message).map_err(error)
}

#[cfg(test)]
mod tests;
