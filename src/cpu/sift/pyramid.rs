//! Gaussian and difference-of-Gaussian scale space, as OpenCV's SIFT builds it.
//!
//! Grey values stay in 0..255 as f32. The base image is the input (or its 2x bilinear
//! upsampling, see [`Upscale`]) blurred from an assumed camera blur of 0.5 up to `sigma`.
//! Each octave holds `n_layers + 3` Gaussian images reached by incremental blurs; the
//! first image of an octave is every second pixel of the image `n_layers` of the octave
//! before (blur 2·sigma there, so sigma again after halving).
//!
//! An [`Octave`] makes any band of rows of all its layers ([`Octave::band`]), so that a
//! large frame is processed a band at a time with memory bounded by the band, not the
//! frame. Every pixel of a band is computed by the same operations in the same order as
//! in the whole image: bands are bit-identical to the rows of a whole-image build.

use std::ops::Range;

use rayon::prelude::*;

use crate::image::GrayImage;
use crate::spec::scale_space::{
    base_blur_sigma, blur_radius, gaussian_kernel, layer_sigmas, octave_count,
};

/// Rows `first_row..first_row + data.len() / width` of a single-channel f32 image of
/// `width` x `height` pixels, rows packed; coordinates are those of the whole image.
#[derive(Clone, Debug, PartialEq)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub first_row: usize,
    pub data: Vec<f32>,
}

impl Plane {
    pub fn new(width: usize, height: usize) -> Self {
        Self::rows(width, height, 0..height)
    }

    /// Zeroed rows `rows` of a `width` x `height` image.
    pub fn rows(width: usize, height: usize, rows: Range<usize>) -> Self {
        Self {
            width,
            height,
            first_row: rows.start,
            data: vec![0.0; width * rows.len()],
        }
    }

    /// Rows `rows` of `image`, as f32.
    pub fn from_gray_rows(image: &GrayImage, rows: Range<usize>) -> Self {
        let width = image.width();
        Self {
            width,
            height: image.height(),
            first_row: rows.start,
            data: image.data()[rows.start * width..rows.end * width]
                .iter()
                .map(|&v| v as f32)
                .collect(),
        }
    }

    /// The rows this plane holds.
    pub fn stored_rows(&self) -> Range<usize> {
        let n = self.data.len().checked_div(self.width).unwrap_or(0);
        self.first_row..self.first_row + n
    }

    /// Whether every row of `rows` is held.
    pub fn holds(&self, rows: &Range<usize>) -> bool {
        let stored = self.stored_rows();
        rows.is_empty() || (stored.start <= rows.start && rows.end <= stored.end)
    }

    #[inline]
    pub fn at(&self, x: usize, y: usize) -> f32 {
        self.data[(y - self.first_row) * self.width + x]
    }

    #[inline]
    pub fn row(&self, y: usize) -> &[f32] {
        let start = (y - self.first_row) * self.width;
        &self.data[start..start + self.width]
    }

    /// Rows `rows` (all held) as a plane of their own.
    fn crop(&self, rows: Range<usize>) -> Plane {
        let start = (rows.start - self.first_row) * self.width;
        Plane {
            width: self.width,
            height: self.height,
            first_row: rows.start,
            data: self.data[start..start + rows.len() * self.width].to_vec(),
        }
    }
}

/// How octave -1 is made from the input, if at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upscale {
    /// No octave -1: the base is the input.
    Off,
    /// OpenCV's default `resize(INTER_LINEAR)`: upsampled pixel `d` samples input
    /// coordinate `(d + 0.5) / 2 - 0.5`, so input pixel `x` lands at `2x + 0.5` while
    /// keypoints are reported at half their upsampled coordinate: a +0.25 px bias.
    Bilinear,
    /// OpenCV's `enable_precise_upscale` (and Lowe's and VLFeat's doubling): upsampled
    /// pixel `d` samples input coordinate `d / 2`, so no bias.
    Precise,
}

impl Upscale {
    pub fn from_flags(upscale: bool, precise: bool) -> Self {
        match (upscale, precise) {
            (false, _) => Self::Off,
            (true, false) => Self::Bilinear,
            (true, true) => Self::Precise,
        }
    }

    pub fn is_on(self) -> bool {
        self != Self::Off
    }
}

