//! SIFT's scale space as both backends build it (OpenCV's geometry): the octaves, the
//! layers' blurs and their Gaussian kernels, and the extrema's prefilter threshold.
//! The CPU reference (`cpu::sift`) blurs with these kernels; the CUDA backend uploads
//! them (docs/sift-reference.md).

/// Blur OpenCV assumes the camera already applied.
const INITIAL_SIGMA: f64 = 0.5;

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

/// The normalised kernel of OpenCV's `getGaussianKernel` for f32 images:
/// size `round(8 sigma + 1) | 1` (four sigmas each side).
pub fn gaussian_kernel(sigma: f64) -> Vec<f32> {
    let size = blur_radius(sigma) * 2 + 1;
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

/// Half the size of [`gaussian_kernel`]`(sigma)`.
pub fn blur_radius(sigma: f64) -> usize {
    (((sigma * 8.0 + 1.0).round() as usize) | 1) / 2
}

/// OpenCV's prefilter on |DoG| (grey levels 0..255): `floor(0.5 * contrast / n_layers * 255)`.
/// It is half the final contrast test, applied before refinement to skip most pixels.
pub fn prefilter_threshold(contrast_threshold: f64, n_layers: usize) -> f32 {
    (0.5 * contrast_threshold / n_layers as f64 * 255.0).floor() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_sigmas_compose_to_the_octave_scale() {
        // Blurs compose in quadrature: sigma^2 + sum(sig_i^2) over layers 1..=n gives (2 sigma)^2.
        let s = layer_sigmas(1.6, 3);
        assert_eq!(s.len(), 6);
        let total: f64 = s[..4].iter().map(|v| v * v).sum();
        assert!((total.sqrt() - 3.2).abs() < 1e-9, "{}", total.sqrt());
    }

    #[test]
    fn opencv_prefilter_threshold() {
        // floor(0.5 * 0.04 / 3 * 255) = floor(1.7) = 1
        assert_eq!(prefilter_threshold(0.04, 3), 1.0);
        assert_eq!(prefilter_threshold(0.1, 2), 6.0);
    }
}
