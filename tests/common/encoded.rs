//! Camera frames in every encoding, made by OpenCV (tests/peer/gray_frames.py) from a
//! colour photo of tests/data, with OpenCV's grey conversion of each.

use std::path::Path;

use orbsift::image::{Encoding, RawFrame};
use orbsift::GrayImage;
use serde::Deserialize;

use super::peer::{self, test_data};

#[derive(Deserialize)]
struct Record {
    name: String,
    width: usize,
    height: usize,
    step: usize,
    raw: String,
    gray: String,
}

/// One encoded frame: its `sensor_msgs/Image` fields and OpenCV's grey of it.
pub struct EncodedFrame {
    pub name: String,
    pub encoding: Encoding,
    pub width: usize,
    pub height: usize,
    pub step: usize,
    pub data: Vec<u8>,
    pub opencv_gray: GrayImage,
}

impl EncodedFrame {
    pub fn raw(&self) -> RawFrame<'_> {
        RawFrame {
            encoding: self.encoding,
            width: self.width,
            height: self.height,
            step: self.step,
            big_endian: false,
            data: &self.data,
        }
    }
}

/// `photo` (a colour image of tests/data) in every encoding, written under `dir`.
pub fn opencv_frames(photo: &str, dir: &Path) -> Vec<EncodedFrame> {
    let records: Vec<Record> = peer::run(
        "gray_frames.py",
        &[test_data(photo).as_os_str(), dir.as_os_str()],
    );
    records
        .into_iter()
        .map(|r| EncodedFrame {
            encoding: Encoding::parse(&r.name).unwrap_or_else(|e| panic!("{}: {e}", r.name)),
            data: std::fs::read(&r.raw).unwrap_or_else(|e| panic!("{}: {e}", r.raw)),
            opencv_gray: GrayImage::open(r.gray.as_ref())
                .unwrap_or_else(|e| panic!("{}: {e}", r.gray)),
            name: r.name,
            width: r.width,
            height: r.height,
            step: r.step,
        })
        .collect()
}
