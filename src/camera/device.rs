//! What `input.device` names: a camera index, a file or image sequence, or a
//! GStreamer pipeline.

use std::path::PathBuf;

use crate::error::{ConfigError, Error, Result};

/// A source of frames, as `input.device` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// A camera by index: `/dev/videoN` through V4L2.
    Index(i32),
    /// A video file, a `/dev/video*` node, or an image sequence named by a printf
    /// pattern (`frames/%04d.png`).
    File(PathBuf),
    /// A GStreamer pipeline ending in `appsink` (`nvarguscamerasrc ! ... ! appsink`).
    Pipeline(String),
}

fn invalid(reason: String) -> Error {
    Error::Config(ConfigError::Invalid {
        name: "input.device".into(),
        reason,
    })
}

impl Device {
    /// Digits are an index, text with `!` a pipeline, anything else a path.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.is_empty() {
            return Err(invalid(
                "is empty: give a camera index, a video file, an image sequence or a GStreamer pipeline".into(),
            ));
        }
        if text.bytes().all(|b| b.is_ascii_digit()) {
            return text
                .parse()
                .map(Device::Index)
                .map_err(|err| invalid(format!("camera index {text}: {err}")));
        }
        if text.contains('!') {
            if !text.contains("appsink") {
                return Err(invalid(format!(
                    "the GStreamer pipeline {text:?} has no appsink: OpenCV reads frames from a final `! appsink`"
                )));
            }
            return Ok(Device::Pipeline(text.to_string()));
        }
        Ok(Device::File(PathBuf::from(text)))
    }

    /// Cameras deliver frames at their own pace; files and sequences can be replayed.
    pub fn is_live(&self) -> bool {
        match self {
            Device::Index(_) | Device::Pipeline(_) => true,
            Device::File(path) => path.starts_with("/dev"),
        }
    }

    /// An image sequence: a path with a printf field such as `%04d`.
    pub fn is_sequence(&self) -> bool {
        matches!(self, Device::File(path) if path.to_string_lossy().contains('%'))
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Index(index) => write!(f, "camera {index}"),
            Device::File(path) => write!(f, "{}", path.display()),
            Device::Pipeline(pipeline) => write!(f, "GStreamer pipeline {pipeline:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_an_index() {
        assert_eq!(Device::parse("0").unwrap(), Device::Index(0));
        assert_eq!(Device::parse(" 12 ").unwrap(), Device::Index(12));
        assert!(Device::parse("0").unwrap().is_live());
    }

    #[test]
    fn an_index_too_large_is_refused_with_the_parameter_name() {
        let err = Device::parse("99999999999").unwrap_err().to_string();
        assert!(err.contains("input.device"), "{err}");
    }

    #[test]
    fn paths_are_files_and_printf_patterns_are_sequences() {
        let video = Device::parse("tests/data/vtest_6s.avi").unwrap();
        assert_eq!(video, Device::File("tests/data/vtest_6s.avi".into()));
        assert!(!video.is_live() && !video.is_sequence());
        let frames = Device::parse("/tmp/frames/%04d.png").unwrap();
        assert_eq!(frames, Device::File("/tmp/frames/%04d.png".into()));
        assert!(frames.is_sequence() && !frames.is_live());
        // Negative "indices" are not indices: OpenCV would pick any camera.
        assert_eq!(Device::parse("-1").unwrap(), Device::File("-1".into()));
        assert!(Device::parse("/dev/video2").unwrap().is_live());
    }

    #[test]
    fn text_with_a_bang_is_a_pipeline_that_must_end_in_appsink() {
        let csi = "nvarguscamerasrc ! video/x-raw(memory:NVMM),width=1280,height=720 ! nvvidconv ! video/x-raw,format=BGRx ! videoconvert ! appsink drop=true";
        assert_eq!(Device::parse(csi).unwrap(), Device::Pipeline(csi.into()));
        assert!(Device::parse(csi).unwrap().is_live());
        let err = Device::parse("videotestsrc ! autovideosink")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("input.device") && err.contains("appsink"),
            "{err}"
        );
    }

    #[test]
    fn empty_is_refused() {
        let err = Device::parse("  ").unwrap_err().to_string();
        assert!(
            err.contains("input.device") && err.contains("empty"),
            "{err}"
        );
    }
}
