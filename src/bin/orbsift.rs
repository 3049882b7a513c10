//! `orbsift`: extract and match features of image files, benchmark, print the config.
//! The work lives in the library; this file parses arguments and reports errors.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use orbsift::config::NodeConfig;
use orbsift::draw::draw_matches;
use orbsift::report::{write_json, FeaturesReport, MatchReport};
use orbsift::{
    Algorithm, Backend, Config, ConfigError, Error, Extractor, Features, GrayImage, ImageError,
    Result,
};

// The subcommands' code lives beside this file, out of the way of bin-target discovery.
#[path = "orbsift/bench.rs"]
mod bench;
#[cfg(feature = "cuda")]
#[path = "orbsift/gpu_bench.rs"]
mod gpu_bench;
#[cfg(feature = "cuda")]
#[path = "orbsift/kernels.rs"]
mod kernels;

/// ORB and SIFT feature extraction and matching on NVIDIA GPUs, with a CPU reference.
#[derive(Parser)]
#[command(name = "orbsift", version, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Extract features of one image and write them as JSON.
    Extract {
        #[command(flatten)]
        params: Params,
        /// The JSON file to write.
        #[arg(long)]
        out: PathBuf,
        /// PNG, JPEG or PGM/PPM.
        image: PathBuf,
    },
    /// Extract features of two images, match A (query) against B (train), write JSON.
    Match {
        #[command(flatten)]
        params: Params,
        /// The JSON file to write.
        #[arg(long)]
        out: PathBuf,
        /// Also write A and B side by side with a line per match (PNG).
        #[arg(long)]
        draw: Option<PathBuf>,
        a: PathBuf,
        b: PathBuf,
    },
    /// Time extraction and matching at 640x480, 1280x960, 1920x1080 and 3840x2160
    /// (or at the sizes `--size` names).
    Bench {
        #[command(flatten)]
        params: Params,
        /// A picture to resize to each size; repeat to rotate over several (default: a
        /// photo built into the binary).
        #[arg(long)]
        image: Vec<PathBuf>,
        /// Timed runs per size, after warm-up.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
        iterations: u32,
        /// Time these sizes only, `WIDTHxHEIGHT` (comma-separated), e.g. one size to
        /// profile its kernels alone.
        #[arg(long, value_delimiter = ',', value_parser = bench::parse_size)]
        size: Vec<(usize, usize)>,
        /// CPU threads (default: one per core).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
        threads: Option<u32>,
        /// Run the GPU pipeline on this many SMs only, in a green context (CUDA backend).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        sm_limit: Option<u32>,
        /// CUDA SIFT at matched feature counts: at each size, the
        /// `sift.contrast_threshold` that gives the images this many features each on
        /// average. One count for every size, or one per size (comma-separated).
        #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
        sift_features: Vec<u32>,
        /// Also write the frames timed at each size to this folder as binary PGM
        /// (`WIDTHxHEIGHT-N.pgm`), for a peer to time the same pixels.
        #[arg(long)]
        save_frames: Option<PathBuf>,
        /// Launch the GPU kernels one by one instead of replaying each frame's captured
        /// CUDA graph (CUDA backend): to profile plain launches or measure the graph's gain.
        #[arg(long)]
        no_graph: bool,
    },
    /// Kernel housekeeping that needs NVRTC but no GPU.
    #[cfg(feature = "cuda")]
    Kernels {
        #[command(subcommand)]
        command: kernels::KernelsCommand,
    },
    /// Print the effective parameters as a ROS 2 parameter file.
    Config {
        #[command(flatten)]
        params: Params,
    },
}

/// Where parameters come from: defaults, then `--config`, then `--set`, then the flags.
#[derive(Args)]
struct Params {
    #[arg(long, value_enum)]
    algo: Option<Algorithm>,
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    /// A YAML parameter file (ROS form `/**: ros__parameters:` or a plain mapping).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override one parameter, e.g. `--set orb.n_features=1000`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

impl Params {
    /// All parameters: the files are the node's, so its own settings are accepted
    /// (and printed by `orbsift config`) though only [`Params::load`]'s part is used.
    fn load_all(&self) -> Result<NodeConfig> {
        let mut config = NodeConfig::load(self.config.as_deref(), &self.overrides)?;
        if let Some(algorithm) = self.algo {
            config.library.algorithm = algorithm;
        }
        if let Some(backend) = self.backend {
            config.library.backend = backend;
        }
        Ok(config)
    }

