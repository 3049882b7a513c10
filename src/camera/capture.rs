//! Frames from OpenCV's `VideoCapture`: opened as `input` asks, stamped when read,
//! and turned grey in one pass straight from OpenCV's buffer.

use std::time::Instant;

use opencv::core::{LogLevel, Mat, CV_8U};
use opencv::prelude::*;
use opencv::videoio::{self, VideoCapture};

use super::Device;
use crate::config::InputConfig;
use crate::error::{CameraError, Error, ImageError, Result};
use crate::image::{Encoding, GrayImage, RawFrame};
use crate::msgs::{self, Header, Image, Time};

/// A frame as read: grey for the extractor, and the captured pixels when asked for.
pub struct Captured {
    pub gray: GrayImage,
    pub header: Header,
    /// When OpenCV handed the frame over: the start of its latency.
    pub at: Instant,
    /// The frame as captured (`bgr8`, `bgra8` or `mono8`), when `input.publish_image`.
    pub image: Option<Image>,
}

/// What one read gave.
pub enum Read {
    Frame(Captured),
    /// No frame this time (a camera hiccup, a corrupt frame); the reason says which.
    Unreadable(String),
    /// A file or image sequence has no more frames.
    End,
}

/// An open camera, video file, image sequence or GStreamer pipeline.
pub struct Capture {
    device: Device,
    input: InputConfig,
    max_pixels: u64,
    video: VideoCapture,
    /// Reused by every read: OpenCV decodes into it.
    frame: Mat,
}

impl Capture {
    /// Opens `input.device` with the size and rate `input` requests; frames of more
    /// than `max_pixels` pixels will be refused.
    pub fn open(input: &InputConfig, max_pixels: u64) -> Result<Self> {
        let device = Device::parse(&input.device)?;
        if let Device::File(path) = &device {
            if !device.is_sequence() && !device.is_live() && !path.is_file() {
                return Err(camera_error(&device, "no such file"));
            }
        }
        let video = open_video(&device)?;
        let mut capture = Self {
            device,
            input: input.clone(),
            max_pixels,
            video,
            frame: Mat::default(),
        };
        capture.request_format();
        log::info!(
            "reading {} through OpenCV {}: {}x{} at {} fps",
            capture.device,
            capture
                .video
                .get_backend_name()
                .unwrap_or_else(|_| "?".into()),
            capture.property(videoio::CAP_PROP_FRAME_WIDTH),
            capture.property(videoio::CAP_PROP_FRAME_HEIGHT),
            capture.property(videoio::CAP_PROP_FPS),
        );
        Ok(capture)
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The playback rate: `input.fps` when set, else the one the source reports.
    pub fn fps(&self) -> Option<f64> {
        if self.input.fps > 0.0 {
            return Some(self.input.fps);
        }
        Some(self.property(videoio::CAP_PROP_FPS)).filter(|fps| fps.is_finite() && *fps > 0.0)
    }

    fn property(&self, id: i32) -> f64 {
        self.video.get(id).unwrap_or(0.0)
    }

    /// Asks a live source for `input.width/height/fps`; files keep their own.
    fn request_format(&mut self) {
        if !self.device.is_live() {
            return;
        }
        let requests = [
            (
                "input.width",
                videoio::CAP_PROP_FRAME_WIDTH,
                self.input.width as f64,
            ),
            (
                "input.height",
                videoio::CAP_PROP_FRAME_HEIGHT,
                self.input.height as f64,
            ),
            ("input.fps", videoio::CAP_PROP_FPS, self.input.fps),
            // The newest frame rather than a queue of stale ones when processing is slow.
            ("", videoio::CAP_PROP_BUFFERSIZE, 1.0),
        ];
        for (name, id, value) in requests {
            if value > 0.0 && !self.video.set(id, value).unwrap_or(false) && !name.is_empty() {
                log::warn!("{}: the source does not take {name} = {value}", self.device);
            }
        }
    }

    /// Reads, stamps and converts the next frame.
    pub fn read(&mut self) -> Read {
        let got = self.video.read(&mut self.frame);
        let (stamp, at) = (Time::now(), Instant::now());
        match got {
            Ok(true) => {}
            Ok(false) if self.device.is_live() => {
                return Read::Unreadable(format!("{} gave no frame", self.device))
            }
            Ok(false) => return Read::End,
            Err(err) => return Read::Unreadable(format!("{}: {err}", self.device)),
        }
        let header = Header {
            stamp,
            frame_id: self.input.frame_id.clone(),
        };
        match self.convert(header, at) {
            Ok(captured) => Read::Frame(captured),
            Err(err) => Read::Unreadable(format!("{}: {err}", self.device)),
        }
    }

    fn convert(&self, header: Header, at: Instant) -> Result<Captured> {
        let frame = &self.frame;
        let encoding = match (frame.depth(), frame.channels()) {
            (CV_8U, 1) => Encoding::Mono8,
            (CV_8U, 3) => Encoding::Bgr8,
            (CV_8U, 4) => Encoding::Bgra8,
            (depth, channels) => {
                return Err(Error::Image(ImageError::Invalid(format!(
                    "OpenCV frame of depth {depth} with {channels} channels (8-bit mono, BGR or BGRA expected)"
                ))))
            }
        };
        let raw = RawFrame {
            encoding,
            width: frame.cols() as usize,
            height: frame.rows() as usize,
            step: frame.mat_step()[0],
            big_endian: false,
            data: frame.data_bytes().map_err(|source| {
                Error::Camera(CameraError::OpenCv {
                    device: self.device.to_string(),
                    what: "frame pixels",
                    source,
                })
            })?,
            page_locked: None,
        };
        let gray = msgs::gray_from_raw(&raw, self.max_pixels)?;
        let image = self.input.publish_image.then(|| Image {
            header: header.clone(),
            height: raw.height as u32,
            width: raw.width as u32,
            encoding: encoding_name(encoding).into(),
            is_bigendian: 0,
            step: raw.step as u32,
            data: raw.data.to_vec().into(),
        });
        Ok(Captured {
            gray,
            header,
            at,
            image,
        })
    }

    /// Passes over the next frame without converting it; false at the end.
    pub fn skip(&mut self) -> bool {
        self.video.grab().unwrap_or(false)
    }

    /// Starts a file or image sequence again from its first frame.
    pub fn rewind(&mut self) -> Result<()> {
        self.video = open_video(&self.device)?;
        Ok(())
    }
}

fn encoding_name(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Bgr8 => "bgr8",
        Encoding::Bgra8 => "bgra8",
        _ => "mono8",
    }
}

