//! The crate's errors, one type per domain, and [`Error`] over them. Each keeps its
//! source error, and no message repeats its source's: [`Error::one_line`] prints the
//! chain, each cause once.

use std::path::PathBuf;

/// Everything that can go wrong in orbsift, from bad input to a missing GPU.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),

    #[error(transparent)]
    Image(#[from] ImageError),

    #[error(transparent)]
    Features(#[from] FeaturesError),

    #[error(transparent)]
    Cuda(#[from] CudaError),

    #[error(transparent)]
    Transport(#[from] TransportError),

    #[error(transparent)]
    Camera(#[from] CameraError),

    /// An output file (a report, a saved frame) or standard output.
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Parameters: files, `--set` overrides, `--ros-args`, ROS parameter requests.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("bad YAML in {path}")]
    Yaml {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },

    #[error("unknown parameter `{0}`")]
    Unknown(String),

    #[error("invalid parameter `{name}`: {reason}")]
    Invalid { name: String, reason: String },

    #[error("bad ROS arguments: {0}")]
    RosArgs(String),
}

/// Image files and frames.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot decode image {path}")]
    Decode {
        path: PathBuf,
        #[source]
        source: crate::image::DecodeError,
    },

    #[error("cannot write image {path}")]
    Encode {
        path: PathBuf,
        #[source]
        source: image::ImageError,
    },

    #[error("unsupported image encoding {0:?} (supported: {supported})", supported = crate::image::SUPPORTED_ENCODINGS)]
    UnsupportedEncoding(String),

    #[error("invalid image: {0}")]
    Invalid(String),
}

/// Keypoints and descriptors handed to an extractor or a matcher.
#[derive(Debug, thiserror::Error)]
pub enum FeaturesError {
    #[error("keypoint {index}: {reason}")]
    InvalidKeypoint { index: usize, reason: String },

    #[error("features of kind {query} cannot be matched against {train}")]
    DescriptorMismatch { query: String, train: String },
}

/// The CUDA backend: whether it can run here, what it supports, its kernels.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("the CUDA backend is not available: {0}")]
    Unavailable(String),

    /// A setting the CUDA backend does not implement (the CPU backend does).
    #[error("`{parameter}` is not implemented on the CUDA backend: {hint}")]
    Unsupported {
        parameter: &'static str,
        hint: &'static str,
    },

    #[cfg(feature = "cuda")]
    #[error("the CUDA backend is not available: the CUDA driver failed to start")]
    DriverStart(#[source] cudarc::driver::DriverError),

    /// A driver call outside any one kernel: a context, a stream, an allocation, a copy.
    #[cfg(feature = "cuda")]
    #[error("CUDA driver call failed")]
    Driver(#[from] cudarc::driver::DriverError),

    /// Loading or launching one kernel.
    #[cfg(feature = "cuda")]
    #[error("CUDA kernel {kernel} of module {module}")]
    Kernel {
        module: String,
        kernel: String,
        #[source]
        source: cudarc::driver::DriverError,
    },

    /// A plan's buffers for a new frame size would not fit the GPU's free memory
    /// (`cuMemGetInfo`), checked before anything is allocated.
    #[error(
        "{plan} needs {needed} bytes ({} MiB) of GPU memory for a {width}x{height} frame, \
         but the GPU has {free} bytes ({} MiB) free",
        mebibytes(*needed),
        mebibytes(*free)
    )]
    OutOfMemory {
        plan: &'static str,
        width: usize,
        height: usize,
        needed: usize,
        free: usize,
    },

    #[error("no CUDA kernel module named {0}")]
    NoModule(String),

    #[error("NVRTC failed to compile kernel module `{module}` for {arch}: {log}")]
    Compile {
        module: String,
        arch: String,
        log: String,
    },

    #[cfg(feature = "cuda")]
    #[error("NVRTC call {call} failed")]
    Nvrtc {
        call: &'static str,
        #[source]
        source: cudarc::nvrtc::result::NvrtcError,
    },

    #[error("kernel cache {path}")]
    Cache {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Whole mebibytes of `bytes`, rounded down: a readable size beside the exact one.
fn mebibytes(bytes: usize) -> usize {
    bytes >> 20
}

/// ROS messages and the transports that carry them.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("CDR encoding of a {message} message failed")]
    Cdr {
        message: &'static str,
        #[source]
        source: cdr::Error,
    },

    #[error("cannot decode a {message} message")]
    CdrDecode {
        message: &'static str,
        #[source]
        source: cdr_encoding::Error,
    },

    #[error("ROS transport: {what}")]
    Ros {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The node's own camera, video or image-sequence input.
#[derive(Debug, thiserror::Error)]
pub enum CameraError {
    #[error("camera input {device}: {reason}")]
    Failed { device: String, reason: String },

    #[cfg(feature = "camera")]
    #[error("camera input {device}: {what}")]
    OpenCv {
        device: String,
        what: &'static str,
        #[source]
        source: opencv::Error,
    },
}

/// A driver error in CUDA code: without a kernel at hand it is a plain driver failure.
#[cfg(feature = "cuda")]
impl From<cudarc::driver::DriverError> for Error {
    fn from(source: cudarc::driver::DriverError) -> Self {
        Error::Cuda(CudaError::Driver(source))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error and each cause its message does not already show, on one line: what
    /// the binaries print. orbsift's messages never show their source; some other
    /// crates' do.
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
    use super::*;

    /// A cause that names a deeper cause only through `source()`.
    #[derive(Debug, thiserror::Error)]
    #[error("participant creation failed")]
    struct Wrapped(#[source] std::io::Error);

    #[test]
    fn one_line_shows_every_cause_once() {
        let err = Error::from(TransportError::Ros {
            what: "cannot join DDS domain 7".into(),
            source: Box::new(Wrapped(std::io::Error::other("address in use"))),
        });
        assert_eq!(
            err.one_line(),
            "ROS transport: cannot join DDS domain 7: participant creation failed: address in use"
        );
    }

    /// Every message with a source leaves the source to `one_line`: a chain printed as
    /// message, then each source, shows each text once.
    #[test]
    fn no_message_repeats_its_source() {
        let io = || std::io::Error::other("disk on fire");
        let errors: Vec<Error> = vec![
            ConfigError::Read {
                path: "p.yaml".into(),
                source: io(),
            }
            .into(),
            ImageError::Read {
                path: "a.png".into(),
                source: io(),
            }
            .into(),
            CudaError::Cache {
                path: "k.cubin".into(),
                source: io(),
            }
            .into(),
            Error::Write {
                path: "out.json".into(),
                source: io(),
            },
            TransportError::Ros {
                what: "spin".into(),
                source: Box::new(io()),
            }
            .into(),
        ];
        for err in errors {
            let line = err.one_line();
            assert_eq!(line.matches("disk on fire").count(), 1, "{line}");
            assert!(!err.to_string().contains("disk on fire"), "{err}");
        }
    }
}
