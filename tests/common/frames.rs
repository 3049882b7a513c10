//! Test frames: images of `tests/data`, resized to the sizes the GPU tests cover.

use orbsift::GrayImage;

use super::peer::test_data;

/// The real images the GPU ORB tests run on: a poster (graf1), a grey-level object
/// (box.pgm), a street (leuvenA) and two Middlebury optical-flow frames.
pub const ORB_IMAGES: [&str; 5] = [
    "graf1.png",
    "box.pgm",
    "leuvenA.jpg",
    "basketball1.png",
    "rubberwhale1.png",
];

pub fn load(name: &str) -> GrayImage {
    GrayImage::open(&test_data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `image` resized to `width x height` (bilinear: `GrayImage::resized`).
pub fn resized(image: &GrayImage, (width, height): (u32, u32)) -> GrayImage {
    image
        .resized(width as usize, height as usize)
        .expect("resized image")
}