    /// What extraction and matching read.
    fn load(&self) -> Result<Config> {
        Ok(self.load_all()?.library)
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err)
            if err.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            // `orbsift` alone: the help is the useful answer.
            let _ = err.print();
            return ExitCode::from(2);
        }
        Err(err) => {
            eprintln!("orbsift: error: {}", one_line_usage_error(&err));
            return ExitCode::from(2);
        }
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("orbsift: error: {}", err.one_line());
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Extract { params, out, image } => {
            let config = params.load()?;
            let gray = GrayImage::open_limited(&image, config.max_image_pixels)?;
            let mut extractor = orbsift::create_extractor(&config)?;
            let features = extract_logged(extractor.as_mut(), &gray, &image)?;
            let report = FeaturesReport::new(
                &image,
                config.algorithm,
                extractor.backend_name(),
                &features,
            );
            write_json(&out, &report)
        }
        Command::Match {
            params,
            out,
            draw,
            a,
            b,
        } => {
            let config = params.load()?;
            let (gray_a, gray_b) = (
                GrayImage::open_limited(&a, config.max_image_pixels)?,
                GrayImage::open_limited(&b, config.max_image_pixels)?,
            );
            let mut extractor = orbsift::create_extractor(&config)?;
            let features_a = extract_logged(extractor.as_mut(), &gray_a, &a)?;
            let features_b = extract_logged(extractor.as_mut(), &gray_b, &b)?;
            let matches =
                orbsift::create_matcher(&config)?.match_features(&features_a, &features_b)?;
            log::info!("{} matches", matches.len());
            if let Some(path) = draw {
                draw_matches(
                    &gray_a,
                    &features_a.keypoints,
                    &gray_b,
                    &features_b.keypoints,
                    &matches,
                )
                .save(&path)
                .map_err(|source| Error::Image(ImageError::Encode { path, source }))?;
            }
            let backend = extractor.backend_name();
            let report = MatchReport {
                a: FeaturesReport::new(&a, config.algorithm, backend, &features_a),
                b: FeaturesReport::new(&b, config.algorithm, backend, &features_b),
                matches,
            };
            write_json(&out, &report)
        }
        Command::Bench {
            params,
            image,
            iterations,
            size,
            threads,
            sm_limit,
            sift_features,
            save_frames,
            no_graph,
        } => {
            let config = params.load()?;
            let sources = if image.is_empty() {
                vec![
                    GrayImage::decode(BUILT_IN_IMAGE, config.max_image_pixels).map_err(
                        |source| {
                            Error::Image(ImageError::Decode {
                                path: BUILT_IN_IMAGE_NAME.into(),
                                source,
                            })
                        },
                    )?,
                ]
            } else {
                image
                    .iter()
                    .map(|path| GrayImage::open_limited(path, config.max_image_pixels))
                    .collect::<Result<Vec<_>>>()?
            };
            let mut pool = rayon::ThreadPoolBuilder::new();
            if let Some(n) = threads {
                pool = pool.num_threads(n as usize);
            }
            let pool = pool.build().map_err(|err| {
                Error::Config(ConfigError::Invalid {
                    name: "--threads".into(),
                    reason: err.to_string(),
                })
            })?;
            let options = bench::Options {
                iterations: iterations as usize,
                sizes: if size.is_empty() {
                    bench::SIZES.to_vec()
                } else {
                    size
                },
                sm_limit,
                sift_features,
                save_frames,
                graph: !no_graph,
            };
            pool.install(|| bench::run(&config, &sources, &options))
        }
        #[cfg(feature = "cuda")]
        Command::Kernels { command } => command.run(&mut std::io::stdout().lock()),
        Command::Config { params } => {
            let text = params.load_all()?.to_ros_yaml();
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(stdout_error)
        }
    }
}

/// The photo `bench` resizes when no `--image` is given, so the installed binary
/// benchmarks anywhere.
const BUILT_IN_IMAGE: &[u8] = include_bytes!("../../tests/data/leuvenA.jpg");
const BUILT_IN_IMAGE_NAME: &str = "leuvenA.jpg (built in)";

fn extract_logged(
    extractor: &mut dyn Extractor,
    image: &GrayImage,
    path: &Path,
) -> Result<Features> {
    let start = Instant::now();
    let features = extractor.extract(image)?;
    log::info!(
        "{}: {} keypoints in {:.1} ms on {}",
        path.display(),
        features.len(),
        start.elapsed().as_secs_f64() * 1e3,
        extractor.device_name()
    );
    Ok(features)
}

/// A failed write to standard output (a closed pipe, say) is an error, not a panic.
fn stdout_error(source: std::io::Error) -> Error {
    Error::Write {
        path: "standard output".into(),
        source,
    }
}

/// clap's multi-line usage error folded into one line, without the usage hint.
fn one_line_usage_error(err: &clap::Error) -> String {
    err.render()
        .to_string()
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("; ")
}
