//! The CUDA backend: cudarc over the driver API, kernels compiled at run time by NVRTC.
//!
//! cudarc loads libcuda and libnvrtc lazily and *panics* when one is missing, so
//! [`availability`] probes both libraries before any other cudarc call; everything
//! else in this module assumes it said yes.
//!
//! Public here: the extractors and matchers, their timing and stage types, and the kernel
//! cache ([`build_all`]) that `orbsift kernels build` fills without a GPU. The device,
//! memory, green-context and compiler plumbing stays inside the crate.

mod abi;
mod availability;
mod branch;
mod compiler;
mod free_memory;
mod gpu;
mod graph;
mod gray;
mod green;
mod kernel;
mod l2_matcher;
mod matcher;
mod memory;
mod modules;
mod orb;
mod sift;
mod timing;
mod upload;

pub use availability::availability;
pub use compiler::{nvrtc_version, Arch};
pub use l2_matcher::{CudaL2Matcher, DeviceDescriptors};
pub use matcher::{CudaHammingMatcher, CudaMatcher, NearestTwo};
pub use memory::allocations;
pub use modules::{build_all, cache_dir, BuiltModule};
pub use orb::{CudaOrbExtractor, Knn2, LevelStages, OrbPlanBytes};
pub use sift::{CudaSiftExtractor, DeviceLimits, PlanBytes as SiftPlanBytes};
pub use timing::FrameTiming;
