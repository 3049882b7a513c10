//! The CPU reference backend: exact, documented (docs/orb-reference.md), parallel with rayon.

pub mod blocks;
pub mod blur;
pub mod brief;
pub mod candidates;
pub mod fast;
pub mod harris;
pub mod matcher;
pub mod orb;
pub mod orientation;
pub mod pyramid;
pub mod select;
