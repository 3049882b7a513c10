//! PLACEHOLDER: the CLI (helper cli). Only the `kernels` subcommand lives here on
//! wt/cuda; the real CLI adds `Kernels(orbsift::cuda::KernelsCommand)` to its commands.
use clap::{Parser, Subcommand};

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
}

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let result = match Cli::parse().command {
        #[cfg(feature = "cuda")]
        Command::Kernels(command) => command.run(&mut std::io::stdout().lock()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("orbsift: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
