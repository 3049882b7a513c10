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

    #[error("unsupported image encoding {0:?} (supported: {supported})", supported = crate::image::SUPPORTED_ENCODINGS)]
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

impl Error {
    /// The error and each cause its message does not already show, on one line: what the
    /// binaries print, so a chain is read once.
    pub fn one_line(&self) -> String {
        let mut line = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            source = cause.source();
        }
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    /// A cause that names a deeper cause only through `source()`.
    #[derive(Debug, thiserror::Error)]
    #[error("participant creation failed")]
    struct Wrapped(#[source] std::io::Error);

    #[test]
    fn one_line_shows_every_cause_once() {
        let err = Error::Transport {
            what: "cannot join DDS domain 7".into(),
            source: Box::new(Wrapped(std::io::Error::other("address in use"))),
        };
        assert_eq!(
            err.one_line(),
            "ROS transport: cannot join DDS domain 7: participant creation failed: address in use"
        );
    }
}
