//! Sub-pixel and sub-scale localisation by a 3-D quadratic fit, with OpenCV's rejection
//! rules: at most 5 steps, leave the octave's interior or its layers 1..=n and the point is
//! dropped; then the contrast and edge (principal-curvature ratio) tests.

use std::ops::Range;

use super::extrema::{Candidate, IMAGE_BORDER};
use super::pyramid::Plane;

/// Quadratic-fit steps before giving up (OpenCV's `SIFT_MAX_INTERP_STEPS`).
const MAX_STEPS: usize = 5;

/// A refined extremum in the coordinates of its octave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extremum {
    pub octave: usize,
    /// Integer DoG layer the fit converged at.
    pub layer: usize,
    pub row: usize,
    pub col: usize,
    /// Sub-pixel position in octave pixels.
    pub x: f32,
    pub y: f32,
    /// Blur sigma in octave pixels: `sigma * 2^((layer + offset) / n_layers)`.
    pub scale: f32,
    /// |interpolated DoG| on the 0..1 grey scale.
    pub response: f32,
}

/// Thresholds of the refinement, in OpenCV's units.
#[derive(Clone, Copy, Debug)]
pub struct RefineParams {
    pub n_layers: usize,
    pub contrast_threshold: f32,
    pub edge_threshold: f32,
    pub sigma: f32,
}

/// Derivatives of the DoG at one sample, on the 0..1 grey scale (central differences).
struct Derivatives {
    gradient: [f32; 3],
    hessian: [[f32; 3]; 3],
}

fn derivatives(prev: &Plane, img: &Plane, next: &Plane, r: usize, c: usize) -> Derivatives {
    let scale = 1.0 / 255.0;
    let (first, second, cross) = (scale * 0.5, scale, scale * 0.25);
    let v2 = img.at(c, r) * 2.0;
    let dx = (img.at(c + 1, r) - img.at(c - 1, r)) * first;
    let dy = (img.at(c, r + 1) - img.at(c, r - 1)) * first;
    let ds = (next.at(c, r) - prev.at(c, r)) * first;
    let dxx = (img.at(c + 1, r) + img.at(c - 1, r) - v2) * second;
    let dyy = (img.at(c, r + 1) + img.at(c, r - 1) - v2) * second;
    let dss = (next.at(c, r) + prev.at(c, r) - v2) * second;
    let dxy = (img.at(c + 1, r + 1) - img.at(c - 1, r + 1) - img.at(c + 1, r - 1)
        + img.at(c - 1, r - 1))
        * cross;
    let dxs =
        (next.at(c + 1, r) - next.at(c - 1, r) - prev.at(c + 1, r) + prev.at(c - 1, r)) * cross;
    let dys =
        (next.at(c, r + 1) - next.at(c, r - 1) - prev.at(c, r + 1) + prev.at(c, r - 1)) * cross;
    Derivatives {
        gradient: [dx, dy, ds],
        hessian: [[dxx, dxy, dxs], [dxy, dyy, dys], [dxs, dys, dss]],
    }
}

/// Solves `a x = b` by LU with partial pivoting; a pivot below `10 * f32::EPSILON`
/// counts as singular and gives zero, as OpenCV's `Matx33f::solve(DECOMP_LU)` does.
pub fn solve3(mut a: [[f32; 3]; 3], mut b: [f32; 3]) -> [f32; 3] {
    for k in 0..3 {
        let pivot = (k..3)
            .max_by(|&i, &j| a[i][k].abs().total_cmp(&a[j][k].abs()))
            .unwrap_or(k);
        if a[pivot][k].abs() < 10.0 * f32::EPSILON {
            return [0.0; 3];
        }
        a.swap(k, pivot);
        b.swap(k, pivot);
        let pivot_row = a[k];
        for i in k + 1..3 {
            let f = a[i][k] / pivot_row[k];
            for (v, p) in a[i][k..].iter_mut().zip(&pivot_row[k..]) {
                *v -= f * p;
            }
            b[i] -= f * b[k];
        }
    }
    let mut x = [0f32; 3];
    for i in (0..3).rev() {
        let tail: f32 = (i + 1..3).map(|j| a[i][j] * x[j]).sum();
        x[i] = (b[i] - tail) / a[i][i];
    }
    x
}

