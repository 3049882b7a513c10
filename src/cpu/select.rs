//! Which candidates of a level become keypoints (docs/orb-reference.md §5): OpenCV's
//! FAST-score pre-filter and the total orders of `top_response` and `grid`; the
//! per-level quotas are [`crate::spec::quotas`].

use std::cmp::Ordering;

use super::candidates::Candidate;

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

/// OpenCV's pre-filter, run before ranking by the key in both distributions:
/// keeps the `2 quota` best FAST scores. In a grid it also keeps retry cells
/// (candidates below `fast_threshold`) out while the level has enough strong ones,
/// so every cell's best is a corner that stands out level-wide: ranking all cells
/// alike spent a third of the quota on flat regions and lost matches.
pub fn keep_best_fast_scores(candidates: &mut Vec<Candidate>, quota: usize) {
    keep_first(candidates, 2 * quota, by_score);
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

    proptest! {
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

    /// Candidates at distinct positions, `cell` in `0..cells`, key and FAST score random.
    fn grid_candidates(raw: &[(u16, u16, u8, i64)], cells: u32) -> Vec<Candidate> {
        let mut c: Vec<Candidate> = raw
            .iter()
            .map(|&(x, y, s, k)| Candidate {
                cell: (u32::from(x) + u32::from(y)) % cells,
                key: k,
                ..Candidate::new(usize::from(x), usize::from(y), s)
            })
            .collect();
        c.sort_by_key(|c| (c.y, c.x));
        c.dedup_by_key(|c| (c.y, c.x));
        c
    }

    fn positions(c: &[Candidate]) -> Vec<(u32, u32)> {
        c.iter().map(|c| (c.x, c.y)).collect()
    }

    proptest! {
        #[test]
        fn grid_keeps_the_quota_and_covers_every_cell_before_any_cell_twice(
            raw in prop::collection::vec((0u16..40, 0u16..40, 0u8..255, -50i64..50), 0..200),
            cells in 1u32..30,
            n in 0usize..120,
        ) {
            let all = grid_candidates(&raw, cells);
            let mut kept = all.clone();
            keep_grid(&mut kept, n);
            prop_assert_eq!(kept.len(), n.min(all.len()));
            // Coverage: a candidate of rank r is kept only if every candidate of a
            // smaller rank is; so with n at least the number of occupied cells, every
            // occupied cell holds a keypoint.
            let kept_at = |x: u32, y: u32| kept.iter().find(|c| (c.x, c.y) == (x, y));
            let max_rank = kept.iter().map(|c| c.rank).max();
            let mut ranked = all.clone();
            keep_grid(&mut ranked, usize::MAX);
            for c in &ranked {
                if max_rank.is_some_and(|r| c.rank < r) {
                    prop_assert!(kept_at(c.x, c.y).is_some(), "rank {} dropped", c.rank);
                }
            }
            let mut occupied: Vec<u32> = all.iter().map(|c| c.cell).collect();
            occupied.sort_unstable();
            occupied.dedup();
            if n >= occupied.len() {
                for cell in occupied {
                    prop_assert!(kept.iter().any(|c| c.cell == cell), "cell {} empty", cell);
                }
            }
            // Within a cell, the kept candidates are its best by the key.
            for c in &kept {
                let better = all.iter().filter(|o| o.cell == c.cell && by_key(o, c).is_lt()).count();
                prop_assert_eq!(better as u32, c.rank);
            }
        }

        #[test]
        fn grid_selection_does_not_depend_on_the_input_order(
            raw in prop::collection::vec((0u16..40, 0u16..40, 0u8..255, -50i64..50), 0..200),
            cells in 1u32..30,
            quota in 0usize..60,
            seed in any::<u64>(),
        ) {
            let select = |mut c: Vec<Candidate>| {
                keep_best_fast_scores(&mut c, quota);
                keep_grid(&mut c, quota);
                positions(&c)
            };
            let all = grid_candidates(&raw, cells);
            let mut shuffled = all.clone();
            // A seeded permutation (Fisher-Yates on a linear congruential sequence).
            let mut state = seed;
            for i in (1..shuffled.len()).rev() {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                shuffled.swap(i, (state >> 33) as usize % (i + 1));
            }
            prop_assert_eq!(select(all), select(shuffled));
        }
    }

    #[test]
    fn grid_ranks_only_the_best_fast_scores() {
        // Quota 2: the pre-filter keeps the 4 best FAST scores, so the weak cell 3
        // (a retry cell, scores below 20) gets no keypoint although it is occupied,
        // and cell 0 gives its best Harris key among those 4.
        let cand = |x: usize, cell: u32, score: u8, key: i64| Candidate {
            cell,
            key,
            ..Candidate::new(x, 0, score)
        };
        let mut c = vec![
            cand(0, 0, 60, 10),
            cand(1, 0, 50, 40),
            cand(2, 0, 21, 99),
            cand(3, 1, 40, 5),
            cand(4, 2, 30, 7),
            cand(5, 3, 9, 1000),
        ];
        keep_best_fast_scores(&mut c, 2);
        assert_eq!(positions(&c), vec![(0, 0), (1, 0), (3, 0), (4, 0)]);
        keep_grid(&mut c, 2);
        // Bests: 40 (cell 0), 7 (cell 2), 5 (cell 1): the first two.
        assert_eq!(positions(&c), vec![(1, 0), (4, 0)]);
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