/// Where an octave's layer 0 comes from.
enum Root<'a> {
    /// The first octave: the input (2x upsampled when upscaling) blurred by `blur`.
    Input {
        image: &'a GrayImage,
        upscale: Upscale,
        blur: f64,
    },
    /// Later octaves: every second pixel of layer `n_layers` of the octave before.
    Downsampled(Plane),
}

/// One octave of the scale space, able to make any band of rows of its layers.
pub struct Octave<'a> {
    root: Root<'a>,
    pub width: usize,
    pub height: usize,
    /// Blurs from layer `i - 1` to layer `i`, for `i` in `1..n_layers + 3`.
    blurs: Vec<f64>,
}

/// Rows `rows` (at least) of every Gaussian layer of an octave, and exactly those rows of
/// every DoG layer: `gaussian` has `n_layers + 3` planes, `dog` has `n_layers + 2`.
pub struct Band {
    pub gaussian: Vec<Plane>,
    pub dog: Vec<Plane>,
}

impl<'a> Octave<'a> {
    /// The first octave of `image` (octave -1 when upscaling, else 0).
    pub fn first(image: &'a GrayImage, sigma: f64, n_layers: usize, upscale: Upscale) -> Self {
        let factor = if upscale.is_on() { 2 } else { 1 };
        Self {
            root: Root::Input {
                image,
                upscale,
                blur: base_blur_sigma(sigma, upscale.is_on()),
            },
            width: image.width() * factor,
            height: image.height() * factor,
            blurs: layer_sigmas(sigma, n_layers)[1..].to_vec(),
        }
    }

    /// The octave after this one, whose layer 0 is `base` (see [`downsample_rows_into`]).
    pub fn next(&self, base: Plane) -> Octave<'a> {
        Octave {
            width: base.width,
            height: base.height,
            root: Root::Downsampled(base),
            blurs: self.blurs.clone(),
        }
    }

    /// Layer 0 of the octave after this one, to be filled band by band.
    pub fn next_base(&self) -> Plane {
        Plane::new(self.width / 2, self.height / 2)
    }

    /// Rows `rows` (non-empty) of every layer.
    pub fn band(&self, rows: Range<usize>) -> Band {
        let h = self.height;
        // Each layer is blurred from the one before: go down the chain widening the rows.
        let mut extents = vec![rows.clone()];
        for &s in self.blurs.iter().rev() {
            let above = extents.last().expect("starts non-empty").clone();
            extents.push(blur_rows_read(above, blur_radius(s), h));
        }
        extents.reverse();
        let mut gaussian = Vec::with_capacity(extents.len());
        gaussian.push(match &self.root {
            Root::Input {
                image,
                upscale,
                blur,
            } => {
                let source_rows = blur_rows_read(extents[0].clone(), blur_radius(*blur), h);
                let source = input_rows(image, *upscale, source_rows);
                gaussian_blur_rows(&source, *blur, extents[0].clone())
            }
            Root::Downsampled(base) => base.crop(extents[0].clone()),
        });
        for (&s, extent) in self.blurs.iter().zip(&extents[1..]) {
            let next = gaussian_blur_rows(gaussian.last().expect("layer 0"), s, extent.clone());
            gaussian.push(next);
        }
        let dog = gaussian
            .par_windows(2)
            .map(|w| difference_rows(&w[1], &w[0], rows.clone()))
            .collect();
        Band { gaussian, dog }
    }
}

/// Rows `rows` of the first octave's source: the input, or its 2x upsampling.
fn input_rows(image: &GrayImage, upscale: Upscale, rows: Range<usize>) -> Plane {
    let h = image.height();
    let read = |taps: &dyn Fn(usize) -> (usize, usize)| {
        let first = taps(rows.start).0;
        let last = taps(rows.end - 1).1;
        Plane::from_gray_rows(image, first..last + 1)
    };
    match upscale {
        Upscale::Off => Plane::from_gray_rows(image, rows),
        Upscale::Bilinear => {
            let source = read(&|d| {
                let (a, b, _) = bilinear_taps(d, h);
                (a, b)
            });
            upsample_2x_rows(&source, rows)
        }
        Upscale::Precise => {
            let source = read(&|d| precise_taps(d, h));
            upsample_2x_precise_rows(&source, rows)
        }
    }
}