/// Where a refinement stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refinement {
    /// Rejected, as OpenCV would.
    Rejected,
    /// Kept, at its final position.
    Kept(Extremum),
    /// The next step needs rows the DoG planes do not hold: resume it with
    /// [`refine_from`] on planes that hold [`rows_needed`] of `at`.
    Outside { at: Candidate, steps: usize },
}

/// DoG rows that one step at `at` reads.
pub fn rows_needed(at: &Candidate) -> Range<usize> {
    at.row - 1..at.row + 2
}

/// Refines `candidate` from its first step.
pub fn refine(dog: &[Plane], candidate: Candidate, params: &RefineParams) -> Refinement {
    refine_from(dog, candidate, 0, params)
}

/// Refines from position `at` after `steps` steps (of the same candidate).
pub fn refine_from(
    dog: &[Plane],
    at: Candidate,
    steps: usize,
    params: &RefineParams,
) -> Refinement {
    let n = params.n_layers;
    let (w, h) = (dog[0].width, dog[0].height);
    let (mut layer, mut r, mut c) = (at.layer, at.row, at.col);
    let mut offset = [0f32; 3];
    let mut converged = false;
    for done in steps..MAX_STEPS {
        let here = Candidate {
            layer,
            row: r,
            col: c,
            ..at
        };
        if !dog[0].holds(&rows_needed(&here)) {
            return Refinement::Outside {
                at: here,
                steps: done,
            };
        }
        let d = derivatives(&dog[layer - 1], &dog[layer], &dog[layer + 1], r, c);
        let x = solve3(d.hessian, d.gradient);
        offset = [-x[0], -x[1], -x[2]];
        if offset.iter().all(|v| v.abs() < 0.5) {
            converged = true;
            break;
        }
        // Far-off solutions (flat DoG) would overflow the integer step.
        if offset
            .iter()
            .any(|v| !v.is_finite() || v.abs() > (i32::MAX / 3) as f32)
        {
            return Refinement::Rejected;
        }
        let step = |p: usize, v: f32| p as i64 + v.round() as i64;
        let (nc, nr, nl) = (
            step(c, offset[0]),
            step(r, offset[1]),
            step(layer, offset[2]),
        );
        let border = IMAGE_BORDER as i64;
        if nl < 1
            || nl > n as i64
            || nc < border
            || nc >= w as i64 - border
            || nr < border
            || nr >= h as i64 - border
        {
            return Refinement::Rejected;
        }
        (c, r, layer) = (nc as usize, nr as usize, nl as usize);
    }
    if !converged {
        return Refinement::Rejected;
    }

    let d = derivatives(&dog[layer - 1], &dog[layer], &dog[layer + 1], r, c);
    let t: f32 = d.gradient.iter().zip(&offset).map(|(g, o)| g * o).sum();
    let contrast = dog[layer].at(c, r) / 255.0 + t * 0.5;
    if contrast.abs() * (n as f32) < params.contrast_threshold {
        return Refinement::Rejected;
    }
    // Edge test: ratio of principal curvatures of the 2-D Hessian below edge_threshold.
    let [[dxx, dxy, _], [_, dyy, _], _] = d.hessian;
    let trace = dxx + dyy;
    let det = dxx * dyy - dxy * dxy;
    let e = params.edge_threshold;
    if det <= 0.0 || trace * trace * e >= (e + 1.0) * (e + 1.0) * det {
        return Refinement::Rejected;
    }
    Refinement::Kept(Extremum {
        octave: at.octave,
        layer,
        row: r,
        col: c,
        x: c as f32 + offset[0],
        y: r as f32 + offset[1],
        scale: params.sigma * 2f32.powf((layer as f32 + offset[2]) / n as f32),
        response: contrast.abs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solve3_solves_and_reports_singular_as_zero() {
        let a = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
        let x_true = [0.3f32, -0.7, 1.1];
        let b: Vec<f32> = a
            .iter()
            .map(|row| row.iter().zip(&x_true).map(|(p, q)| p * q).sum())
            .collect();
        let x = solve3(a, [b[0], b[1], b[2]]);
        for (u, v) in x.iter().zip(&x_true) {
            assert!((u - v).abs() < 1e-5, "{x:?}");
        }
        assert_eq!(solve3([[1.0, 2.0, 3.0]; 3], [1.0, 2.0, 3.0]), [0.0; 3]);
    }

    /// DoG planes sampling `f(x, y, s)` on a 21x21 grid over 3 layers.
    fn sampled(f: impl Fn(f32, f32, f32) -> f32) -> Vec<Plane> {
        (0..3)
            .map(|s| Plane {
                width: 21,
                height: 21,
                first_row: 0,
                data: (0..21 * 21)
                    .map(|i| f((i % 21) as f32, (i / 21) as f32, s as f32))
                    .collect(),
            })
            .collect()
    }

    const PARAMS: RefineParams = RefineParams {
        n_layers: 1,
        contrast_threshold: 0.04,
        edge_threshold: 10.0,
        sigma: 1.6,
    };

    /// The middle sample of `sampled`'s grid, on DoG layer 1.
    const CENTRE: Candidate = Candidate {
        octave: 0,
        layer: 1,
        row: 10,
        col: 10,
    };

    #[test]
    fn a_quadratic_peak_is_located_exactly() {
        // Peak at (10.3, 9.8, layer 1.2) of height 200 grey levels.
        let dog = sampled(|x, y, s| {
            200.0 - 3.0 * (x - 10.3).powi(2) - 2.0 * (y - 9.8).powi(2) - 40.0 * (s - 1.2).powi(2)
        });
        let Refinement::Kept(e) = refine(&dog, CENTRE, &PARAMS) else {
            panic!("a clean peak is kept");
        };
        assert!(
            (e.x - 10.3).abs() < 1e-3 && (e.y - 9.8).abs() < 1e-3,
            "{e:?}"
        );
        assert!((e.scale - 1.6 * 2f32.powf(1.2)).abs() < 1e-3, "{e:?}");
        assert!((e.response - 200.0 / 255.0).abs() < 1e-3, "{e:?}");
    }

    #[test]
    fn an_edge_like_ridge_is_rejected_and_a_weak_peak_too() {
        // Curvature ratio 30 along x vs y exceeds the edge threshold of 10.
        let ridge = sampled(|x, y, s| {
            200.0 - 30.0 * (x - 10.0).powi(2) - 1.0 * (y - 10.0).powi(2) - 40.0 * (s - 1.0).powi(2)
        });
        assert_eq!(refine(&ridge, CENTRE, &PARAMS), Refinement::Rejected);
        let weak =
            sampled(|x, y, s| 5.0 - (x - 10.0).powi(2) - (y - 10.0).powi(2) - (s - 1.0).powi(2));
        assert_eq!(refine(&weak, CENTRE, &PARAMS), Refinement::Rejected);
    }

    #[test]
    fn a_step_off_the_held_rows_pauses_and_resumes_to_the_same_result() {
        let dog = sampled(|x, y, s| {
            200.0 - 3.0 * (x - 10.3).powi(2) - 2.0 * (y - 13.2).powi(2) - 40.0 * (s - 1.2).powi(2)
        });
        let band: Vec<Plane> = dog
            .iter()
            .map(|p| Plane {
                first_row: 5,
                data: p.data[5 * 21..12 * 21].to_vec(),
                ..p.clone()
            })
            .collect();
        let Refinement::Outside { at, steps } = refine(&band, CENTRE, &PARAMS) else {
            panic!("row 13 is not held");
        };
        assert_eq!((at.row, at.col, at.layer, steps), (13, 10, 1, 1));
        let whole = refine(&dog, CENTRE, &PARAMS);
        assert!(matches!(whole, Refinement::Kept(_)), "{whole:?}");
        assert_eq!(refine_from(&dog, at, steps, &PARAMS), whole);
    }
}
