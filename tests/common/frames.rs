//! Test frames: images of `tests/data`, resized to the sizes the GPU tests cover.

use orbsift::GrayImage;

use super::peer::test_data;

pub fn load(name: &str) -> GrayImage {
    GrayImage::open(&test_data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `image` resized to `width x height` (bilinear: `GrayImage::resized`).
pub fn resized(image: &GrayImage, (width, height): (u32, u32)) -> GrayImage {
    image
        .resized(width as usize, height as usize)
        .expect("resized image")
}
