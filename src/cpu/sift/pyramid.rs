//! Gaussian and difference-of-Gaussian scale space, as OpenCV's SIFT builds it.
//!
//! Grey values stay in 0..255 as f32. The base image is the input (or its 2x bilinear
//! upsampling, see [`Upscale`]) blurred from an assumed camera blur of 0.5 up to `sigma`.
//! Each octave holds `n_layers + 3` Gaussian images reached by incremental blurs; the
//! first image of an octave is every second pixel of the image `n_layers` of the octave
//! before (blur 2·sigma there, so sigma again after halving).

use rayon::prelude::*;

use crate::image::GrayImage;

/// Blur OpenCV assumes the camera already applied.
const INITIAL_SIGMA: f64 = 0.5;

/// A single-channel f32 image, rows packed.
#[derive(Clone, Debug, PartialEq)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub data: Vec<f32>,
}

impl Plane {
    pub fn new(width: usize, height: usize) -> Self {
        Self {
            width,
            height,
            data: vec![0.0; width * height],
        }
    }

    pub fn from_gray(image: &GrayImage) -> Self {
        Self {
            width: image.width(),
            height: image.height(),
            data: image.data().iter().map(|&v| v as f32).collect(),
        }
    }

    #[inline]
    pub fn at(&self, x: usize, y: usize) -> f32 {
        self.data[y * self.width + x]
    }

    #[inline]
    pub fn row(&self, y: usize) -> &[f32] {
        &self.data[y * self.width..(y + 1) * self.width]
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

    fn is_on(self) -> bool {
        self != Self::Off
    }
}

/// Both pyramids: `gaussian[o]` has `n_layers + 3` images, `dog[o]` has `n_layers + 2`.
pub struct ScaleSpace {
    pub gaussian: Vec<Vec<Plane>>,
    pub dog: Vec<Vec<Plane>>,
    /// Octave index of `gaussian[0]` in input pixels: -1 when upscaled, else 0.
    pub first_octave: i32,
}

/// OpenCV's octave count: `round(log2(min side of the base) - 2)` minus the first octave.
pub fn octave_count(width: usize, height: usize, upscale: bool) -> usize {
    let scale = if upscale { 2.0 } else { 1.0 };
    let min_side = width.min(height) as f64 * scale;
    if min_side < 1.0 {
        return 0;
    }
    let n = (min_side.log2() - 2.0).round() as i64 + i64::from(upscale);
    n.max(0) as usize
}

/// Blur added to go from layer `i - 1` to layer `i` of an octave (layer 0: the octave's own sigma).
pub fn layer_sigmas(sigma: f64, n_layers: usize) -> Vec<f64> {
    let k = 2f64.powf(1.0 / n_layers as f64);
    let mut sigmas = vec![sigma];
    for i in 1..n_layers + 3 {
        let previous = k.powi(i as i32 - 1) * sigma;
        let total = previous * k;
        sigmas.push((total * total - previous * previous).sqrt());
    }
    sigmas
}

/// The blur that takes the base image (the input, or its 2x upsampling, which doubles
/// the camera's blur) from the assumed camera blur to `sigma`.
pub fn base_blur_sigma(sigma: f64, upscale: bool) -> f64 {
    let camera = if upscale {
        2.0 * INITIAL_SIGMA
    } else {
        INITIAL_SIGMA
    };
    (sigma * sigma - camera * camera).max(0.01).sqrt()
}

/// The base image of octave 0.
pub fn base_image(image: &GrayImage, sigma: f64, upscale: Upscale) -> Plane {
    let plane = Plane::from_gray(image);
    let blur = base_blur_sigma(sigma, upscale.is_on());
    if upscale.is_on() {
        let doubled = if upscale == Upscale::Precise {
            upsample_2x_precise(&plane)
        } else {
            upsample_2x(&plane)
        };
        gaussian_blur(&doubled, blur)
    } else {
        gaussian_blur(&plane, blur)
    }
}

impl ScaleSpace {
    pub fn build(image: &GrayImage, sigma: f64, n_layers: usize, upscale: Upscale) -> Self {
        let n_octaves = octave_count(image.width(), image.height(), upscale.is_on());
        let sigmas = layer_sigmas(sigma, n_layers);
        let mut gaussian: Vec<Vec<Plane>> = Vec::with_capacity(n_octaves);
        for o in 0..n_octaves {
            let first = match gaussian.last() {
                None => base_image(image, sigma, upscale),
                Some(previous) => {
                    let source = &previous[n_layers];
                    if source.width < 2 || source.height < 2 {
                        break;
                    }
                    downsample_2x(source)
                }
            };
            let mut layers = Vec::with_capacity(n_layers + 3);
            layers.push(first);
            for &s in &sigmas[1..] {
                let next = gaussian_blur(layers.last().expect("layer 0 pushed"), s);
                layers.push(next);
            }
            gaussian.push(layers);
            debug_assert_eq!(gaussian.len(), o + 1);
        }
        let dog = gaussian
            .par_iter()
            .map(|layers| {
                layers
                    .windows(2)
                    .map(|w| difference(&w[1], &w[0]))
                    .collect()
            })
            .collect();
        Self {
            gaussian,
            dog,
            first_octave: if upscale.is_on() { -1 } else { 0 },
        }
    }
}

fn difference(a: &Plane, b: &Plane) -> Plane {
    Plane {
        width: a.width,
        height: a.height,
        data: a.data.iter().zip(&b.data).map(|(x, y)| x - y).collect(),
    }
}

/// Every second pixel, as OpenCV's `resize(..., INTER_NEAREST)` to half size.
pub fn downsample_2x(src: &Plane) -> Plane {
    let (w, h) = (src.width / 2, src.height / 2);
    let mut out = Plane::new(w, h);
    out.data
        .par_chunks_mut(w.max(1))
        .enumerate()
        .for_each(|(y, row)| {
            let src_row = src.row(2 * y);
            for (x, v) in row.iter_mut().enumerate() {
                *v = src_row[2 * x];
            }
        });
    out
}

/// 2x bilinear upsampling with OpenCV's pixel-centre alignment and replicated border.
pub fn upsample_2x(src: &Plane) -> Plane {
    let (w, h) = (src.width * 2, src.height * 2);
    // Destination pixel d samples source coordinate (d + 0.5) / 2 - 0.5.
    let taps = |d: usize, n: usize| -> (usize, usize, f32) {
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
    };
    let x_taps: Vec<_> = (0..w).map(|x| taps(x, src.width)).collect();
    let mut out = Plane::new(w, h);
    out.data.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let (y0, y1, fy) = taps(y, src.height);
        let (r0, r1) = (src.row(y0), src.row(y1));
        for (v, &(x0, x1, fx)) in row.iter_mut().zip(&x_taps) {
            let top = r0[x0] * (1.0 - fx) + r0[x1] * fx;
            let bottom = r1[x0] * (1.0 - fx) + r1[x1] * fx;
            *v = top * (1.0 - fy) + bottom * fy;
        }
    });
    out
}

