//! What every matcher reports and keeps: the L2 distance of a squared distance, and the
//! ratio and distance tests.

use crate::config::MatchConfig;
use crate::types::Match;

/// The Euclidean distance reported for a squared L2 distance `squared`; every
/// backend's SIFT matcher reports (and ratio-tests) with this.
pub fn l2_distance(squared: u32) -> f32 {
    (squared as f64).sqrt() as f32
}

/// Query `query`'s match to `train` at distance `best` if it passes the ratio test
/// against `second` (`None`: a single train descriptor) and `max_distance`. Every
/// backend's matcher decides with this.
pub fn accept_match(
    config: &MatchConfig,
    query: u32,
    train: u32,
    best: f32,
    second: Option<f32>,
) -> Option<Match> {
    // A ratio of 1 or more disables the test (config.rs documents 1 as "off").
    let ratio = config.ratio;
    let passes_ratio =
        ratio >= 1.0 || second.is_none_or(|second| (best as f64) < ratio * second as f64);
    let max_distance = config.max_distance;
    let close = max_distance <= 0.0 || best as f64 <= max_distance;
    (passes_ratio && close).then_some(Match {
        query,
        train,
        distance: best,
    })
}
