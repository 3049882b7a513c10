//! Grey images and the one place where camera encodings become 8-bit grey.
//!
//! Colour is weighted as OpenCV 4's `cvtColor(..., COLOR_RGB2GRAY)` does for 8-bit
//! data (the OpenCV of ROS 2 Jazzy's cv_bridge): BT.601 in 14-bit fixed point,
//! `Y = (4899 R + 9617 G + 1868 B + 8192) >> 14`. OpenCV 5 rounds with 15-bit weights,
//! one grey level apart in about 0.05 % of pixels (tests/gray_vs_opencv.rs). mono16
//! keeps the high byte.
//! The YUV encodings already carry luma: their grey is the Y byte of each pixel, as
//! OpenCV's `COLOR_YUV2GRAY_*` takes it. [`Encoding::layout`] is that rule as data; the
//! GPU's conversion kernel (kernels/image/gray.cu) applies the same table.

use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, ImageError, Result};
use crate::frame_memory::PageLockedBytes;

/// Largest side accepted anywhere; larger images are rejected, never allocated.
pub const MAX_SIDE: usize = 1 << 16;

/// The default of `max_image_pixels`: larger frames are rejected before any allocation.
pub const DEFAULT_MAX_PIXELS: u64 = 8192 * 8192;

/// An owned 8-bit grey image, rows packed without padding.
#[derive(Clone, PartialEq, Eq)]
pub struct GrayImage {
    width: usize,
    height: usize,
    data: Vec<u8>,
}

impl std::fmt::Debug for GrayImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GrayImage({}x{})", self.width, self.height)
    }
}

/// Camera pixel layouts, named as `sensor_msgs/Image` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Mono8,
    Mono16,
    Rgb8,
    Bgr8,
    Rgba8,
    Bgra8,
    /// 4:2:2 packed as U Y0 V Y1 (`uyvy`, formerly `yuv422`).
    Uyvy,
    /// 4:2:2 packed as Y0 U Y1 V (`yuyv`, formerly `yuv422_yuy2`).
    Yuyv,
    /// 4:2:0: a Y plane, then `ceil(height / 2)` rows of interleaved U V.
    Nv12,
    /// 4:2:0: a Y plane, then `ceil(height / 2)` rows of interleaved V U.
    Nv21,
    /// 4:4:4: a Y plane, then `height` rows of interleaved U V, twice as long.
    Nv24,
}

/// The encodings `Encoding::parse` accepts, as error messages list them.
pub const SUPPORTED_ENCODINGS: &str =
    "mono8, mono16, rgb8, bgr8, rgba8, bgra8, uyvy (yuv422), yuyv (yuv422_yuy2), nv12, nv21, nv24";

/// How one pixel of a row becomes grey: the rule both backends apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrayRule {
    /// The byte at this offset in the pixel is the grey value (mono, the Y of YUV).
    Byte(usize),
    /// BT.601 luma of the bytes at these offsets.
    Luma {
        red: usize,
        green: usize,
        blue: usize,
    },
}

/// Where a frame's grey values sit: `bytes_per_pixel` apart in each of the first
/// `height` rows, converted by `rule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelLayout {
    pub bytes_per_pixel: usize,
    pub rule: GrayRule,
}

