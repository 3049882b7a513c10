//! Every camera encoding orbsift reads, converted to grey as OpenCV's `cvtColor`
//! converts it (tests/peer/gray_frames.py makes the frames from real photos).
//!
//! YUV and mono frames: bit for bit. Colour frames: orbsift weighs R, G and B with
//! OpenCV 4's 14-bit coefficients (the OpenCV of ROS 2 Jazzy's cv_bridge); the peer is
//! OpenCV 5, which rounds with 15-bit ones, so a few pixels differ by one grey level.

mod common;

use common::encoded::opencv_frames;
use orbsift::image::Encoding;
use orbsift::GrayImage;

/// OpenCV 5's 15-bit colour weights against the 14-bit ones: at most this share of
/// pixels one level apart (0.055 % of graf1's pixels and 0.11 % of rubberwhale1's on
/// 2026-11-27; swapped channels or a wrong weight change most pixels).
const COLOUR_ROUNDING_SHARE: f64 = 0.005;

#[test]
fn every_encoding_gives_opencvs_grey() {
    let dir = tempfile::tempdir().expect("temp dir");
    for photo in ["graf1.png", "rubberwhale1.png"] {
        let frames = opencv_frames(photo, dir.path());
        assert_eq!(
            frames.len(),
            9,
            "{photo}: one frame per colour and YUV encoding"
        );
        for frame in &frames {
            let gray = GrayImage::from_raw(&frame.raw())
                .unwrap_or_else(|e| panic!("{photo} {}: {e}", frame.name));
            let expected = &frame.expected_gray;
            assert_eq!(
                (gray.width(), gray.height()),
                (expected.width(), expected.height()),
                "{photo} {}",
                frame.name
            );
            let differences: Vec<u8> = gray
                .data()
                .iter()
                .zip(expected.data())
                .filter(|(a, b)| a != b)
                .map(|(a, b)| a.abs_diff(*b))
                .collect();
            let colour = matches!(
                frame.encoding,
                Encoding::Rgb8 | Encoding::Bgr8 | Encoding::Rgba8 | Encoding::Bgra8
            );
            println!(
                "{photo} {}: {} pixels differ from OpenCV",
                frame.name,
                differences.len()
            );
            if colour {
                let allowed = (COLOUR_ROUNDING_SHARE * gray.data().len() as f64) as usize;
                assert!(
                    differences.iter().all(|&d| d == 1) && differences.len() <= allowed,
                    "{photo} {}: {} pixels differ (at most {allowed} by one level allowed), by up to {}",
                    frame.name,
                    differences.len(),
                    differences.iter().max().unwrap_or(&0)
                );
            } else {
                assert!(
                    differences.is_empty(),
                    "{photo} {}: {} pixels differ from OpenCV",
                    frame.name,
                    differences.len()
                );
            }
        }
    }
}

#[test]
fn a_frame_one_byte_short_is_refused_in_every_encoding() {
    let dir = tempfile::tempdir().expect("temp dir");
    for frame in opencv_frames("rubberwhale1.png", dir.path()) {
        // A packed frame may end without its last row's padding, a planar one ends
        // with its chroma plane: one byte less than that is refused.
        let planar = matches!(
            frame.encoding,
            Encoding::Nv12 | Encoding::Nv21 | Encoding::Nv24
        );
        let needed = if planar {
            frame.data.len()
        } else {
            frame.step * (frame.height - 1) + frame.width * frame.encoding.bytes_per_pixel()
        };
        let mut raw = frame.raw();
        raw.data = &frame.data[..needed - 1];
        let err = GrayImage::from_raw(&raw)
            .err()
            .unwrap_or_else(|| panic!("{}: a truncated frame was converted", frame.name))
            .to_string();
        assert!(err.contains("needs"), "{}: {err}", frame.name);
    }
}