/// 2x upsampling that puts input pixel `x` at `2x` and averages neighbours in between, as
/// OpenCV's `enable_precise_upscale` (`warpAffine` by 0.5, `INTER_LINEAR`, BORDER_REFLECT:
/// the last odd row and column repeat the input's last). Exact for 0..255 integers, as
/// OpenCV's weights 0.5 and 0.25 are.
pub fn upsample_2x_precise(src: &Plane) -> Plane {
    let (w, h) = (src.width * 2, src.height * 2);
    // Destination d averages input taps d / 2 and (d + 1) / 2, the latter reflected back.
    let taps = |d: usize, n: usize| (d / 2, d.div_ceil(2).min(n - 1));
    let x_taps: Vec<_> = (0..w).map(|x| taps(x, src.width)).collect();
    let mut out = Plane::new(w, h);
    out.data.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let (y0, y1) = taps(y, src.height);
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

/// The normalised kernel of OpenCV's `getGaussianKernel` for f32 images:
/// size `round(8 sigma + 1) | 1` (four sigmas each side).
pub fn gaussian_kernel(sigma: f64) -> Vec<f32> {
    let size = ((sigma * 8.0 + 1.0).round() as usize) | 1;
    let centre = (size / 2) as f64;
    let weights: Vec<f64> = (0..size)
        .map(|i| {
            let d = i as f64 - centre;
            (-d * d / (2.0 * sigma * sigma)).exp()
        })
        .collect();
    let sum: f64 = weights.iter().sum();
    weights.iter().map(|w| (w / sum) as f32).collect()
}

/// Separable Gaussian blur with BORDER_REFLECT_101, rows in parallel. Both passes loop
/// over taps outside and pixels inside (so the inner loop vectorises) and add the two
/// mirrored taps of the symmetric kernel before multiplying.
pub fn gaussian_blur(src: &Plane, sigma: f64) -> Plane {
    let kernel = gaussian_kernel(sigma);
    let radius = kernel.len() / 2;
    let (w, h) = (src.width, src.height);

    let mut horizontal = Plane::new(w, h);
    let x_index: Vec<usize> = (0..w + 2 * radius)
        .map(|i| reflect_101(i as i64 - radius as i64, w))
        .collect();
    horizontal.data.par_chunks_mut(w).enumerate().for_each_init(
        || vec![0f32; w + 2 * radius],
        |padded, (y, out)| {
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

    let mut out = Plane::new(w, h);
    out.data
        .par_chunks_mut(w)
        .enumerate()
        .for_each(|(y, out_row)| {
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
            data: vec![0.0, 10.0, 40.0, 100.0, 110.0, 140.0],
        };
        let up = upsample_2x_precise(&src);
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
    fn layer_sigmas_compose_to_the_octave_scale() {
        // Blurs compose in quadrature: sigma^2 + sum(sig_i^2) over layers 1..=n gives (2 sigma)^2.
        let s = layer_sigmas(1.6, 3);
        assert_eq!(s.len(), 6);
        let total: f64 = s[..4].iter().map(|v| v * v).sum();
        assert!((total.sqrt() - 3.2).abs() < 1e-9, "{}", total.sqrt());
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