fn camera_error(device: &Device, reason: impl Into<String>) -> Error {
    Error::Camera(CameraError::Failed {
        device: device.to_string(),
        reason: reason.into(),
    })
}

fn open_video(device: &Device) -> Result<VideoCapture> {
    // OpenCV tries its backends one after another and logs each one's complaint, some of
    // them later from GStreamer's threads: the node reports a source that cannot be opened
    // or read itself (an error naming the device, rejected frames in the diagnostics), so
    // OpenCV's own log stays quiet for the life of the process.
    let _ = opencv::core::set_log_level(LogLevel::LOG_LEVEL_SILENT);
    super::gstreamer_log::route_to_log();
    let opened = match device {
        Device::Index(index) => VideoCapture::new(*index, videoio::CAP_V4L2),
        Device::File(path) => VideoCapture::from_file(&path.to_string_lossy(), videoio::CAP_ANY),
        Device::Pipeline(pipeline) => VideoCapture::from_file(pipeline, videoio::CAP_GSTREAMER),
    };
    let video = opened.map_err(|source| {
        Error::Camera(CameraError::OpenCv {
            device: device.to_string(),
            what: "cannot open",
            source,
        })
    })?;
    if video.is_opened().unwrap_or(false) {
        return Ok(video);
    }
    let hint = match device {
        Device::Index(_) => "no such V4L2 camera, or it is busy".to_string(),
        Device::File(_) if device.is_sequence() => {
            "no image matches the pattern from its first number on".to_string()
        }
        Device::File(_) => "OpenCV cannot decode it".to_string(),
        Device::Pipeline(_) => format!(
            "the pipeline does not start (OpenCV's GStreamer backend: {})",
            if videoio::has_backend(videoio::VideoCaptureAPIs::CAP_GSTREAMER).unwrap_or(false) {
                "present"
            } else {
                "absent from this OpenCV build"
            }
        ),
    };
    Err(camera_error(device, format!("cannot be opened: {hint}")))
}
