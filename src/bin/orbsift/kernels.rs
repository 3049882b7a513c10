//! `orbsift kernels ...`: kernel housekeeping that needs NVRTC but no GPU.

use std::io::Write;
use std::path::PathBuf;

use orbsift::cuda::{build_all, cache_dir, nvrtc_version, Arch};
use orbsift::{Error, Result};

#[derive(Debug, clap::Subcommand)]
pub enum KernelsCommand {
    /// Compile every kernel module for one architecture into the cache (no GPU needed).
    Build {
        /// Target architecture, e.g. sm_87 (Orin), sm_72 (Xavier), sm_110 (Thor).
        #[arg(long)]
        arch: String,
        /// Cache folder [default: $ORBSIFT_KERNEL_CACHE or ~/.cache/orbsift/kernels].
        #[arg(long)]
        cache_dir: Option<PathBuf>,
    },
}

impl KernelsCommand {
    /// Runs the command, printing one line per module to `out`.
    pub fn run(&self, out: &mut impl Write) -> Result<()> {
        match self {
            KernelsCommand::Build {
                arch,
                cache_dir: dir,
            } => {
                let arch = Arch::parse(arch)?;
                let dir = dir.clone().unwrap_or_else(cache_dir);
                let built = build_all(arch, &dir)?;
                let (major, minor) = nvrtc_version()?;
                let stdout = |source| Error::Write {
                    path: "<stdout>".into(),
                    source,
                };
                for module in built {
                    writeln!(
                        out,
                        "{:<14} {arch} nvrtc {major}.{minor} {:>8} bytes {} {}",
                        module.name,
                        module.bytes,
                        if module.cached {
                            "cached  "
                        } else {
                            "compiled"
                        },
                        module.path.display()
                    )
                    .map_err(stdout)?;
                }
                Ok(())
            }
        }
    }
}
