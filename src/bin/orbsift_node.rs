//! `orbsift_node`: the ROS 2 node. Subscribes camera images, publishes ORB/SIFT
//! features, matches and diagnostics over the embedded DDS transport.
//!
//! ```text
//! orbsift_node --ros-args --params-file config/orb.yaml -p matching.mode:=temporal -r image:=/camera/image_raw
//! ```

use std::process::ExitCode;

use orbsift::Result;

/// Under rcl, rcl reads `--ros-args` and the parameters itself.
#[cfg(feature = "r2r")]
fn start(_args: &[String]) -> Result<()> {
    orbsift::transport::r2r::run("orbsift")
}

#[cfg(all(feature = "dds", not(feature = "r2r")))]
fn start(args: &[String]) -> Result<()> {
    use orbsift::transport::{dds, domain_id_from_env, RosArgs};
    use orbsift::{Config, Error};

    let ros_args = RosArgs::parse("orbsift", args)?;
    let params_file = match ros_args.params_files.as_slice() {
        [] => None,
        [file] => Some(file.as_path()),
        _ => {
            return Err(Error::RosArgs(
                "more than one --params-file: merge them into one file".into(),
            ))
        }
    };
    let config = Config::load(params_file, &ros_args.overrides)?;
    let domain_id = domain_id_from_env()?;
    log::info!(
        "{} on ROS domain {domain_id}: {} on {:?}, matching {:?}",
        ros_args.fully_qualified_name(),
        config.algorithm.name(),
        config.backend,
        config.matching.mode
    );
    dds::run(ros_args, domain_id, config)
}

#[cfg(not(any(feature = "dds", feature = "r2r")))]
fn start(_args: &[String]) -> Result<()> {
    Err(orbsift::Error::RosArgs(
        "this build has no ROS transport: enable the `dds` or `r2r` feature".into(),
    ))
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("info,rustdds=warn,ros2_client=warn"),
    )
    .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match start(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let mut message = format!("orbsift_node: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(&format!("\n  caused by: {cause}"));
                source = cause.source();
            }
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
