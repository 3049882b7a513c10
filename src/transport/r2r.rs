//! The rcl transport (feature `r2r`): the same runtime inside a ROS 2 install.
//! rcl itself handles `--ros-args` (names, remapping, parameter files); images
//! arrive and results leave as raw CDR, coded by [`crate::msgs`] as over DDS.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use r2r::{ParameterValue, PublisherUntyped, QosProfile};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::msgs::{self, DiagnosticArray, Image, RosMessage};
use crate::node::{input_topics, open_camera, CameraInput, Frame, InputQueue, Node, Outputs};

fn rcl_error(what: impl Into<String>) -> impl FnOnce(r2r::Error) -> Error {
    let what = what.into();
    move |source| Error::Transport {
        what,
        source: Box::new(source),
    }
}

/// `package/msg/Name`, the form rcl type support is looked up by.
fn rcl_type<M: RosMessage>() -> String {
    format!("{}/msg/{}", M::PACKAGE, M::NAME)
}

/// A parameter as the `name=value` override [`Config::load`] takes.
fn override_of(name: &str, value: &ParameterValue) -> Option<String> {
    let text = match value {
        ParameterValue::NotSet => return None,
        ParameterValue::Bool(v) => v.to_string(),
        ParameterValue::Integer(v) => v.to_string(),
        ParameterValue::Double(v) => format!("{v:?}"),
        ParameterValue::String(v) => v.clone(),
        other => format!("{other:?}"),
    };
    Some(format!("{name}={text}"))
}

struct RclOutputs {
    features: PublisherUntyped,
    matches: PublisherUntyped,
    diagnostics: PublisherUntyped,
    debug_image: PublisherUntyped,
    /// `image`, only for camera input with `input.publish_image`.
    image: Option<PublisherUntyped>,
}

fn has_subscribers(publisher: &PublisherUntyped) -> bool {
    publisher
        .get_inter_process_subscription_count()
        .is_ok_and(|count| count > 0)
}

fn publish<M: RosMessage>(publisher: &PublisherUntyped, message: &M) -> Result<()> {
    publisher
        .publish_raw(&msgs::encode(message)?)
        .map_err(rcl_error(format!("cannot publish a {} message", M::NAME)))
}

impl Outputs for RclOutputs {
    fn publish_features(&self, message: msgs::Features) -> Result<()> {
        publish(&self.features, &message)
    }
    fn publish_matches(&self, message: msgs::Matches) -> Result<()> {
        publish(&self.matches, &message)
    }
    fn publish_diagnostics(&self, message: DiagnosticArray) -> Result<()> {
        publish(&self.diagnostics, &message)
    }
    fn publish_debug_image(&self, message: Image) -> Result<()> {
        publish(&self.debug_image, &message)
    }
    fn wants_debug_image(&self) -> bool {
        has_subscribers(&self.debug_image)
    }
    fn publish_image(&self, message: Image) -> Result<()> {
        match &self.image {
            Some(image) => publish(image, &message),
            None => Ok(()),
        }
    }
    fn features_subscribed(&self) -> bool {
        has_subscribers(&self.features)
    }
}

