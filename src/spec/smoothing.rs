//! The 7x7 Gaussian (σ = 2) that smooths a level before rBRIEF sampling, in fixed point
//! with taps summing to 256 (docs/orb-reference.md §7).

/// Half the kernel side.
pub const BLUR_RADIUS: usize = 3;

/// The kernel side.
pub const SIDE: usize = 2 * BLUR_RADIUS + 1;

/// The 7 taps: `g_i = exp(-(i-3)²/8)` normalised to sum 1, `round(256 g_i)`, and the
/// centre fixed up so they sum to 256 (a test in `cpu::blur` derives them from that formula).
/// Constants, so the multiplies by them become cheap vector code.
pub const GAUSSIAN_TAPS: [u16; SIDE] = [18, 34, 49, 54, 49, 34, 18];