impl Encoding {
    /// Parses a `sensor_msgs/Image` encoding string.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "mono8" | "8UC1" => Encoding::Mono8,
            "mono16" | "16UC1" => Encoding::Mono16,
            "rgb8" => Encoding::Rgb8,
            "bgr8" | "8UC3" => Encoding::Bgr8,
            "rgba8" => Encoding::Rgba8,
            "bgra8" | "8UC4" => Encoding::Bgra8,
            "uyvy" | "yuv422" => Encoding::Uyvy,
            "yuyv" | "yuv422_yuy2" => Encoding::Yuyv,
            "nv12" => Encoding::Nv12,
            "nv21" => Encoding::Nv21,
            "nv24" => Encoding::Nv24,
            other => {
                return Err(Error::Image(ImageError::UnsupportedEncoding(
                    other.to_string(),
                )))
            }
        })
    }

    /// The name `sensor_msgs/Image` gives it (the current one where ROS renamed it).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Mono8 => "mono8",
            Encoding::Mono16 => "mono16",
            Encoding::Rgb8 => "rgb8",
            Encoding::Bgr8 => "bgr8",
            Encoding::Rgba8 => "rgba8",
            Encoding::Bgra8 => "bgra8",
            Encoding::Uyvy => "uyvy",
            Encoding::Yuyv => "yuyv",
            Encoding::Nv12 => "nv12",
            Encoding::Nv21 => "nv21",
            Encoding::Nv24 => "nv24",
        }
    }

    /// Where the grey values of a row sit and how they are computed. mono16 keeps the
    /// high byte: the first in big-endian data, the second in little-endian data.
    pub fn layout(self, big_endian: bool) -> PixelLayout {
        let (bytes_per_pixel, rule) = match self {
            Encoding::Mono8 | Encoding::Nv12 | Encoding::Nv21 | Encoding::Nv24 => {
                (1, GrayRule::Byte(0))
            }
            Encoding::Mono16 => (2, GrayRule::Byte(usize::from(!big_endian))),
            Encoding::Uyvy => (2, GrayRule::Byte(1)),
            Encoding::Yuyv => (2, GrayRule::Byte(0)),
            Encoding::Rgb8 | Encoding::Rgba8 => (
                if self == Encoding::Rgb8 { 3 } else { 4 },
                GrayRule::Luma {
                    red: 0,
                    green: 1,
                    blue: 2,
                },
            ),
            Encoding::Bgr8 | Encoding::Bgra8 => (
                if self == Encoding::Bgr8 { 3 } else { 4 },
                GrayRule::Luma {
                    red: 2,
                    green: 1,
                    blue: 0,
                },
            ),
        };
        PixelLayout {
            bytes_per_pixel,
            rule,
        }
    }

    pub fn bytes_per_pixel(self) -> usize {
        self.layout(false).bytes_per_pixel
    }

    /// Bytes a frame needs after its `height` rows of `step` bytes: the chroma plane of
    /// the planar encodings (rows of `step` bytes), nothing for packed ones.
    fn chroma_plane_bytes(self, step: usize, height: usize) -> Option<usize> {
        match self {
            Encoding::Nv12 | Encoding::Nv21 => step.checked_mul(height.div_ceil(2)),
            Encoding::Nv24 => step.checked_mul(height)?.checked_mul(2),
            _ => Some(0),
        }
    }
}

/// A borrowed, possibly padded frame in one of the camera encodings.
#[derive(Clone, Copy, Debug)]
pub struct RawFrame<'a> {
    pub encoding: Encoding,
    pub width: usize,
    pub height: usize,
    /// Bytes from the start of one row to the next.
    pub step: usize,
    /// Only meaningful for mono16.
    pub big_endian: bool,
    pub data: &'a [u8],
    /// The page-locked block `data` lies at the start of, when it was decoded into one
    /// ([`crate::frame_memory`]): a GPU backend uploads from it without a copy.
    pub page_locked: Option<&'a PageLockedBytes>,
}

impl RawFrame<'_> {
    /// Checks the size, the step and that the data holds every row (and the chroma
    /// plane of planar encodings), so that converting cannot read past its end.
    pub fn validate(&self) -> Result<()> {
        let RawFrame {
            encoding,
            width,
            height,
            step,
            data,
            ..
        } = *self;
        check_size(width, height)?;
        let row_bytes = width * encoding.bytes_per_pixel();
        if step < row_bytes {
            return Err(Error::Image(ImageError::Invalid(format!(
                "step {step} is smaller than a row of {width} {} pixels ({row_bytes} bytes)",
                encoding.name()
            ))));
        }
        let overflow = || {
            Error::Image(ImageError::Invalid(format!(
                "step {step} x height {height} overflows"
            )))
        };
        let chroma = encoding
            .chroma_plane_bytes(step, height)
            .ok_or_else(overflow)?;
        // A planar frame's chroma plane starts after whole rows of the Y plane; a packed
        // frame's last row may end without its padding.
        let needed = if chroma > 0 {
            step.checked_mul(height).and_then(|n| n.checked_add(chroma))
        } else {
            step.checked_mul(height - 1)
                .and_then(|n| n.checked_add(row_bytes))
        }
        .ok_or_else(overflow)?;
        if data.len() < needed {
            return Err(Error::Image(ImageError::Invalid(format!(
                "data has {} bytes, {width}x{height} {} with step {step} needs {needed}",
                data.len(),
                encoding.name()
            ))));
        }
        Ok(())
    }
}

fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((4899 * r as u32 + 9617 * g as u32 + 1868 * b as u32 + 8192) >> 14) as u8
}

/// [`luma`] of a row of `N`-byte pixels with red, green and blue at `R`, `G`, `B`: known
/// at compile time, the loop vectorises (a 1080p bgr8 frame in a fraction of the time).
fn luma_row<const N: usize, const R: usize, const G: usize, const B: usize>(
    row: &[u8],
    out: &mut [u8],
) {
    for (grey, pixel) in out.iter_mut().zip(row.chunks_exact(N)) {
        *grey = luma(pixel[R], pixel[G], pixel[B]);
    }
}

/// One row of a frame (`row` holds its pixels, no padding) to grey.
fn gray_row(
    PixelLayout {
        bytes_per_pixel,
        rule,
    }: PixelLayout,
    row: &[u8],
    out: &mut [u8],
) {
    match rule {
        GrayRule::Byte(0) if bytes_per_pixel == 1 => out.copy_from_slice(row),
        GrayRule::Byte(offset) => {
            for (grey, pixel) in out.iter_mut().zip(row.chunks_exact(bytes_per_pixel)) {
                *grey = pixel[offset];
            }
        }
        GrayRule::Luma { red, green, blue } => match (bytes_per_pixel, red, green, blue) {
            (3, 0, 1, 2) => luma_row::<3, 0, 1, 2>(row, out),
            (3, 2, 1, 0) => luma_row::<3, 2, 1, 0>(row, out),
            (4, 0, 1, 2) => luma_row::<4, 0, 1, 2>(row, out),
            (4, 2, 1, 0) => luma_row::<4, 2, 1, 0>(row, out),
            _ => {
                for (grey, p) in out.iter_mut().zip(row.chunks_exact(bytes_per_pixel)) {
                    *grey = luma(p[red], p[green], p[blue]);
                }
            }
        },
    }
}

/// Rows of a frame converted to grey as one parallel task: enough work per task
/// (61 k pixels at 1080p) that splitting costs nothing measurable.
const ROWS_PER_TASK: usize = 32;

impl GrayImage {
    /// Wraps packed grey pixels; `data.len()` must be `width * height`.
    pub fn new(width: usize, height: usize, data: Vec<u8>) -> Result<Self> {
        check_size(width, height)?;
        if data.len() != width * height {
            return Err(Error::Image(ImageError::Invalid(format!(
                "{width}x{height} needs {} bytes, got {}",
                width * height,
                data.len()
            ))));
        }
        Ok(Self {
            width,
            height,
            data,
        })
    }

