//! `orbsift_node`: the ROS 2 node. Subscribes camera images (or reads a camera or
//! video itself), publishes ORB/SIFT features, matches and diagnostics, over the
//! embedded DDS transport or, built with `r2r`, over rcl.
//!
//! ```text
//! orbsift_node --ros-args --params-file config/orb.yaml -p matching.mode:=temporal -r image:=/camera/image_raw
//! ```
//!
//! This file is the node's composition root: it picks the transport, builds the
//! frame source, the node and its outputs, and runs the processing thread beside the
//! transport's loop until a signal or the end of the input.

use std::process::ExitCode;

use orbsift::Result;

#[cfg(any(feature = "dds", feature = "r2r"))]
mod serve {
    use std::sync::Arc;
    use std::time::Duration;

    use orbsift::config::{InputSource, NodeConfig};
    use orbsift::node::{input_topics, CameraSource, FrameSource, InputQueue, Node, TopicSource};
    use orbsift::transport::{Reason, Shutdown, Transport};
    use orbsift::Result;

    /// After the end of a file the writers stay this long: a reader that lost a sample of
    /// the last frames (or the final totals on `/diagnostics`) gets it repaired after the
    /// writer's next heartbeat, which an exiting node would no longer send. rustdds sends
    /// one a second once its readers have acknowledged, so 1 s lost the last Matches in
    /// some runs; 3 s covers two heartbeats and the repair.
    const END_OF_INPUT_LINGER: Duration = Duration::from_secs(3);

    /// How long a stop request waits for the frame in progress. Under a flood the
    /// processing thread, which yields the CPU to the transport, can take seconds over a
    /// large frame; the node still exits promptly and that frame is not published.
    const FRAME_IN_PROGRESS_GRACE: Duration = Duration::from_millis(500);

    /// Runs the node over `transport` until SIGINT or SIGTERM, or until the end of a video
    /// file (camera input without `input.loop`); errs on a start-up problem or a lost camera.
    pub fn serve<T: Transport>(mut transport: T, config: NodeConfig) -> Result<()> {
        let shutdown = Shutdown::on_signals()?;
        let name = transport.node_name();
        log::info!(
            "{name}: {} on {:?}, matching {:?}",
            config.library.algorithm.name(),
            config.library.backend,
            config.matching.mode
        );
        let mut node = Node::new(&name, config.clone())?;
        transport.serve_parameters(node.parameters())?;
        let queue = Arc::new(InputQueue::new());
        let mut source: Box<dyn FrameSource> = match config.input.source {
            InputSource::Topic => {
                let topics = input_topics(config.matching.mode);
                transport.subscribe(topics, config.input.transport, queue.clone())?;
                Box::new(TopicSource(queue.clone()))
            }
            InputSource::Camera => Box::new(CameraSource::open(
                &config.input,
                config.library.max_image_pixels,
            )?),
        };
        let republish = config.input.source == InputSource::Camera && config.input.publish_image;
        let outputs = transport.outputs(republish)?;
        let processing = {
            let shutdown = shutdown.clone();
            std::thread::spawn(move || {
                if let Err(err) = orbsift::transport::priority::yield_to_transport() {
                    log::warn!("the processing thread keeps its priority: {err}");
                }
                let ran = node.run(source.as_mut(), &outputs, shutdown.flag());
                shutdown.request(Reason::InputEnded);
                ran
            })
        };
        let spun = transport.spin(&shutdown);
        shutdown.request(Reason::InputEnded);
        queue.close();
        log::info!("shutting down");
        let ran = match finished_within(&processing, FRAME_IN_PROGRESS_GRACE) {
            true => processing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            false => {
                log::warn!(
                    "the frame in progress did not finish within {FRAME_IN_PROGRESS_GRACE:?} \
                     of the stop request: exiting without it"
                );
                Ok(())
            }
        };
        if ran.is_ok() && shutdown.reason() == Some(Reason::InputEnded) {
            std::thread::sleep(END_OF_INPUT_LINGER);
        }
        spun.and(ran)
    }

    fn finished_within(thread: &std::thread::JoinHandle<Result<()>>, grace: Duration) -> bool {
        let deadline = std::time::Instant::now() + grace;
        while !thread.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        thread.is_finished()
    }
}

#[cfg(feature = "r2r")]
fn start(_args: &[String]) -> Result<()> {
    // rcl reads `--ros-args` and the parameters itself.
    let (transport, config) = orbsift::transport::r2r::RclTransport::create("orbsift")?;
    serve::serve(transport, config)
}

#[cfg(all(feature = "dds", not(feature = "r2r")))]
fn start(args: &[String]) -> Result<()> {
    use orbsift::config::NodeConfig;
    use orbsift::transport::dds::DdsTransport;
    use orbsift::transport::{domain_id_from_env, RosArgs};
    use orbsift::Error;

    let ros_args = RosArgs::parse("orbsift", args)?;
    let params_file = match ros_args.params_files.as_slice() {
        [] => None,
        [file] => Some(file.as_path()),
        _ => {
            return Err(Error::Config(orbsift::ConfigError::RosArgs(
                "more than one --params-file: merge them into one file".into(),
            )))
        }
    };
    let config = NodeConfig::load(params_file, &ros_args.overrides)?;
    let domain_id = domain_id_from_env()?;
    log::info!("ROS domain {domain_id}");
    serve::serve(DdsTransport::new(ros_args, domain_id)?, config)
}

#[cfg(not(any(feature = "dds", feature = "r2r")))]
fn start(_args: &[String]) -> Result<()> {
    Err(orbsift::Error::Config(orbsift::ConfigError::RosArgs(
        "this build has no ROS transport: enable the `dds` or `r2r` feature".into(),
    )))
}

/// What is logged unless `RUST_LOG` says otherwise.
fn default_log_filter() -> &'static str {
    // Outside a ROS environment ROS_DISTRO is unset, which is normal for the embedded DDS
    // node; ros2-client would warn about it on every start. Only that check logs from
    // `ros2_client::distributions`, so with ROS_DISTRO set (a distro mismatch) it still warns.
    if std::env::var_os("ROS_DISTRO").is_some() {
        "info,rustdds=warn,ros2_client=warn"
    } else {
        "info,rustdds=warn,ros2_client=warn,ros2_client::distributions=error"
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or(default_log_filter()),
    )
    .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match start(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("orbsift_node: {}", err.one_line());
            ExitCode::FAILURE
        }
    }
}
