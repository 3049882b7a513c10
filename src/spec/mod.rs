//! The numbers both backends are written to: tables, patterns and geometry that the CPU
//! reference (`cpu/`) computes with and the CUDA backend (`cuda/`) uploads or decodes
//! with, so both read them from one place (docs/orb-reference.md numbers the sections).

pub mod brief_pattern;
pub mod fast_arc;
pub mod grid;
pub mod harris;
pub mod matching;
pub mod orientation;
pub mod pyramid;
pub mod quotas;
pub mod scale_space;
pub mod sift_descriptor;
pub mod smoothing;