    /// Converts any supported camera frame to grey, validating every size first.
    pub fn from_raw(frame: &RawFrame<'_>) -> Result<Self> {
        frame.validate()?;
        let layout = frame.encoding.layout(frame.big_endian);
        let (width, step) = (frame.width, frame.step);
        let row_bytes = width * layout.bytes_per_pixel;
        let mut out = vec![0; width * frame.height];
        // On the frame's critical path: the node's latency waits for it.
        out.par_chunks_mut(width * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, rows)| {
                for (i, grey) in rows.chunks_exact_mut(width).enumerate() {
                    // `validate` checked that every row's pixels lie inside `data`.
                    let start = (task * ROWS_PER_TASK + i) * step;
                    gray_row(layout, &frame.data[start..start + row_bytes], grey);
                }
            });
        Self::new(width, frame.height, out)
    }

    /// Reads PNG, JPEG or PGM/PPM from disk and converts it to grey; images of more
    /// than [`DEFAULT_MAX_PIXELS`] pixels are refused before they are decoded.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_limited(path, DEFAULT_MAX_PIXELS)
    }

    /// [`GrayImage::open`], refusing images of more than `max_pixels` pixels.
    pub fn open_limited(path: &Path, max_pixels: u64) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|source| {
            Error::Image(ImageError::Read {
                path: path.to_path_buf(),
                source,
            })
        })?;
        Self::decode(&bytes, max_pixels).map_err(|source| {
            Error::Image(ImageError::Decode {
                path: path.to_path_buf(),
                source,
            })
        })
    }

    /// Decodes PNG, JPEG or PGM/PPM held in memory and converts it to grey. The size
    /// is read from the header and checked against `max_pixels` before anything is
    /// decoded; truncated data is refused rather than decoded into a partial image.
    pub fn decode(bytes: &[u8], max_pixels: u64) -> std::result::Result<Self, DecodeError> {
        let reader = || {
            image::ImageReader::new(std::io::Cursor::new(bytes))
                .with_guessed_format()
                .map_err(|err| DecodeError::Format(image::ImageError::IoError(err)))
        };
        let format = reader()?.format().ok_or(DecodeError::UnknownFormat)?;
        let (width, height) = reader()?.into_dimensions().map_err(DecodeError::Format)?;
        let pixels = width as u64 * height as u64;
        if pixels > max_pixels {
            return Err(DecodeError::TooLarge {
                width,
                height,
                max_pixels,
            });
        }
        if format == image::ImageFormat::Jpeg && !has_end_of_image(bytes) {
            return Err(DecodeError::Truncated("JPEG"));
        }
        let decoded = reader()?.decode().map_err(DecodeError::Format)?;
        let (width, height) = (decoded.width() as usize, decoded.height() as usize);
        let gray = match decoded {
            image::DynamicImage::ImageLuma8(gray) => Self::new(width, height, gray.into_raw()),
            other => {
                let rgb = other.into_rgb8();
                Self::from_raw(&RawFrame {
                    encoding: Encoding::Rgb8,
                    width,
                    height,
                    step: width * 3,
                    big_endian: false,
                    data: rgb.as_raw(),
                    page_locked: None,
                })
            }
        };
        gray.map_err(|err| DecodeError::Invalid(err.to_string()))
    }

    /// Writes the image as PNG or PGM (by extension).
    pub fn save(&self, path: &Path) -> Result<()> {
        image::save_buffer(
            path,
            &self.data,
            self.width as u32,
            self.height as u32,
            image::ExtendedColorType::L8,
        )
        .map_err(|source| {
            Error::Image(ImageError::Encode {
                path: path.to_path_buf(),
                source,
            })
        })
    }

    /// The image stretched to `width` x `height` with bilinear filtering (the `image`
    /// crate's `Triangle`): how benchmarks and tests make frames of every size from one photo.
    pub fn resized(&self, width: usize, height: usize) -> Result<Self> {
        check_size(width, height)?;
        // Both sizes are at most MAX_SIDE, so they fit in u32.
        let source = image::ImageBuffer::<image::Luma<u8>, &[u8]>::from_raw(
            self.width as u32,
            self.height as u32,
            &self.data,
        )
        .ok_or_else(|| {
            Error::Image(ImageError::Invalid(
                "pixel buffer shorter than its size".into(),
            ))
        })?;
        let out = image::imageops::resize(
            &source,
            width as u32,
            height as u32,
            image::imageops::FilterType::Triangle,
        );
        Self::new(width, height, out.into_raw())
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    /// Packed pixels, row-major; row `y` starts at `y * width`.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The image as a packed mono8 frame.
    pub fn as_raw(&self) -> RawFrame<'_> {
        RawFrame {
            encoding: Encoding::Mono8,
            width: self.width,
            height: self.height,
            step: self.width,
            big_endian: false,
            data: &self.data,
            page_locked: None,
        }
    }

    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// The pixel at column `x`, row `y`.
    #[inline]
    pub fn get(&self, x: usize, y: usize) -> u8 {
        self.data[y * self.width + x]
    }

    /// Row `y` as a slice.
    #[inline]
    pub fn row(&self, y: usize) -> &[u8] {
        &self.data[y * self.width..(y + 1) * self.width]
    }
}

/// Why encoded image data could not become a grey image.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not a PNG, JPEG or PGM/PPM image")]
    UnknownFormat,
    #[error("{0} data is truncated (no end-of-image marker)")]
    Truncated(&'static str),
    #[error("{width}x{height} has more pixels than max_image_pixels = {max_pixels}")]
    TooLarge {
        width: u32,
        height: u32,
        max_pixels: u64,
    },
    #[error(transparent)]
    Format(image::ImageError),
    #[error("{0}")]
    Invalid(String),
}

/// How far from the end a JPEG's end-of-image marker may sit: some encoders pad.
const JPEG_TAIL: usize = 64;

/// Whether JPEG data ends with its end-of-image marker (FF D9). The decoder fills a
/// cut-off scan with grey instead of failing, so a truncated frame must be caught here.
fn has_end_of_image(bytes: &[u8]) -> bool {
    let tail = &bytes[bytes.len().saturating_sub(JPEG_TAIL)..];
    tail.windows(2).any(|pair| pair == [0xFF, 0xD9])
}

