//! The CPU reference backend: exact, documented (docs/orb-reference.md), parallel with rayon.

pub mod matcher;
pub mod orb;
pub mod sift;