/// Runs the node under rcl until the context shuts down, or until the end of a video
/// file (camera input without `input.loop`); returns early only on a start-up error.
/// Parameters come from rcl (`--params-file`, `-p`).
pub fn run(default_node_name: &str) -> Result<()> {
    let context = r2r::Context::create().map_err(rcl_error("cannot initialise rcl"))?;
    let mut ros = r2r::Node::create(context.clone(), default_node_name, "")
        .map_err(rcl_error("cannot create the ROS node"))?;
    let overrides: Vec<String> = {
        let params = ros.params.lock().unwrap_or_else(|p| p.into_inner());
        params
            .iter()
            .filter(|(name, _)| name.as_str() != "use_sim_time")
            .filter_map(|(name, p)| override_of(name, &p.value))
            .collect()
    };
    let config = Config::load(None, &overrides)?;
    let name = ros
        .fully_qualified_name()
        .map_err(rcl_error("cannot read the node name"))?;
    let node = Node::new(&name, config.clone())?;
    let camera = open_camera(&config)?;
    let image = match &camera {
        Some(_) if config.input.publish_image => Some(
            ros.create_publisher_untyped(
                "image",
                &rcl_type::<Image>(),
                QosProfile::sensor_data().keep_last(5),
            )
            .map_err(rcl_error("cannot publish image"))?,
        ),
        _ => None,
    };

    let results = QosProfile::default().keep_last(10);
    let outputs = RclOutputs {
        features: ros
            .create_publisher_untyped("features", &rcl_type::<msgs::Features>(), results.clone())
            .map_err(rcl_error("cannot publish features"))?,
        matches: ros
            .create_publisher_untyped("matches", &rcl_type::<msgs::Matches>(), results.clone())
            .map_err(rcl_error("cannot publish matches"))?,
        diagnostics: ros
            .create_publisher_untyped("/diagnostics", &rcl_type::<DiagnosticArray>(), results)
            .map_err(rcl_error("cannot publish diagnostics"))?,
        debug_image: ros
            .create_publisher_untyped(
                "debug_image",
                &rcl_type::<Image>(),
                QosProfile::sensor_data().keep_last(5),
            )
            .map_err(rcl_error("cannot publish debug_image"))?,
        image,
    };
    match camera {
        Some(camera) => capture(camera, node, outputs, &context, &mut ros),
        None => receive(&config, node, outputs, &context, &mut ros),
    }
}

/// Camera input: a processing thread captures too; ends at the end of the stream.
fn capture(
    camera: CameraInput,
    mut node: Node,
    outputs: RclOutputs,
    context: &r2r::Context,
    ros: &mut r2r::Node,
) -> Result<()> {
    let stopping = std::sync::Arc::new(AtomicBool::new(false));
    let worker_stopping = stopping.clone();
    let worker = std::thread::spawn(move || camera.run(&mut node, &outputs, &worker_stopping));
    while context.is_valid() && !worker.is_finished() {
        ros.spin_once(Duration::from_millis(20));
    }
    stopping.store(true, Ordering::Relaxed);
    worker
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Topic input: subscriptions feed a processing thread through the input queue.
fn receive(
    config: &Config,
    mut node: Node,
    outputs: RclOutputs,
    context: &r2r::Context,
    ros: &mut r2r::Node,
) -> Result<()> {
    let queue = std::sync::Arc::new(InputQueue::new());
    let mut pool = futures::executor::LocalPool::new();
    for (camera, topic) in input_topics(config.matching.mode) {
        let camera = *camera;
        let stream = ros
            .subscribe_raw(
                topic,
                &rcl_type::<Image>(),
                QosProfile::sensor_data().keep_last(5),
            )
            .map_err(rcl_error(format!("cannot subscribe to {topic}")))?;
        let queue = queue.clone();
        let consume = stream.for_each(move |bytes| {
            match msgs::decode::<Image>(&bytes) {
                Ok(image) => queue.put(Frame {
                    camera,
                    image,
                    received: Instant::now(),
                }),
                Err(err) => log::warn!("cannot decode an image message: {err}"),
            }
            futures::future::ready(())
        });
        futures::task::LocalSpawnExt::spawn_local(&pool.spawner(), consume).map_err(|source| {
            Error::Transport {
                what: format!("cannot start the {topic} reader"),
                source: Box::new(source),
            }
        })?;
    }
    let worker_queue = queue.clone();
    let worker = std::thread::spawn(move || node.run(&worker_queue, &outputs));
    while context.is_valid() {
        ros.spin_once(Duration::from_millis(20));
        pool.run_until_stalled();
    }
    queue.close();
    let _ = worker.join();
    Ok(())
}
