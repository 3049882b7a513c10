//! PLACEHOLDER: the CLI (helper cli). wt/cuda adds only the `kernels` subcommand and
//! a CUDA-only `bench`; the real CLI adds `Kernels(orbsift::cuda::KernelsCommand)` and
//! calls `orbsift::cuda::bench::bench_orb` from its own `bench` for `--backend cuda`.
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use orbsift::config::MemoryMode;
use orbsift::{GrayImage, OrbConfig};

#[derive(Parser)]
#[command(name = "orbsift", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Kernel housekeeping (needs NVRTC, no GPU).
    #[cfg(feature = "cuda")]
    #[command(subcommand)]
    Kernels(orbsift::cuda::KernelsCommand),
    /// Times CUDA ORB at 640x480 .. 3840x2160 on the given images, resized.
    #[cfg(feature = "cuda")]
    Bench {
        #[arg(long, default_value = "orb")]
        algo: String,
        #[arg(long, default_value = "cuda")]
        backend: String,
        /// Run on this many SMs only.
        #[arg(long)]
        sm_limit: Option<u32>,
        #[arg(long, default_value = "device")]
        memory: String,
        #[arg(long, default_value_t = 200)]
        iterations: usize,
        images: Vec<PathBuf>,
    },
}

#[cfg(feature = "cuda")]
fn bench(
    sm_limit: Option<u32>,
    memory: &str,
    iterations: usize,
    images: &[PathBuf],
) -> orbsift::Result<()> {
    let memory = match memory {
        "unified" => MemoryMode::Unified,
        "auto" => MemoryMode::Auto,
        _ => MemoryMode::Device,
    };
    let originals = images
        .iter()
        .map(|p| GrayImage::open(p))
        .collect::<orbsift::Result<Vec<_>>>()?;
    for (w, h) in [(640, 480), (1280, 960), (1920, 1080), (3840, 2160)] {
        let frames: Vec<GrayImage> = originals
            .iter()
            .map(|g| {
                let buffer = image::GrayImage::from_raw(
                    g.width() as u32,
                    g.height() as u32,
                    g.data().to_vec(),
                )
                .expect("image buffer");
                let out = image::imageops::resize(&buffer, w, h, image::imageops::Triangle);
                GrayImage::new(w as usize, h as usize, out.into_raw())
            })
            .collect::<orbsift::Result<_>>()?;
        let line = orbsift::cuda::bench::bench_orb(
            &OrbConfig::default(),
            memory,
            sm_limit,
            &frames,
            20,
            iterations,
        )?;
        println!("{line}");
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let result = match Cli::parse().command {
        #[cfg(feature = "cuda")]
        Command::Kernels(command) => command.run(&mut std::io::stdout().lock()),
        #[cfg(feature = "cuda")]
        Command::Bench {
            algo,
            backend,
            sm_limit,
            memory,
            iterations,
            images,
        } => {
            if algo != "orb" || backend != "cuda" {
                eprintln!("orbsift: this build benches --algo orb --backend cuda only");
                return std::process::ExitCode::FAILURE;
            }
            bench(sm_limit, &memory, iterations, &images)
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("orbsift: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