/// All octaves whole: `gaussian[o]` has `n_layers + 3` images, `dog[o]` has `n_layers + 2`.
/// Memory grows with the frame (about 15 planes of octave 0's size): for tests and
/// [`describe_frames`](super::SiftExtractor::describe_frames), not frame extraction.
pub struct ScaleSpace {
    pub gaussian: Vec<Vec<Plane>>,
    pub dog: Vec<Vec<Plane>>,
    /// Octave index of `gaussian[0]` in input pixels: -1 when upscaled, else 0.
    pub first_octave: i32,
}

impl ScaleSpace {
    pub fn build(image: &GrayImage, sigma: f64, n_layers: usize, upscale: Upscale) -> Self {
        let n_octaves = octave_count(image.width(), image.height(), upscale.is_on());
        let (mut gaussian, mut dog) = (Vec::new(), Vec::new());
        let mut octave = Octave::first(image, sigma, n_layers, upscale);
        for o in 0..n_octaves {
            let band = octave.band(0..octave.height);
            gaussian.push(band.gaussian);
            dog.push(band.dog);
            let source = &gaussian[o][n_layers];
            if o + 1 == n_octaves || source.width < 2 || source.height < 2 {
                break;
            }
            let mut base = octave.next_base();
            downsample_rows_into(source, 0..octave.height, &mut base);
            octave = octave.next(base);
        }
        Self {
            gaussian,
            dog,
            first_octave: if upscale.is_on() { -1 } else { 0 },
        }
    }
}

/// Rows `rows` of `a - b`.
fn difference_rows(a: &Plane, b: &Plane, rows: Range<usize>) -> Plane {
    let mut out = Plane::rows(a.width, a.height, rows.clone());
    for (y, out_row) in rows.zip(out.data.chunks_mut(a.width.max(1))) {
        for ((o, x), y) in out_row.iter_mut().zip(a.row(y)).zip(b.row(y)) {
            *o = x - y;
        }
    }
    out
}

/// The rows of `dst` (every second pixel of `src`, as OpenCV's `resize(...,
/// INTER_NEAREST)` to half size) that come from rows `src_rows` of `src`.
pub fn downsample_rows_into(src: &Plane, src_rows: Range<usize>, dst: &mut Plane) {
    let w = dst.width;
    let rows = src_rows.start.div_ceil(2)..src_rows.end.div_ceil(2).min(dst.height);
    if w == 0 || rows.is_empty() {
        return;
    }
    dst.data[rows.start * w..rows.end * w]
        .par_chunks_mut(w)
        .zip(rows)
        .for_each(|(row, y)| {
            let src_row = src.row(2 * y);
            for (x, v) in row.iter_mut().enumerate() {
                *v = src_row[2 * x];
            }
        });
}

/// Source taps of upsampled pixel `d` of `n`: OpenCV's `INTER_LINEAR` at source
/// coordinate `(d + 0.5) / 2 - 0.5` with replicated border.
fn bilinear_taps(d: usize, n: usize) -> (usize, usize, f32) {
    let f = (d as f32 + 0.5) * 0.5 - 0.5;
    let i = f.floor();
    let frac = f - i;
    let i = i as i64;
    if i < 0 {
        (0, 0, 0.0)
    } else if i as usize >= n - 1 {
        (n - 1, n - 1, 0.0)
    } else {
        (i as usize, i as usize + 1, frac)
    }
}

/// Rows `rows` of the 2x bilinear upsampling of `src` (which holds the rows they read),
/// with OpenCV's pixel-centre alignment and replicated border.
pub fn upsample_2x_rows(src: &Plane, rows: Range<usize>) -> Plane {
    let w = src.width * 2;
    let x_taps: Vec<_> = (0..w).map(|x| bilinear_taps(x, src.width)).collect();
    let mut out = Plane::rows(w, src.height * 2, rows.clone());
    out.data.par_chunks_mut(w).zip(rows).for_each(|(row, y)| {
        let (y0, y1, fy) = bilinear_taps(y, src.height);
        let (r0, r1) = (src.row(y0), src.row(y1));
        for (v, &(x0, x1, fx)) in row.iter_mut().zip(&x_taps) {
            let top = r0[x0] * (1.0 - fx) + r0[x1] * fx;
            let bottom = r1[x0] * (1.0 - fx) + r1[x1] * fx;
            *v = top * (1.0 - fy) + bottom * fy;
        }
    });
    out
}

/// Source taps of upsampled pixel `d` of `n` for the precise upsampling: `d / 2` and
/// `(d + 1) / 2`, the latter reflected back past the last pixel.
fn precise_taps(d: usize, n: usize) -> (usize, usize) {
    (d / 2, d.div_ceil(2).min(n - 1))
}

