//! The host memory [`SiftExtractor`] takes for a frame, from the same band geometry
//! [`SiftExtractor::detect_and_describe`] uses: the bound docs/memory.md states.

use std::mem::size_of;

use super::{Found, Pending, SiftExtractor, BAND_PIXELS};
use crate::spec::scale_space::{blur_radius, layer_sigmas, octave_count};

/// Bytes of one f32 sample.
const SAMPLE: usize = size_of::<f32>();

impl SiftExtractor {
    /// The most bytes of scale space held at once for a `width` x `height` frame: one
    /// band of every Gaussian and DoG layer of an octave, that octave's layer 0 (kept whole
    /// from the second octave on) and the next octave's layer 0 being filled.
    pub fn scale_space_bytes(&self, width: usize, height: usize) -> usize {
        let upscale = self.config.upscale;
        let factor = if upscale { 2 } else { 1 };
        let radii: Vec<usize> = layer_sigmas(self.config.sigma, self.n_layers())[1..]
            .iter()
            .map(|&s| blur_radius(s))
            .collect();
        // Layer i of a band is blurred for rows `reach[i]` beyond the band on each side,
        // so that the layers above it can be made from it.
        let reach: Vec<usize> = (0..=radii.len()).map(|i| radii[i..].iter().sum()).collect();
        let (mut w, mut h) = (width * factor, height * factor);
        let mut peak = 0;
        for octave in 0..octave_count(width, height, upscale) {
            let band_rows = (BAND_PIXELS / w.max(1)).max(1);
            let held = (band_rows + 2 * self.margin_rows(w, h)).min(h);
            let gaussian_rows: usize = reach.iter().map(|r| (held + 2 * r).min(h)).sum();
            let dog_rows = radii.len() * held;
            let band = (gaussian_rows + dog_rows) * w * SAMPLE;
            let own_base = if octave == 0 { 0 } else { w * h * SAMPLE };
            let next_base = (w / 2) * (h / 2) * SAMPLE;
            peak = peak.max(band + own_base + next_base);
            if w < 2 || h < 2 {
                break;
            }
            (w, h) = (w / 2, h / 2);
        }
        peak
    }

    /// Bytes per keypoint found, at most: its record while octaves are processed (in a
    /// vector that may have grown to twice its length), then its place in the returned
    /// [`Features`](crate::types::Features) (six 4-byte fields and the descriptor).
    pub const KEYPOINT_BYTES: usize = 2 * size_of::<Found>() + 6 * 4 + super::descriptor::LENGTH;

    /// Bytes per extremum candidate of one band, at most (its work item, twice over
    /// while it moves between vectors): candidates are held a band at a time.
    pub const CANDIDATE_BYTES: usize = 2 * size_of::<Pending>() + 2 * size_of::<Found>();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SiftConfig;

    fn sift(upscale: bool) -> SiftExtractor {
        SiftExtractor::new(SiftConfig {
            upscale,
            ..SiftConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn a_frame_that_fits_one_band_holds_its_first_octave_and_the_next_base() {
        // 1920x1080 upscaled: 3840x2160 < 2^24 pixels, one band of the whole octave; each
        // layer reaches past the frame, so it is the frame's rows exactly.
        let (w, h) = (3840, 2160);
        let octave_minus_1 = (6 + 5) * w * h * 4 + (w / 2) * (h / 2) * 4;
        assert_eq!(sift(true).scale_space_bytes(1920, 1080), octave_minus_1);
    }

    #[test]
    fn the_largest_frame_needs_a_band_not_the_frame() {
        // 8192x8192 upscaled: octave -1 is 16384 x 16384, 1 GiB a plane; its bands are
        // 1024 rows and their margins.
        let at_8k = sift(true).scale_space_bytes(8192, 8192);
        assert!(at_8k < 2_000_000_000, "{at_8k}");
        assert!(at_8k > 11 * 1024 * 16384 * 4, "{at_8k}");
        assert!(sift(false).scale_space_bytes(8192, 8192) < at_8k);
    }
}
