//! Between messages and the library's types.

use super::{CompressedImage, Features, Header, Image};
use crate::config::Algorithm;
use crate::error::{Error, ImageError, Result};
use crate::image::{Encoding, GrayImage, RawFrame};
use crate::types;

/// Converts a `sensor_msgs/Image` to grey, rejecting frames of more than
/// `max_pixels` pixels before converting anything.
pub fn gray_from_image(image: &Image, max_pixels: u64) -> Result<GrayImage> {
    GrayImage::from_raw(&raw_frame(image, max_pixels)?)
}

/// The pixels of a `sensor_msgs/Image`, checked as [`gray_from_image`] checks them
/// (encoding, size, `step`, data length, `max_pixels`), for a backend to convert.
pub fn raw_frame(image: &Image, max_pixels: u64) -> Result<RawFrame<'_>> {
    let frame = RawFrame {
        encoding: Encoding::parse(&image.encoding)?,
        width: image.width as usize,
        height: image.height as usize,
        step: image.step as usize,
        big_endian: image.is_bigendian != 0,
        data: &image.data,
        page_locked: image.data.page_locked(),
    };
    check_pixels(&frame, max_pixels)?;
    frame.validate()?;
    Ok(frame)
}

/// Decodes a `sensor_msgs/CompressedImage` (JPEG or PNG, as `image_transport`'s
/// `compressed` plugin sends) to grey, rejecting frames of more than `max_pixels`
/// pixels before decoding and truncated or undecodable data with the reason.
pub fn gray_from_compressed(image: &CompressedImage, max_pixels: u64) -> Result<GrayImage> {
    // `format` is "jpeg", "png", or the raw encoding before them ("bgr8; jpeg compressed bgr8").
    let format = image.format.to_ascii_lowercase();
    if !format.is_empty() && !["jpeg", "jpg", "png"].iter().any(|f| format.contains(f)) {
        return Err(Error::Image(ImageError::Invalid(format!(
            "unsupported compressed format {:?} (supported: jpeg, png)",
            image.format
        ))));
    }
    GrayImage::decode(&image.data, max_pixels).map_err(|err| {
        Error::Image(ImageError::Invalid(format!(
            "compressed image ({:?}): {err}",
            image.format
        )))
    })
}

/// Converts camera pixels to grey, rejecting frames of more than `max_pixels`
/// pixels before converting anything.
pub fn gray_from_raw(frame: &RawFrame<'_>, max_pixels: u64) -> Result<GrayImage> {
    check_pixels(frame, max_pixels)?;
    GrayImage::from_raw(frame)
}

fn check_pixels(frame: &RawFrame<'_>, max_pixels: u64) -> Result<()> {
    let pixels = frame.width as u64 * frame.height as u64;
    if pixels > max_pixels {
        return Err(Error::Image(ImageError::Invalid(format!(
            "{}x{} has {pixels} pixels, more than max_image_pixels = {max_pixels}",
            frame.width, frame.height
        ))));
    }
    Ok(())
}

/// The Features message for `features`, extracted by `algorithm` from the image of `header`.
pub fn features_message(
    header: Header,
    algorithm: Algorithm,
    features: &types::Features,
) -> Features {
    let keypoints = &features.keypoints;
    Features {
        header,
        image_width: features.width as u32,
        image_height: features.height as u32,
        algorithm: algorithm.name().to_string(),
        x: keypoints.x.clone(),
        y: keypoints.y.clone(),
        size: keypoints.size.clone(),
        angle: keypoints.angle.clone(),
        response: keypoints.response.clone(),
        octave: keypoints.octave.clone(),
        descriptor_type: features.descriptors.kind.name().to_string(),
        descriptor_size: features.descriptors.kind.bytes() as u32,
        descriptors: features.descriptors.data.clone(),
    }
}
