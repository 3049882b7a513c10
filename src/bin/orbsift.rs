//! `orbsift`: extract and match features of image files, benchmark, print the config.
//! The work lives in the library; this file parses arguments and reports errors.

use std::error::Error as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use orbsift::draw::draw_matches;
use orbsift::report::{write_json, FeaturesReport, MatchReport};
use orbsift::{Algorithm, Backend, Config, Error, Extractor, Features, GrayImage, Result};

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
    /// Time extraction and matching at 640x480, 1280x960, 1920x1080 and 3840x2160.
    Bench {
        #[command(flatten)]
        params: Params,
        /// The picture to resize to each size (default: a photo built into the binary).
        #[arg(long)]
        image: Option<PathBuf>,
        /// Timed runs per size, after warm-up.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
        iterations: u32,
        /// CPU threads (default: one per core).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
        threads: Option<u32>,
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
    fn load(&self) -> Result<Config> {
        let mut config = Config::load(self.config.as_deref(), &self.overrides)?;
        if let Some(algorithm) = self.algo {
            config.algorithm = algorithm;
        }
        if let Some(backend) = self.backend {
            config.backend = backend;
        }
        Ok(config)
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
            eprintln!("orbsift: error: {}", with_sources(&err));
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Extract { params, out, image } => {
            let config = params.load()?;
            let gray = GrayImage::open(&image)?;
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
            let (gray_a, gray_b) = (GrayImage::open(&a)?, GrayImage::open(&b)?);
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
                .map_err(|source| Error::ImageEncode { path, source })?;
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
            threads,
        } => {
            let config = params.load()?;
            let source = match &image {
                Some(path) => GrayImage::open(path)?,
                None => GrayImage::decode(BUILT_IN_IMAGE, Path::new(BUILT_IN_IMAGE_NAME))?,
            };
            let mut pool = rayon::ThreadPoolBuilder::new();
            if let Some(n) = threads {
                pool = pool.num_threads(n as usize);
            }
            let pool = pool.build().map_err(|err| Error::InvalidParameter {
                name: "--threads".into(),
                reason: err.to_string(),
            })?;
            pool.install(|| bench::run(&config, &source, iterations as usize))
        }
        Command::Config { params } => {
            let text = params.load()?.to_ros_yaml();
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

/// The error and every source not already quoted in its message, on one line.
fn with_sources(err: &Error) -> String {
    let mut line = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line.split_whitespace().collect::<Vec<_>>().join(" ")
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

mod bench {
    //! `orbsift bench`: a table for people and one `BENCH ...` line per size for scripts.

    use std::io::Write;
    use std::time::Instant;

    use orbsift::{Config, GrayImage, Result};

    const SIZES: [(usize, usize); 4] = [(640, 480), (1280, 960), (1920, 1080), (3840, 2160)];
    const WARM_UP_RUNS: usize = 3;

    /// Milliseconds of repeated runs.
    struct Timings(Vec<f64>);

    impl Timings {
        fn median(&self) -> f64 {
            let mut sorted = self.0.clone();
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len();
            if n % 2 == 1 {
                sorted[n / 2]
            } else {
                (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
            }
        }

        fn min(&self) -> f64 {
            self.0.iter().copied().fold(f64::INFINITY, f64::min)
        }
    }

    fn time_ms<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
        let start = Instant::now();
        let value = f()?;
        Ok((value, start.elapsed().as_secs_f64() * 1e3))
    }

    pub fn run(config: &Config, source: &GrayImage, iterations: usize) -> Result<()> {
        let mut out = std::io::stdout().lock();
        let mut extractor = orbsift::create_extractor(config)?;
        let mut matcher = orbsift::create_matcher(config)?;
        let device = extractor.device_name();
        let (algo, backend) = (config.algorithm.name(), extractor.backend_name());
        writeln!(out, "{algo} on {backend} ({device}), {iterations} iterations after {WARM_UP_RUNS} warm-up runs")
            .map_err(super::stdout_error)?;
        writeln!(
            out,
            "{:>10} {:>9} {:>14} {:>11} {:>14} {:>12} {:>9}",
            "size",
            "keypoints",
            "extract median",
            "extract min",
            "upload median",
            "match median",
            "match min"
        )
        .map_err(super::stdout_error)?;
        let mut machine_lines = Vec::new();
        for (width, height) in SIZES {
            let frame = resized(source, width, height)?;
            let mut features = extractor.extract(&frame)?;
            for _ in 1..WARM_UP_RUNS {
                features = extractor.extract(&frame)?;
            }
            matcher.match_features(&features, &features)?;
            let (mut extract, mut upload, mut matching) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..iterations {
                let (f, ms) = time_ms(|| extractor.extract(&frame))?;
                extract.push(ms);
                upload.push(extractor.last_upload_ms());
                matching.push(time_ms(|| matcher.match_features(&f, &f))?.1);
                features = f;
            }
            let (extract, upload, matching) =
                (Timings(extract), Timings(upload), Timings(matching));
            writeln!(
                out,
                "{:>10} {:>9} {:>11.3} ms {:>8.3} ms {:>11.3} ms {:>9.3} ms {:>6.3} ms",
                format!("{width}x{height}"),
                features.len(),
                extract.median(),
                extract.min(),
                upload.median(),
                matching.median(),
                matching.min()
            )
            .map_err(super::stdout_error)?;
            machine_lines.push(format!(
                "BENCH algo={algo} backend={backend} device=\"{device}\" size={width}x{height} features={} \
                 extract_ms_median={:.3} extract_ms_min={:.3} upload_ms_median={:.3} match_ms_median={:.3}",
                features.len(),
                extract.median(),
                extract.min(),
                upload.median(),
                matching.median()
            ));
        }
        for line in machine_lines {
            writeln!(out, "{line}").map_err(super::stdout_error)?;
        }
        Ok(())
    }

    /// `source` stretched to `width` x `height` with bilinear filtering.
    fn resized(source: &GrayImage, width: usize, height: usize) -> Result<GrayImage> {
        let buffer = image::GrayImage::from_raw(
            source.width() as u32,
            source.height() as u32,
            source.data().to_vec(),
        )
        .expect("a GrayImage holds width * height bytes");
        let out = image::imageops::resize(
            &buffer,
            width as u32,
            height as u32,
            image::imageops::FilterType::Triangle,
        );
        GrayImage::new(width, height, out.into_raw())
    }
}
