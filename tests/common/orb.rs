//! The CPU reference ORB as the tests that judge it, or compare with it, run it.

use orbsift::cpu::orb::OrbExtractor;
use orbsift::{Extractor, Features, GrayImage, OrbConfig};

/// `image`'s features from the CPU reference with `config`.
pub fn cpu_orb(config: &OrbConfig, image: &GrayImage) -> Features {
    OrbExtractor::new(config.clone())
        .expect("a valid ORB config")
        .extract(image)
        .expect("CPU ORB extraction")
}

/// The bits in which two descriptors (or two runs of descriptors) differ.
pub fn differing_bits(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}
