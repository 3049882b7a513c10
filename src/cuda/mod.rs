//! The CUDA backend: cudarc over the driver API, kernels compiled at run time by NVRTC.
//!
//! cudarc loads libcuda and libnvrtc lazily and *panics* when one is missing, so
//! [`availability`] probes both libraries before any other cudarc call; everything
//! else in this module assumes it said yes.

pub mod availability;
pub mod bench;
pub mod branch;
pub mod compiler;
pub mod gpu;
pub mod gray;
pub mod green;
pub mod kernels_command;
pub mod l2_matcher;
pub mod matcher;
pub mod memory;
pub mod modules;
pub mod orb;
pub mod sift;

pub use availability::{availability, driver_available};
pub use compiler::{nvrtc_version, Arch};
pub use kernels_command::KernelsCommand;
pub use l2_matcher::CudaL2Matcher;
pub use matcher::{CudaHammingMatcher, CudaMatcher, NearestTwo};
pub use memory::allocations;
pub use modules::{build_all, cache_dir, BuiltModule, KernelModule, MODULES};
pub use orb::{CudaOrbExtractor, CudaOrbPipeline, FrameTiming, Knn2};
pub use sift::CudaSiftExtractor;
