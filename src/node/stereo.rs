//! Pairs left and right features by stamp.

use super::checked::CheckedPixels;
use crate::msgs::Header;
use crate::types::Features;

/// A frame, kept with what was extracted from it for matching and drawing.
pub struct Extracted {
    pub header: Header,
    /// As it arrived (grey, or a raw message converted only if a picture is drawn).
    pub pixels: CheckedPixels,
    pub features: Features,
}

/// Holds the latest unpaired left and right frames; a pair forms when their
/// stamps differ by at most `tolerance` seconds.
pub struct StereoPairer {
    tolerance: f64,
    left: Option<Extracted>,
    right: Option<Extracted>,
}

impl StereoPairer {
    pub fn new(tolerance: f64) -> Self {
        Self {
            tolerance,
            left: None,
            right: None,
        }
    }

    pub fn set_tolerance(&mut self, tolerance: f64) {
        self.tolerance = tolerance;
    }

    /// Offers a left frame; returns `(left, right)` when it pairs.
    pub fn offer_left(&mut self, left: Extracted) -> Option<(Extracted, Extracted)> {
        self.left = Some(left);
        self.pair()
    }

    /// Offers a right frame; returns `(left, right)` when it pairs.
    pub fn offer_right(&mut self, right: Extracted) -> Option<(Extracted, Extracted)> {
        self.right = Some(right);
        self.pair()
    }

    fn pair(&mut self) -> Option<(Extracted, Extracted)> {
        let (left, right) = (self.left.as_ref()?, self.right.as_ref()?);
        let gap = (left.header.stamp.as_secs_f64() - right.header.stamp.as_secs_f64()).abs();
        if gap <= self.tolerance {
            Some((self.left.take()?, self.right.take()?))
        } else {
            None
        }
    }
}
