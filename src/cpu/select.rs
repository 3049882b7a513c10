//! Which candidates of a level become keypoints (docs/orb-reference.md §5):
//! per-level quotas and the total orders of `top_response` and `grid`.

use std::cmp::Ordering;

use super::candidates::Candidate;

/// Keypoints wanted per level, as OpenCV and ORB-SLAM compute them: a geometric
/// series in `1 / scale_factor` (proportional to the level's side), rounded half to
/// even, never letting the running sum pass `n_features`; the last level takes
/// the rest, so the quotas always sum to `n_features`.
pub fn level_quotas(n_features: u32, n_levels: u32, scale_factor: f64) -> Vec<usize> {
    let total = n_features as usize;
    let factor = 1.0 / scale_factor;
    let mut wanted = f64::from(n_features) * (1.0 - factor) / (1.0 - factor.powi(n_levels as i32));
    let mut quotas = Vec::with_capacity(n_levels as usize);
    let mut sum = 0;
    for _ in 1..n_levels {
        let quota = (wanted.round_ties_even() as usize).min(total - sum);
        quotas.push(quota);
        sum += quota;
        wanted *= factor;
    }
    quotas.push(total - sum);
    quotas
}

/// `(FAST score desc, y asc, x asc)`.
pub fn by_score(a: &Candidate, b: &Candidate) -> Ordering {
    b.score
        .cmp(&a.score)
        .then(a.y.cmp(&b.y))
        .then(a.x.cmp(&b.x))
}

/// `(ranking key desc, y asc, x asc)`.
pub fn by_key(a: &Candidate, b: &Candidate) -> Ordering {
    b.key.cmp(&a.key).then(a.y.cmp(&b.y)).then(a.x.cmp(&b.x))
}

/// `(rank in cell asc, ranking key desc, y asc, x asc)`.
pub fn by_rank(a: &Candidate, b: &Candidate) -> Ordering {
    a.rank.cmp(&b.rank).then_with(|| by_key(a, b))
}

/// Keeps the first `n` candidates in `order`, sorted. `order` is total, so the
/// result does not depend on the input order.
pub fn keep_first(
    candidates: &mut Vec<Candidate>,
    n: usize,
    order: fn(&Candidate, &Candidate) -> Ordering,
) {
    if n == 0 {
        candidates.clear();
        return;
    }
    if candidates.len() > n {
        candidates.select_nth_unstable_by(n - 1, order);
        candidates.truncate(n);
    }
    candidates.sort_unstable_by(order);
}

/// Grid selection: ranks each candidate within its cell by the key, then keeps the
/// first `n` by rank — every cell's best before any cell's second best.
pub fn keep_grid(candidates: &mut Vec<Candidate>, n: usize) {
    candidates.sort_unstable_by(|a, b| a.cell.cmp(&b.cell).then_with(|| by_key(a, b)));
    let mut previous_cell = None;
    let mut rank = 0;
    for c in candidates.iter_mut() {
        rank = if previous_cell == Some(c.cell) {
            rank + 1
        } else {
            0
        };
        previous_cell = Some(c.cell);
        c.rank = rank;
    }
    keep_first(candidates, n, by_rank);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn quotas_follow_opencv_for_the_defaults() {
        // n_0 = 2000 (1 - 1/1.2) / (1 - 1.2^-8) = 434.35, then x 1/1.2 each level
        // (evaluated independently in Python); the last level takes the rest.
        let quotas = level_quotas(2000, 8, 1.2);
        assert_eq!(quotas, vec![434, 362, 302, 251, 209, 175, 145, 122]);
        assert_eq!(quotas.iter().sum::<usize>(), 2000);
        assert_eq!(level_quotas(500, 1, 1.2), vec![500]);
    }

    proptest! {
        #[test]
        fn quotas_sum_to_n_features(n in 1u32..100_000, levels in 1u32..=32, scale in 1.01f64..4.0) {
            let quotas = level_quotas(n, levels, scale);
            prop_assert_eq!(quotas.len(), levels as usize);
            prop_assert_eq!(quotas.iter().sum::<usize>(), n as usize);
        }

        #[test]
        fn keep_first_is_a_sorted_prefix_of_the_total_order(
            raw in prop::collection::vec((0u32..20, 0u32..20, 0u8..5, -3i64..3), 0..60),
            n in 0usize..70,
        ) {
            let all: Vec<Candidate> = raw.iter().map(|&(x, y, s, k)| Candidate { key: k, ..Candidate::new(x as usize, y as usize, s) }).collect();
            let mut sorted = all.clone();
            sorted.sort_by(by_key);
            sorted.dedup_by(|a, b| a.x == b.x && a.y == b.y && a.key == b.key);
            let mut kept = sorted.clone();
            kept.reverse();
            keep_first(&mut kept, n, by_key);
            prop_assert_eq!(&kept[..], &sorted[..n.min(sorted.len())]);
        }
    }

    #[test]
    fn top_response_orders_by_score_then_y_then_x() {
        let mut c = vec![
            Candidate::new(5, 9, 30),
            Candidate::new(7, 2, 30),
            Candidate::new(3, 2, 30),
            Candidate::new(1, 1, 50),
            Candidate::new(0, 0, 10),
        ];
        keep_first(&mut c, 4, by_score);
        let got: Vec<_> = c.iter().map(|c| (c.x, c.y)).collect();
        assert_eq!(got, vec![(1, 1), (3, 2), (7, 2), (5, 9)]);
    }

    #[test]
    fn grid_takes_every_cells_best_before_any_second_best() {
        let cand = |x: usize, cell: u32, key: i64| Candidate {
            cell,
            key,
            ..Candidate::new(x, 0, 20)
        };
        let mut c = vec![
            cand(0, 0, 100),
            cand(1, 0, 90),
            cand(2, 0, 80),
            cand(3, 1, 5),
            cand(4, 2, 1),
            cand(5, 2, 70),
        ];
        keep_grid(&mut c, 4);
        let got: Vec<_> = c.iter().map(|c| (c.x, c.rank)).collect();
        // Bests: 100 (cell 0), 70 (cell 2), 5 (cell 1); then the best second: 90.
        assert_eq!(got, vec![(0, 0), (5, 0), (3, 0), (1, 1)]);
    }
}
