//! The kernel modules (`kernels/**/*.cu`, embedded in the binary) and their on-disk
//! cubin cache.
//!
//! A cached cubin is named after the module, the architecture, the NVRTC version and
//! a SHA-256 of everything that reaches the compiler (module source, every header,
//! options), so a changed source, option or compiler never loads a stale binary.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::cuda::abi::{Define, HAMMING_DEFINES, L2_DEFINES, ORB_DEFINES, SIFT_DEFINES};
use crate::cuda::compiler::{compile_cubin, nvrtc_version, Arch};
use crate::error::{CudaError, Error, Result};
use Rounding::{Contracted, Exact, Fast};

/// One `.cu` file compiled as one CUDA module.
#[derive(Clone, Copy, Debug)]
pub struct KernelModule {
    /// Module name, also the cache file's prefix: `image_*`, `orb_*`, `sift_*` or `match_*`.
    pub name: &'static str,
    /// Path under `kernels/`, for messages.
    pub path: &'static str,
    pub source: &'static str,
    pub rounding: Rounding,
    /// The host's constants the module takes as `-D` options (src/cuda/abi.rs).
    pub defines: &'static [Define],
}

/// How freely NVRTC may round a module's float arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// IEEE operations as written, no FMA contraction: every value is the CPU's, bit for bit.
    Exact,
    /// `a * b + c` may contract into one FMA (one rounding instead of two); nothing else
    /// changes. For kernels whose parity with the CPU is a tolerance, not bit equality.
    Contracted,
    /// `--use_fast_math`: only where no result depends on float rounding.
    Fast,
}

macro_rules! kernel_file {
    ($path:literal) => {
        ($path, include_str!(concat!("../../kernels/", $path)))
    };
}

/// Headers the modules may `#include "common/..."`; served to NVRTC from memory.
pub const HEADERS: &[(&str, &str)] = &[
    kernel_file!("common/abi.cuh"),
    kernel_file!("common/levels.cuh"),
    kernel_file!("common/pixel_words.cuh"),
    kernel_file!("common/small_quotient.cuh"),
    kernel_file!("common/grid_barrier.cuh"),
    kernel_file!("common/warp_append.cuh"),
    kernel_file!("common/warp_scan.cuh"),
    kernel_file!("common/best2.cuh"),
    kernel_file!("common/hamming.cuh"),
    kernel_file!("common/hamming_mma.cuh"),
    kernel_file!("common/sift_octaves.cuh"),
    kernel_file!("common/fast_atan2.cuh"),
    kernel_file!("common/fast_ring.cuh"),
    kernel_file!("common/harris.cuh"),
    kernel_file!("common/row_runs.cuh"),
    kernel_file!("common/block_queue.cuh"),
    kernel_file!("common/gradient.cuh"),
    kernel_file!("common/blur_jobs.cuh"),
    kernel_file!("common/blur_tiles.cuh"),
    kernel_file!("common/tile_flow.cuh"),
    kernel_file!("common/image_params.cuh"),
    kernel_file!("common/match_params.cuh"),
    kernel_file!("common/orb_params.cuh"),
    kernel_file!("common/read_only.cuh"),
    kernel_file!("common/sift_params.cuh"),
];

const fn module(
    name: &'static str,
    file: (&'static str, &'static str),
    rounding: Rounding,
    defines: &'static [Define],
) -> KernelModule {
    KernelModule {
        name,
        path: file.0,
        source: file.1,
        rounding,
        defines,
    }
}

/// Every module the backend loads. ORB modules are bit-exact with the CPU reference.
/// SIFT's float kernels contract multiply-adds: their parity with the CPU is a tolerance
/// (0.05 px, 1 % descriptor L2: tests/cuda_sift.rs), and separate FMUL + FADD cost the
/// blur a third more instructions.
pub const MODULES: [KernelModule; 15] = [
    // Integer arithmetic, bit-identical with the CPU conversion.
    module("image_gray", kernel_file!("image/gray.cu"), Exact, &[]),
    module(
        "orb_pyramid",
        kernel_file!("orb/pyramid.cu"),
        Exact,
        ORB_DEFINES,
    ),
    module(
        "orb_detect",
        kernel_file!("orb/detect.cu"),
        Exact,
        ORB_DEFINES,
    ),
    module(
        "orb_select",
        kernel_file!("orb/select.cu"),
        Exact,
        ORB_DEFINES,
    ),
    module(
        "orb_describe",
        kernel_file!("orb/describe.cu"),
        Exact,
        ORB_DEFINES,
    ),
    module(
        "match_hamming",
        kernel_file!("match/hamming.cu"),
        Fast,
        HAMMING_DEFINES,
    ),
    // Integer distances only: fast math changes nothing.
    module("match_l2", kernel_file!("match/l2.cu"), Fast, L2_DEFINES),
    module(
        "sift_pyramid",
        kernel_file!("sift/pyramid.cu"),
        Contracted,
        SIFT_DEFINES,
    ),
    module(
        "sift_levels",
        kernel_file!("sift/levels.cu"),
        Contracted,
        SIFT_DEFINES,
    ),
    module(
        "sift_small_octaves",
        kernel_file!("sift/small_octaves.cu"),
        Contracted,
        SIFT_DEFINES,
    ),
    module(
        "sift_extrema",
        kernel_file!("sift/extrema.cu"),
        Contracted,
        SIFT_DEFINES,
    ),
    module(
        "sift_refine",
        kernel_file!("sift/refine.cu"),
        Contracted,
        SIFT_DEFINES,
    ),
    module(
        "sift_orientation",
        kernel_file!("sift/orientation.cu"),
        Contracted,
        SIFT_DEFINES,
    ),
    module(
        "sift_order",
        kernel_file!("sift/order.cu"),
        Exact,
        SIFT_DEFINES,
    ),
    module(
        "sift_describe",
        kernel_file!("sift/describe.cu"),
        Contracted,
        SIFT_DEFINES,
    ),
];

