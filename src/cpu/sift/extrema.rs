//! Scale-space extrema: DoG samples that beat all 26 neighbours, as OpenCV finds them.

use std::ops::Range;

use rayon::prelude::*;

use super::pyramid::Plane;

/// Pixels this close to an octave's border are never keypoint candidates (OpenCV's
/// `SIFT_IMG_BORDER`), so every later stencil stays inside the image.
pub const IMAGE_BORDER: usize = 5;

/// A DoG sample that is a local extremum, before refinement.
/// Ordered as OpenCV visits them: by octave, layer, row, column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    pub octave: usize,
    /// DoG layer, `1..=n_layers`.
    pub layer: usize,
    pub row: usize,
    pub col: usize,
}

/// The candidates of octave `octave` on rows `rows` (clipped to the octave's interior),
/// in (layer, row, col) order; `dog` holds the rows around them.
pub fn find_candidates(
    dog: &[Plane],
    octave: usize,
    n_layers: usize,
    rows: Range<usize>,
    threshold: f32,
) -> Vec<Candidate> {
    let height = dog[0].height;
    let rows = rows.start.max(IMAGE_BORDER)..rows.end.min(height.saturating_sub(IMAGE_BORDER));
    let jobs: Vec<(usize, usize)> = (1..=n_layers)
        .flat_map(|layer| rows.clone().map(move |r| (layer, r)))
        .collect();
    jobs.par_iter()
        .flat_map_iter(|&(layer, row)| {
            row_candidates(
                &dog[layer - 1],
                &dog[layer],
                &dog[layer + 1],
                row,
                threshold,
            )
            .map(move |col| Candidate {
                octave,
                layer,
                row,
                col,
            })
        })
        .collect()
}

/// Columns of `row` in `current` that are extrema over the 3x3x3 block: positive
/// samples `>=` all 26 neighbours or negative samples `<=` all of them, with
/// |value| above `threshold` (OpenCV's non-strict comparison).
fn row_candidates<'a>(
    below: &'a Plane,
    current: &'a Plane,
    above: &'a Plane,
    row: usize,
    threshold: f32,
) -> impl Iterator<Item = usize> + 'a {
    let w = current.width;
    let centre = current.row(row);
    let (start, end) = (IMAGE_BORDER, w.saturating_sub(IMAGE_BORDER));
    // Cheap, vectorisable first cut on the row alone: above threshold and an extremum
    // of its left and right neighbours. Most pixels fail it.
    let survivors: Vec<bool> = if end > start {
        centre[start - 1..end + 1]
            .windows(3)
            .map(|t| {
                let v = t[1];
                (v > threshold && v >= t[0] && v >= t[2])
                    | (v < -threshold && v <= t[0] && v <= t[2])
            })
            .collect()
    } else {
        Vec::new()
    };
    // The 3x3x3 block as nine row slices (the centre compares with itself, harmlessly).
    let rows: [&[f32]; 9] = [below, current, above]
        .map(|plane| [plane.row(row - 1), plane.row(row), plane.row(row + 1)])
        .concat()
        .try_into()
        .expect("nine rows");
    (start..end)
        .zip(survivors)
        .filter(|&(_, survives)| survives)
        .map(|(c, _)| c)
        .filter(move |&c| {
            let v = centre[c];
            if v > 0.0 {
                rows.iter()
                    .all(|r| v >= r[c - 1] && v >= r[c] && v >= r[c + 1])
            } else {
                rows.iter()
                    .all(|r| v <= r[c - 1] && v <= r[c] && v <= r[c + 1])
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planes(values: [f32; 3]) -> Vec<Plane> {
        values
            .iter()
            .map(|&v| Plane {
                width: 16,
                height: 16,
                first_row: 0,
                data: vec![v; 256],
            })
            .collect()
    }

    #[test]
    fn a_single_peak_is_found_and_a_lower_neighbour_in_scale_removes_it() {
        let mut dog = planes([0.0, 0.0, 0.0]);
        dog[1].data[8 * 16 + 7] = 10.0;
        let found = find_candidates(&dog, 0, 1, 0..16, 2.0);
        assert_eq!(
            found,
            vec![Candidate {
                octave: 0,
                layer: 1,
                row: 8,
                col: 7
            }]
        );
        // A larger value in the layer above (diagonal neighbour) makes it no extremum.
        dog[2].data[9 * 16 + 8] = 11.0;
        assert!(find_candidates(&dog, 0, 1, 0..16, 2.0).is_empty());
    }

    #[test]
    fn values_at_the_threshold_are_rejected_and_minima_are_found() {
        let mut dog = planes([0.0, 0.0, 0.0]);
        dog[1].data[6 * 16 + 6] = 2.0;
        dog[1].data[9 * 16 + 9] = -3.0;
        let found = find_candidates(&dog, 0, 1, 0..16, 2.0);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].row, found[0].col), (9, 9));
    }
}
