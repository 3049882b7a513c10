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

/// One encoded frame: its `sensor_msgs/Image` fields and the grey it converts to
/// (OpenCV's, for `opencv_frames`).
pub struct EncodedFrame {
    pub name: String,
    pub encoding: Encoding,
    pub width: usize,
    pub height: usize,
    pub step: usize,
    /// Only meaningful for mono16.
    pub big_endian: bool,
    pub data: Vec<u8>,
    pub expected_gray: GrayImage,
}

impl EncodedFrame {
    pub fn raw(&self) -> RawFrame<'_> {
        RawFrame {
            encoding: self.encoding,
            width: self.width,
            height: self.height,
            step: self.step,
            big_endian: self.big_endian,
            data: &self.data,
            page_locked: None,
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
            expected_gray: GrayImage::open(r.gray.as_ref())
                .unwrap_or_else(|e| panic!("{}: {e}", r.gray)),
            name: r.name,
            width: r.width,
            height: r.height,
            step: r.step,
            big_endian: false,
        })
        .collect()
}

/// `photo` in every encoding, made here (no OpenCV needed: for machines without the
/// test venv): mono8 its BT.601 luma, mono16 (both byte orders) that luma as the high
/// byte over a varying low byte, colour orders from its RGB, YUV frames with its luma
/// as Y and chroma from its blue and red, packed rows padded by 8 bytes, and mono8 once
/// more unpadded.
pub fn frames_from(photo: &str) -> Vec<EncodedFrame> {
    let rgb = image::open(test_data(photo))
        .unwrap_or_else(|e| panic!("{photo}: {e}"))
        .into_rgb8();
    let (width, height) = (rgb.width() as usize, rgb.height() as usize);
    // The photo decoded as every image file is: its RGB converted as an rgb8 frame.
    let luma_image = GrayImage::open(&test_data(photo)).expect("grey of the photo");
    let luma = luma_image.data();
    let pixel = |x: usize, y: usize| rgb.get_pixel(x as u32, y as u32).0;
    let padded = |row_bytes: usize, byte: &dyn Fn(usize, usize) -> u8| -> (Vec<u8>, usize) {
        let step = row_bytes + 8;
        let mut data = vec![0xEE; step * height];
        for y in 0..height {
            for i in 0..row_bytes {
                data[y * step + i] = byte(i, y);
            }
        }
        (data, step)
    };
    let planar = |chroma_rows: usize, chroma: &dyn Fn(usize, usize) -> u8| -> (Vec<u8>, usize) {
        let mut data = luma.to_vec();
        for y in 0..chroma_rows {
            data.extend((0..width).map(|i| chroma(i, y)));
        }
        (data, width)
    };
    let u = |x: usize, y: usize| pixel(x, y)[2] / 2 + 64;
    let v = |x: usize, y: usize| pixel(x, y)[0] / 2 + 64;
    let y_of = |x: usize, y: usize| luma[y * width + x];
    let mut frames = Vec::new();
    let mut push_in = |encoding: Encoding, big_endian: bool, (data, step): (Vec<u8>, usize)| {
        let order = if big_endian { " big-endian" } else { "" };
        frames.push(EncodedFrame {
            name: format!("{}{order}", encoding.name()),
            encoding,
            width,
            height,
            step,
            big_endian,
            data,
            expected_gray: luma_image.clone(),
        })
    };
    push_in(Encoding::Mono8, false, padded(width, &|i, y| y_of(i, y)));
    // The low byte varies, so a conversion that read it would show.
    let low = |i: usize, y: usize| (i * 7 + y * 13) as u8;
    for big_endian in [false, true] {
        // The byte of each pixel that holds its high byte.
        let high = usize::from(!big_endian);
        push_in(
            Encoding::Mono16,
            big_endian,
            padded(2 * width, &|i, y| {
                if i % 2 == high {
                    y_of(i / 2, y)
                } else {
                    low(i, y)
                }
            }),
        );
    }
    let mut push = |encoding: Encoding, frame: (Vec<u8>, usize)| push_in(encoding, false, frame);
    push(
        Encoding::Rgb8,
        padded(3 * width, &|i, y| pixel(i / 3, y)[i % 3]),
    );
    push(
        Encoding::Bgr8,
        padded(3 * width, &|i, y| pixel(i / 3, y)[2 - i % 3]),
    );
    push(
        Encoding::Rgba8,
        padded(4 * width, &|i, y| {
            if i % 4 == 3 {
                255
            } else {
                pixel(i / 4, y)[i % 4]
            }
        }),
    );
    push(
        Encoding::Bgra8,
        padded(4 * width, &|i, y| {
            if i % 4 == 3 {
                0
            } else {
                pixel(i / 4, y)[2 - i % 4]
            }
        }),
    );
    // 4:2:2: U Y0 V Y1 and Y0 U Y1 V per pair of pixels.
    push(
        Encoding::Uyvy,
        padded(2 * width, &|i, y| match i % 4 {
            0 => u(i / 2, y),
            2 => v(i / 2, y),
            _ => y_of(i / 2, y),
        }),
    );
    push(
        Encoding::Yuyv,
        padded(2 * width, &|i, y| match i % 4 {
            1 => u(i / 2, y),
            3 => v(i / 2, y),
            _ => y_of(i / 2, y),
        }),
    );
    let (half_rows, pair) = (height.div_ceil(2), |i: usize| i & !1);
    push(
        Encoding::Nv12,
        planar(half_rows, &|i, y| {
            if i % 2 == 0 {
                u(pair(i), 2 * y)
            } else {
                v(pair(i), 2 * y)
            }
        }),
    );
    push(
        Encoding::Nv21,
        planar(half_rows, &|i, y| {
            if i % 2 == 0 {
                v(pair(i), 2 * y)
            } else {
                u(pair(i), 2 * y)
            }
        }),
    );
    // NV24: full-resolution chroma, rows of 2 x width bytes.
    push(
        Encoding::Nv24,
        planar(2 * height, &|i, y| {
            let (x, row) = ((y % 2) * width / 2 + i / 2, y / 2);
            if i % 2 == 0 {
                u(x, row)
            } else {
                v(x, row)
            }
        }),
    );
    // Rows not padded: the grey image itself, which the GPU reads where it uploads it.
    frames.push(EncodedFrame {
        name: "mono8 unpadded".into(),
        encoding: Encoding::Mono8,
        width,
        height,
        step: width,
        big_endian: false,
        data: luma.to_vec(),
        expected_gray: luma_image.clone(),
    });
    frames
}
