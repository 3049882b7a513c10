//! The steps of a big octave: which levels one launch makes from one load of which
//! source, and the kernel that takes the source to each (kernels/sift/pyramid.cu).
//!
//! The CPU reference, as OpenCV, blurs level `l` from level `l - 1`. A separable blur
//! after a separable blur is one separable blur whose taps are the two kernels
//! convolved, and reflecting the borders (`REFLECT_101`, as often as needed) at every
//! level or once gives the same sums: blurring a signal mirrored about its ends keeps
//! it mirrored. So a step's level `l` is its source blurred once with the chain's
//! kernels from the source to `l` convolved, the chained level to within float
//! rounding, and the levels of a step no longer wait on each other.

use crate::cuda::abi::{BLUR_MAX_RADIUS, MAX_STEP_LEVELS, STEP_RADIUS};

/// Outer taps of a convolved kernel below this fraction of its peak are dropped: their
/// sum moves no level by more than the f32 rounding of a grey level of 255 (~1.5e-5).
/// The chain's own taps reach further (a radius-19 kernel from an octave's base to level
/// 3 of the default pipeline), where a launch would need the predicated radius-32 kernel.
const NEGLIGIBLE_TAP: f64 = 1e-8;

/// Levels of a big octave made from one load of one source.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The level it blurs, or `None`: the octave's base (the frame for octave 0, else
    /// level n of the octave before, halved).
    pub source: Option<usize>,
    /// The levels it makes, in order, each with its kernel (first tap, radius) in the
    /// tap table, or `None` for the source itself.
    pub levels: Vec<(usize, Option<(usize, usize)>)>,
}

impl Step {
    /// A step of one blurred level (from the level below, or octave 0's level 0 from the
    /// frame): the level-by-level kernel's job.
    pub fn is_chained(&self) -> bool {
        self.levels
            .iter()
            .filter(|(_, kernel)| kernel.is_some())
            .count()
            == 1
    }

    /// Whether it makes only levels above `n`, which no later octave starts from: its
    /// source is level `n` or above.
    pub fn is_tail(&self, n: usize) -> bool {
        self.source.is_some_and(|level| level >= n)
    }

    pub fn last_level(&self) -> usize {
        self.levels.last().map_or(0, |&(level, _)| level)
    }

    /// The widest radius of its levels' kernels: the halo of its tiles.
    pub fn halo(&self) -> usize {
        self.levels
            .iter()
            .filter_map(|(_, kernel)| kernel.map(|(_, radius)| radius))
            .max()
            .unwrap_or(0)
    }
}

/// The steps of an octave of `n` layers (levels `0..n + 3`). `base_blur`: octave 0's
/// kernel from the frame to level 0, `None` for a later octave, whose level 0 is its
/// base itself. `layers[l]` takes level `l` to `l + 1`. Each step makes at most
/// [`MAX_STEP_LEVELS`] levels, its source included, with radii up to [`STEP_RADIUS`]
/// (up to [`BLUR_MAX_RADIUS`] for a step's first blurred level), and the first ends at
/// level `n`, the next octave's base, so that octave can start while this one finishes. `add` puts a kernel in the tap table and returns its
/// (first tap, radius). Errs with the radius of a level no kernel holds.
pub fn octave_steps(
    n: usize,
    base_blur: Option<&[f32]>,
    layers: &[Vec<f32>],
    add: &mut impl FnMut(&[f32]) -> (usize, usize),
) -> Result<Vec<Step>, usize> {
    let levels = n + 3;
    let mut steps = Vec::new();
    let mut source: Option<usize> = None;
    loop {
        // The step's first level and the kernel from its source to it.
        let (first, mut kernel, mut step_levels) = match (source, base_blur) {
            (Some(level), _) => (level, vec![1.0], vec![(level, None)]),
            (None, Some(base)) => {
                let kernel = widened(base);
                let taps = trimmed(&kernel);
                if radius(&taps) > BLUR_MAX_RADIUS {
                    return Err(radius(&taps));
                }
                (0, kernel, vec![(0, Some(add(&taps)))])
            }
            (None, None) => (0, vec![1.0], vec![(0, None)]),
        };
        let end = if first < n { n } else { levels - 1 };
        let mut last = first;
        while last < end && step_levels.len() < MAX_STEP_LEVELS {
            let next = convolve(&kernel, &widened(&layers[last]));
            let taps = trimmed(&next);
            let blurred = step_levels.iter().filter(|(_, k)| k.is_some()).count();
            let limit = if blurred == 0 {
                BLUR_MAX_RADIUS
            } else {
                STEP_RADIUS
            };
            if radius(&taps) > limit {
                if blurred == 0 {
                    return Err(radius(&taps));
                }
                break;
            }
            kernel = next;
            last += 1;
            step_levels.push((last, Some(add(&taps))));
        }
        steps.push(Step {
            source,
            levels: step_levels,
        });
        if last == levels - 1 {
            return Ok(steps);
        }
        source = Some(last);
    }
}

