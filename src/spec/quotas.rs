//! Keypoints wanted per pyramid level (docs/orb-reference.md §5).

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
    }
}