impl KernelModule {
    fn options(&self) -> Vec<String> {
        let mut options = vec!["--std=c++17".to_owned()];
        match self.rounding {
            Rounding::Exact => options.push("--fmad=false".into()),
            // NVRTC's default: contraction on, IEEE division, square root and denormals.
            Rounding::Contracted => {}
            Rounding::Fast => options.push("--use_fast_math".into()),
        }
        options.extend(
            self.defines
                .iter()
                .map(|define| format!("-D{}={}", define.name, define.value)),
        );
        options
    }

    /// The cache file name for this module compiled for `arch` by NVRTC `nvrtc`.
    pub fn cache_file_name(&self, arch: Arch, nvrtc: (i32, i32)) -> String {
        let mut hash = Sha256::new();
        hash.update(self.source.as_bytes());
        for (name, text) in HEADERS {
            hash.update(name.as_bytes());
            hash.update(text.as_bytes());
        }
        for option in self.options() {
            hash.update(option.as_bytes());
        }
        let digest = hash.finalize();
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{arch}-nvrtc{}.{}-{hex}.cubin",
            self.name, nvrtc.0, nvrtc.1
        )
    }

    /// Compiles this module for `arch` (no GPU needed).
    pub fn compile(&self, arch: Arch) -> Result<Vec<u8>> {
        compile_cubin(self.path, self.source, HEADERS, arch, &self.options())
    }

    /// The cubin for `arch`: read from `cache` when there, else compiled and stored.
    /// Returns it and whether it came from the cache.
    pub fn cubin(&self, arch: Arch, cache: &Path) -> Result<(Vec<u8>, bool)> {
        let path = cache.join(self.cache_file_name(arch, nvrtc_version()?));
        if let Ok(cubin) = std::fs::read(&path) {
            return Ok((cubin, true));
        }
        let cubin = self.compile(arch)?;
        store(&path, &cubin)?;
        Ok((cubin, false))
    }
}

/// Writes through a temporary file and a rename, so a concurrent reader never sees half a cubin.
fn store(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Cuda(CudaError::Cache { path, source })
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, bytes).map_err(io(&temporary))?;
    std::fs::rename(&temporary, path).map_err(io(path))
}

/// `$ORBSIFT_KERNEL_CACHE`, else `$HOME/.cache/orbsift/kernels`, else a folder in the temp dir.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ORBSIFT_KERNEL_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache/orbsift/kernels"),
        None => std::env::temp_dir().join("orbsift-kernels"),
    }
}

/// One module compiled by [`build_all`].
#[derive(Clone, Debug)]
pub struct BuiltModule {
    pub name: &'static str,
    pub path: PathBuf,
    pub bytes: usize,
    pub cached: bool,
}

/// Compiles every module for `arch` into `cache` (no GPU needed): what
/// `orbsift kernels build` runs so that images can ship pre-built kernels.
pub fn build_all(arch: Arch, cache: &Path) -> Result<Vec<BuiltModule>> {
    crate::cuda::availability::nvrtc_available()?;
    let nvrtc = nvrtc_version()?;
    MODULES
        .iter()
        .map(|module| {
            let (cubin, cached) = module.cubin(arch, cache)?;
            Ok(BuiltModule {
                name: module.name,
                path: cache.join(module.cache_file_name(arch, nvrtc)),
                bytes: cubin.len(),
                cached,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> &'static KernelModule {
        MODULES
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no module {name}"))
    }

    #[test]
    fn cache_names_separate_arch_compiler_and_source() {
        let orb = named("orb_pyramid");
        let sm87 = Arch::parse("sm_87").unwrap();
        let sm90 = Arch::parse("sm_90").unwrap();
        let name = orb.cache_file_name(sm87, (12, 6));
        assert!(name.starts_with("orb_pyramid-sm_87-nvrtc12.6-"), "{name}");
        assert_ne!(name, orb.cache_file_name(sm90, (12, 6)));
        assert_ne!(name, orb.cache_file_name(sm87, (13, 0)));
        let other = MODULES
            .iter()
            .find(|m| m.name != orb.name)
            .expect("two modules");
        assert_ne!(name, other.cache_file_name(sm87, (12, 6)));
    }

    #[test]
    fn modules_take_the_host_constants_as_defines() {
        let describe = named("orb_describe");
        let patch = format!("-DPATCH_RADIUS={}", crate::cuda::abi::PATCH_RADIUS);
        assert!(
            describe.options().contains(&patch),
            "{:?}",
            describe.options()
        );
    }

    #[test]
    fn module_names_say_their_family() {
        for module in MODULES {
            assert!(
                module.name.starts_with("image_")
                    || module.name.starts_with("orb_")
                    || module.name.starts_with("sift_")
                    || module.name.starts_with("match_"),
                "{}",
                module.name
            );
        }
    }
}