/// The level-by-level chain of an octave of `n` layers as steps of one blurred level:
/// octave 0's level 0 from the frame (`base`, its kernel in the tap table), then each
/// level from the one below with its layer's kernel (`layers[l]` takes level `l` to
/// `l + 1`); a later octave's level 1 blurs its base.
pub fn chained_steps(
    n: usize,
    base: Option<(usize, usize)>,
    layers: &[(usize, usize)],
) -> Vec<Step> {
    let first = base.map(|kernel| Step {
        source: None,
        levels: vec![(0, Some(kernel))],
    });
    let later = (1..n + 3).map(|level| Step {
        source: (level > 1 || base.is_some()).then_some(level - 1),
        levels: vec![(level - 1, None), (level, Some(layers[level - 1]))],
    });
    first.into_iter().chain(later).collect()
}

fn radius(kernel: &[f32]) -> usize {
    kernel.len() / 2
}

fn widened(kernel: &[f32]) -> Vec<f64> {
    kernel.iter().map(|&w| f64::from(w)).collect()
}

/// `a` convolved with `b`: both odd-sized and centred, as the result is.
fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// `kernel` without the outer taps below [`NEGLIGIBLE_TAP`] of its peak (as many each
/// side: it is symmetric), scaled back to its sum, in f32.
fn trimmed(kernel: &[f64]) -> Vec<f32> {
    let peak = kernel.iter().copied().fold(0.0, f64::max);
    let cut = kernel
        .iter()
        .take(kernel.len() / 2)
        .take_while(|&&w| w < peak * NEGLIGIBLE_TAP)
        .count();
    let kept = &kernel[cut..kernel.len() - cut];
    let scale = kernel.iter().sum::<f64>() / kept.iter().sum::<f64>();
    kept.iter().map(|&w| (w * scale) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::sift::pyramid::{upsample_2x_rows, Plane, ScaleSpace, Upscale};
    use crate::image::GrayImage;
    use crate::spec::scale_space::{base_blur_sigma, gaussian_kernel, layer_sigmas};

    struct Table {
        values: Vec<f32>,
    }

    impl Table {
        fn add(&mut self, kernel: &[f32]) -> (usize, usize) {
            let entry = (self.values.len(), radius(kernel));
            self.values.extend_from_slice(kernel);
            entry
        }

        fn kernel(&self, (first, radius): (usize, usize)) -> &[f32] {
            &self.values[first..=first + 2 * radius]
        }
    }

    fn layer_kernels(sigma: f64, n: usize) -> Vec<Vec<f32>> {
        layer_sigmas(sigma, n)[1..]
            .iter()
            .map(|&s| gaussian_kernel(s))
            .collect()
    }

    fn steps_of(n: usize, upscale: Option<bool>, table: &mut Table) -> Vec<Step> {
        let base = upscale.map(|up| gaussian_kernel(base_blur_sigma(1.6, up)));
        octave_steps(n, base.as_deref(), &layer_kernels(1.6, n), &mut |k| {
            table.add(k)
        })
        .unwrap()
    }

    /// `REFLECT_101` as often as needed (the kernels' border).
    fn reflect(i: isize, n: usize) -> usize {
        let n = n as isize;
        if n == 1 {
            return 0;
        }
        let period = 2 * (n - 1);
        let i = i.rem_euclid(period);
        (if i < n { i } else { period - i }) as usize
    }

    /// `source` blurred with `kernel` rows then columns, in f64.
    fn blur(source: &[f64], width: usize, height: usize, kernel: &[f32]) -> Vec<f64> {
        let r = radius(kernel) as isize;
        let pass = |at: &dyn Fn(usize, usize) -> f64, along_x: bool| -> Vec<f64> {
            let mut out = vec![0.0; width * height];
            for y in 0..height {
                for x in 0..width {
                    out[y * width + x] = (-r..=r)
                        .map(|k| {
                            let w = f64::from(kernel[(k + r) as usize]);
                            if along_x {
                                w * at(reflect(x as isize + k, width), y)
                            } else {
                                w * at(x, reflect(y as isize + k, height))
                            }
                        })
                        .sum();
                }
            }
            out
        };
        let rows = pass(&|x, y| source[y * width + x], true);
        pass(&|x, y| rows[y * width + x], false)
    }

    fn plane_values(plane: &Plane) -> Vec<f64> {
        plane.data.iter().map(|&v| f64::from(v)).collect()
    }

    /// The largest difference of `made` from the chained `plane`, in grey levels.
    fn largest_difference(made: &[f64], plane: &Plane) -> f64 {
        made.iter()
            .zip(&plane.data)
            .map(|(a, &b)| (a - f64::from(b)).abs())
            .fold(0.0, f64::max)
    }

    /// Every level a step makes from its source is the CPU reference's chained level to
    /// within float rounding, borders included: octave 0 from the frame (with and
    /// without upscaling) and octave 1 from its base, on a real photo.
    #[test]
    fn a_steps_levels_are_the_chained_levels() {
        let n = 3;
        let photo = GrayImage::open(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/graf1.png"
        )))
        .unwrap();
        let image = photo.resized(160, 120).unwrap();
        for upscale in [false, true] {
            let space = ScaleSpace::build(&image, 1.6, n, Upscale::from_flags(upscale, false));
            let mut table = Table { values: Vec::new() };
            let first = steps_of(n, Some(upscale), &mut table);
            let later = steps_of(n, None, &mut table);
            // Octave 0's source: the frame, upsampled as the CPU does when asked.
            let pixels = Plane::from_gray_rows(&image, 0..image.height());
            let frame = if upscale {
                plane_values(&upsample_2x_rows(&pixels, 0..2 * image.height()))
            } else {
                plane_values(&pixels)
            };
            for (octave, steps) in [(0, &first), (1, &later)] {
                let planes = &space.gaussian[octave];
                let (w, h) = (planes[0].width, planes[0].height);
                for step in steps {
                    let source = match step.source {
                        Some(level) => plane_values(&planes[level]),
                        None if octave == 0 => frame.clone(),
                        None => plane_values(&planes[0]),
                    };
                    for &(level, kernel) in &step.levels {
                        let Some(kernel) = kernel else { continue };
                        let made = blur(&source, w, h, table.kernel(kernel));
                        let difference = largest_difference(&made, &planes[level]);
                        assert!(
                            difference < 2e-4,
                            "upscale {upscale}, octave {octave}, level {level}: {difference} \
                             grey levels from the chain"
                        );
                    }
                }
            }
        }
    }

    /// The default pipeline: two steps an octave (levels 0..n from the base, n+1 and
    /// n+2 from level n) within the radius-24 kernel; other layer counts make every
    /// level once, with a step ending at n.
    #[test]
    fn octaves_are_two_steps_within_the_step_kernel() {
        let mut table = Table { values: Vec::new() };
        for upscale in [Some(false), Some(true), None] {
            let steps = steps_of(3, upscale, &mut table);
            let shape: Vec<(Option<usize>, Vec<usize>)> = steps
                .iter()
                .map(|s| (s.source, s.levels.iter().map(|l| l.0).collect()))
                .collect();
            assert_eq!(
                shape,
                vec![(None, vec![0, 1, 2, 3]), (Some(3), vec![3, 4, 5])],
                "{upscale:?}"
            );
            assert!(steps.iter().all(|s| s.halo() <= STEP_RADIUS));
        }
        for n in [2, 4, 5, 6] {
            for upscale in [Some(false), None] {
                let steps = steps_of(n, upscale, &mut table);
                let mut made: Vec<usize> = steps
                    .iter()
                    .flat_map(|s| s.levels.iter().filter(|l| l.1.is_some()).map(|l| l.0))
                    .collect();
                if upscale.is_none() {
                    made.insert(0, 0);
                }
                assert_eq!(made, (0..n + 3).collect::<Vec<_>>(), "n {n}");
                assert!(steps.iter().any(|s| s.last_level() == n), "n {n}");
                assert!(steps.iter().all(|s| s.halo() <= STEP_RADIUS), "n {n}");
            }
        }
    }
}
