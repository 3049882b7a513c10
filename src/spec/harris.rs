//! The Harris response reported for an integer Harris key (docs/orb-reference.md §4).

/// Converts the integer key into OpenCV's response: `1 / (25 (4 * 7 * 255)^4)`,
/// where 25 undoes the factor that keeps `k = 0.04` integral and `4 * 7 * 255` is
/// OpenCV's gradient scale for a 7x7 block.
pub const HARRIS_KEY_TO_RESPONSE: f64 = 1.0 / (25.0 * 7140.0 * 7140.0 * 7140.0 * 7140.0);

/// The reported response of a key: one f64 multiply, then f32.
pub fn harris_response(key: i64) -> f32 {
    (key as f64 * HARRIS_KEY_TO_RESPONSE) as f32
}