fn check_size(width: usize, height: usize) -> Result<()> {
    if width == 0 || height == 0 {
        return Err(Error::Image(ImageError::Invalid(format!(
            "zero size {width}x{height}"
        ))));
    }
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(Error::Image(ImageError::Invalid(format!(
            "size {width}x{height} exceeds the {MAX_SIDE} pixel side limit"
        ))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(encoding: Encoding, width: usize, step: usize, data: &[u8]) -> RawFrame<'_> {
        RawFrame {
            encoding,
            width,
            height: data.len() / step,
            step,
            big_endian: false,
            data,
            page_locked: None,
        }
    }

    #[test]
    fn resizing_keeps_a_ramp_a_ramp_and_refuses_zero_sizes() {
        let ramp: Vec<u8> = (0..64).flat_map(|_| (0..64).map(|x| x * 4)).collect();
        let image = GrayImage::new(64, 64, ramp).unwrap();
        let half = image.resized(32, 16).unwrap();
        assert_eq!((half.width(), half.height()), (32, 16));
        for y in 0..16 {
            let row = half.row(y);
            assert!(row.windows(2).all(|p| p[0] < p[1]), "row {y}: {row:?}");
            assert_eq!(row, half.row(0));
        }
        assert!(matches!(
            image.resized(0, 10),
            Err(Error::Image(ImageError::Invalid(_)))
        ));
    }

    #[test]
    fn colour_orders_agree() {
        let rgb = [200u8, 100, 50, 10, 20, 30];
        let bgr = [50u8, 100, 200, 30, 20, 10];
        let rgba = [200u8, 100, 50, 255, 10, 20, 30, 0];
        let a = GrayImage::from_raw(&frame(Encoding::Rgb8, 2, 6, &rgb)).unwrap();
        let b = GrayImage::from_raw(&frame(Encoding::Bgr8, 2, 6, &bgr)).unwrap();
        let c = GrayImage::from_raw(&frame(Encoding::Rgba8, 2, 8, &rgba)).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        // OpenCV: cvtColor([[200,100,50]] RGB2GRAY) == 124
        assert_eq!(a.data(), &[124, 18]);
    }

    #[test]
    fn step_padding_is_skipped() {
        let data = [1u8, 2, 99, 3, 4, 99];
        let img = GrayImage::from_raw(&frame(Encoding::Mono8, 2, 3, &data)).unwrap();
        assert_eq!(img.data(), &[1, 2, 3, 4]);
    }

    #[test]
    fn mono16_keeps_high_byte_in_either_byte_order() {
        let le = [0x34u8, 0x12, 0xff, 0xab];
        let mut f = frame(Encoding::Mono16, 2, 4, &le);
        assert_eq!(GrayImage::from_raw(&f).unwrap().data(), &[0x12, 0xab]);
        let be = [0x12u8, 0x34, 0xab, 0xff];
        f.data = &be;
        f.big_endian = true;
        assert_eq!(GrayImage::from_raw(&f).unwrap().data(), &[0x12, 0xab]);
    }

    #[test]
    fn malformed_frames_are_rejected_with_the_reason() {
        let data = [0u8; 10];
        let short_step = frame(Encoding::Rgb8, 4, 6, &data);
        let msg = GrayImage::from_raw(&short_step).unwrap_err().to_string();
        assert!(msg.contains("step 6 is smaller"), "{msg}");

        let mut short_data = frame(Encoding::Mono8, 5, 5, &data);
        short_data.height = 3;
        let msg = GrayImage::from_raw(&short_data).unwrap_err().to_string();
        assert!(msg.contains("needs 15"), "{msg}");

        let mut zero = frame(Encoding::Mono8, 0, 5, &data);
        zero.height = 2;
        assert!(GrayImage::from_raw(&zero).is_err());

        let mut huge = frame(Encoding::Mono8, MAX_SIDE + 1, MAX_SIDE + 1, &data);
        huge.height = 1;
        assert!(GrayImage::from_raw(&huge).is_err());

        assert!(matches!(
            Encoding::parse("bayer_rggb8"),
            Err(Error::Image(ImageError::UnsupportedEncoding(e))) if e == "bayer_rggb8"
        ));
    }
}