/// Rows `rows` of the 2x upsampling that puts input pixel `x` at `2x` and averages
/// neighbours in between, as OpenCV's `enable_precise_upscale` (`warpAffine` by 0.5,
/// `INTER_LINEAR`, BORDER_REFLECT: the last odd row and column repeat the input's last).
/// Exact for 0..255 integers, as OpenCV's weights 0.5 and 0.25 are.
pub fn upsample_2x_precise_rows(src: &Plane, rows: Range<usize>) -> Plane {
    let w = src.width * 2;
    let x_taps: Vec<_> = (0..w).map(|x| precise_taps(x, src.width)).collect();
    let mut out = Plane::rows(w, src.height * 2, rows.clone());
    out.data.par_chunks_mut(w).zip(rows).for_each(|(row, y)| {
        let (y0, y1) = precise_taps(y, src.height);
        let (r0, r1) = (src.row(y0), src.row(y1));
        for (v, &(x0, x1)) in row.iter_mut().zip(&x_taps) {
            *v = (r0[x0] + r0[x1] + r1[x0] + r1[x1]) * 0.25;
        }
    });
    out
}

/// OpenCV's `borderInterpolate` for BORDER_REFLECT_101 (`gfedcb|abcdefgh|gfedcba`),
/// reflecting as often as needed when the kernel is wider than the image.
pub fn reflect_101(mut p: i64, len: usize) -> usize {
    let len = len as i64;
    if len == 1 {
        return 0;
    }
    while p < 0 || p >= len {
        p = if p < 0 { -p } else { 2 * len - 2 - p };
    }
    p as usize
}

/// The rows of its source that a blur of `radius` reads to make rows `rows` of a
/// `height`-row image (BORDER_REFLECT_101).
pub fn blur_rows_read(rows: Range<usize>, radius: usize, height: usize) -> Range<usize> {
    let reach = radius as i64;
    let (lo, hi) = (rows.start as i64 - reach..rows.end as i64 + reach)
        .map(|p| reflect_101(p, height))
        .fold((usize::MAX, 0), |(lo, hi), r| (lo.min(r), hi.max(r + 1)));
    lo..hi
}

/// The whole-image separable Gaussian blur.
pub fn gaussian_blur(src: &Plane, sigma: f64) -> Plane {
    gaussian_blur_rows(src, sigma, 0..src.height)
}

