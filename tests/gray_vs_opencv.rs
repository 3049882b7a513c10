//! Every camera encoding orbsift reads, converted to grey exactly as OpenCV's
//! `cvtColor` converts it (tests/peer/gray_frames.py makes the frames from real photos).

mod common;

use common::encoded::opencv_frames;
use orbsift::image::Encoding;
use orbsift::GrayImage;

#[test]
fn every_encoding_gives_opencvs_grey_bit_for_bit() {
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
            let differing = gray
                .data()
                .iter()
                .zip(frame.expected_gray.data())
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(
                (gray.width(), gray.height(), differing),
                (frame.expected_gray.width(), frame.expected_gray.height(), 0),
                "{photo} {}: size and pixels differing from OpenCV",
                frame.name
            );
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
