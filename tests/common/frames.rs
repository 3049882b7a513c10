//! Test frames: images of `tests/data`, resized to the sizes the GPU tests cover.

use orbsift::GrayImage;

use super::peer::test_data;

pub fn load(name: &str) -> GrayImage {
    GrayImage::open(&test_data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `image` resized to `width x height` (bilinear, by the `image` crate: test input only).
pub fn resized(image: &GrayImage, (width, height): (u32, u32)) -> GrayImage {
    let buffer = image::GrayImage::from_raw(
        image.width() as u32,
        image.height() as u32,
        image.data().to_vec(),
    )
    .expect("buffer size");
    let out = image::imageops::resize(&buffer, width, height, image::imageops::Triangle);
    GrayImage::new(width as usize, height as usize, out.into_raw()).expect("resized image")
}