/// Rows `rows` of the separable Gaussian blur of `src` (which holds the rows
/// [`blur_rows_read`] names) with BORDER_REFLECT_101, rows in parallel. Both passes loop
/// over taps outside and pixels inside (so the inner loop vectorises) and add the two
/// mirrored taps of the symmetric kernel before multiplying.
pub fn gaussian_blur_rows(src: &Plane, sigma: f64, rows: Range<usize>) -> Plane {
    let kernel = gaussian_kernel(sigma);
    let radius = kernel.len() / 2;
    let (w, h) = (src.width, src.height);

    let read = blur_rows_read(rows.clone(), radius, h);
    let mut horizontal = Plane::rows(w, h, read.clone());
    let x_index: Vec<usize> = (0..w + 2 * radius)
        .map(|i| reflect_101(i as i64 - radius as i64, w))
        .collect();
    horizontal.data.par_chunks_mut(w).zip(read).for_each_init(
        || vec![0f32; w + 2 * radius],
        |padded, (out, y)| {
            let row = src.row(y);
            for (p, &i) in padded.iter_mut().zip(&x_index) {
                *p = row[i];
            }
            let centre = &padded[radius..radius + w];
            let weight = kernel[radius];
            for (o, &v) in out.iter_mut().zip(centre) {
                *o = weight * v;
            }
            for k in 1..=radius {
                let left = &padded[radius - k..radius - k + w];
                let right = &padded[radius + k..radius + k + w];
                let weight = kernel[radius + k];
                for ((o, &a), &b) in out.iter_mut().zip(left).zip(right) {
                    *o += weight * (a + b);
                }
            }
        },
    );

    let mut out = Plane::rows(w, h, rows.clone());
    out.data
        .par_chunks_mut(w)
        .zip(rows)
        .for_each(|(out_row, y)| {
            let row_at = |offset: i64| horizontal.row(reflect_101(y as i64 + offset, h));
            let weight = kernel[radius];
            for (o, &v) in out_row.iter_mut().zip(row_at(0)) {
                *o = weight * v;
            }
            for k in 1..=radius {
                let (up, down) = (row_at(-(k as i64)), row_at(k as i64));
                let weight = kernel[radius + k];
                for ((o, &a), &b) in out_row.iter_mut().zip(up).zip(down) {
                    *o += weight * (a + b);
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_101_matches_opencv_border_rule() {
        // gfedcb|abcdefgh|gfedcba for len 8: -1 -> 1, -2 -> 2, 8 -> 6, 9 -> 5.
        assert_eq!(reflect_101(-1, 8), 1);
        assert_eq!(reflect_101(-2, 8), 2);
        assert_eq!(reflect_101(8, 8), 6);
        assert_eq!(reflect_101(9, 8), 5);
        // Wider than the image: keeps reflecting and stays inside.
        for p in -40..40 {
            assert!(reflect_101(p, 3) < 3);
        }
        assert_eq!(reflect_101(5, 1), 0);
    }

    #[test]
    fn precise_upsampling_puts_input_pixels_at_even_coordinates() {
        let src = Plane {
            width: 3,
            height: 2,
            first_row: 0,
            data: vec![0.0, 10.0, 40.0, 100.0, 110.0, 140.0],
        };
        let up = upsample_2x_precise_rows(&src, 0..4);
        assert_eq!((up.width, up.height), (6, 4));
        for y in 0..2 {
            for x in 0..3 {
                assert_eq!(up.at(2 * x, 2 * y), src.at(x, y));
            }
        }
        // Between pixels: the mean of the two (or four) neighbours.
        assert_eq!(up.at(1, 0), 5.0);
        assert_eq!(up.at(0, 1), 50.0);
        assert_eq!(up.at(3, 1), (10.0 + 40.0 + 110.0 + 140.0) / 4.0);
        // Past the last pixel the border reflects it: the last column and row repeat.
        assert_eq!(up.at(5, 0), 40.0);
        assert_eq!(up.at(4, 3), 140.0);
    }

    #[test]
    fn blur_keeps_the_mean_and_spreads_an_impulse_with_the_right_variance() {
        let mut p = Plane::new(61, 61);
        p.data[30 * 61 + 30] = 1000.0;
        let b = gaussian_blur(&p, 3.0);
        let sum: f32 = b.data.iter().sum();
        assert!((sum - 1000.0).abs() < 0.5, "{sum}");
        let var_x: f32 = (0..61)
            .flat_map(|y| (0..61).map(move |x| (x, y)))
            .map(|(x, y)| b.at(x, y) * ((x as f32 - 30.0).powi(2)))
            .sum::<f32>()
            / sum;
        assert!((var_x - 9.0).abs() < 0.1, "{var_x}");
    }

    #[test]
    fn dog_of_a_gaussian_blob_peaks_at_the_blob_scale() {
        // A blob of std s has normalised-DoG response maximal near scale sigma = s
        // (Lindeberg): its centre should be most negative (bright blob) there.
        let size = 129usize;
        let s = 6.0f32;
        let data: Vec<u8> = (0..size * size)
            .map(|i| {
                let (x, y) = ((i % size) as f32 - 64.0, (i / size) as f32 - 64.0);
                (20.0 + 200.0 * (-(x * x + y * y) / (2.0 * s * s)).exp()) as u8
            })
            .collect();
        let image = GrayImage::new(size, size, data).unwrap();
        let space = ScaleSpace::build(&image, 1.6, 3, Upscale::Off);
        // Scale of DoG layer i of octave o in input pixels: 1.6 * 2^(o + i/3).
        let mut best = (0.0f32, 0.0f64);
        for (o, layers) in space.dog.iter().enumerate() {
            let (cx, cy) = (64 >> o, 64 >> o);
            for (i, d) in layers.iter().enumerate() {
                let response = -d.at(cx, cy);
                let scale = 1.6 * 2f64.powf(o as f64 + i as f64 / 3.0);
                if response > best.0 {
                    best = (response, scale);
                }
            }
        }
        // The DoG approximates (k - 1) sigma^2 Laplacian; the blob peak sits at sigma ~ s.
        assert!(
            (best.1 / s as f64 - 1.0).abs() < 0.3,
            "DoG peaked at scale {} for a blob of std {s}",
            best.1
        );
    }
}
