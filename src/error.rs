//! The crate's error type. Each variant names the problem and keeps its source error.

use std::path::PathBuf;

/// Everything that can go wrong in orbsift, from bad input to a missing GPU.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot decode image {path}: {source}")]
    ImageDecode {
        path: PathBuf,
        #[source]
        source: crate::image::DecodeError,
    },

    #[error("cannot write image {path}: {source}")]
    ImageEncode {
        path: PathBuf,
        #[source]
        source: image::ImageError,
    },

    #[error(
        "unsupported image encoding {0:?} (supported: mono8, mono16, rgb8, bgr8, rgba8, bgra8)"
    )]
    UnsupportedEncoding(String),

    #[error("invalid image: {0}")]
    InvalidImage(String),

    #[error("bad YAML in {path}: {source}")]
    Yaml {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },

    #[error("unknown parameter `{0}`")]
    UnknownParameter(String),

    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter { name: String, reason: String },

    #[error("the CUDA backend is not available: {0}")]
    CudaUnavailable(String),

    #[cfg(feature = "cuda")]
    #[error("CUDA driver call failed: {0}")]
    Cuda(#[from] cudarc::driver::DriverError),

    #[cfg(feature = "cuda")]
    #[error("NVRTC failed to compile kernel module `{module}` for {arch}: {log}")]
    KernelCompile {
        module: String,
        arch: String,
        log: String,
    },

    #[cfg(feature = "cuda")]
    #[error("NVRTC call {call} failed: {source}")]
    Nvrtc {
        call: &'static str,
        #[source]
        source: cudarc::nvrtc::result::NvrtcError,
    },

    #[error("CDR encoding of a {message} message failed: {source}")]
    Cdr {
        message: &'static str,
        #[source]
        source: cdr::Error,
    },

    #[error("ROS transport: {what}: {source}")]
    Transport {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    #[error("camera input {device}: {reason}")]
    Camera { device: String, reason: String },

    #[cfg(feature = "camera")]
    #[error("camera input {device}: {what}: {source}")]
    OpenCv {
        device: String,
        what: &'static str,
        #[source]
        source: opencv::Error,
    },

    #[error("bad ROS arguments: {0}")]
    RosArgs(String),

    #[error("keypoint {index}: {reason}")]
    InvalidKeypoint { index: usize, reason: String },

    #[error("features of kind {query} cannot be matched against {train}")]
    DescriptorMismatch { query: String, train: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
