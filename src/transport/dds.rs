//! The embedded transport: ROS 2 over RustDDS (`ros2-client`), no ROS install needed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use ros2_client::dds::rustdds::DomainParticipant;
use ros2_client::dds::{Context, ContextOptions, Node as RosNode, Publisher, Subscription};
use ros2_client::qos::{History, QosProfile};
use ros2_client::{MessageTypeName, Name, NodeName, NodeOptions};

use super::RosArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::msgs::{self, DiagnosticArray, Image, RosMessage};
use crate::node::{
    input_topics, open_camera, CameraInput, Frame, InputQueue, Node, Outputs, Throttle,
};

fn transport_error<E>(what: impl Into<String>) -> impl FnOnce(E) -> Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    let what = what.into();
    move |source| Error::Transport {
        what,
        source: Box::new(source),
    }
}

/// Camera streams: best effort so both reliable and best-effort publishers match;
/// a short history because only the latest frame matters.
pub fn sensor_qos() -> QosProfile {
    QosProfile::subscription_default().history(History::KeepLast { depth: 5 })
}

/// Results: reliable, a few messages of history.
pub fn result_qos() -> QosProfile {
    QosProfile::publisher_default().history(History::KeepLast { depth: 10 })
}

/// A ROS 2 node on the DDS domain: creates typed publishers and subscriptions
/// on names resolved as `args` says.
pub struct DdsEndpoint {
    args: RosArgs,
    // Dropped after the node: the participant outlives its entities.
    node: RosNode,
    context: Context,
}

impl DdsEndpoint {
    /// Joins `domain_id` as the node `args` names.
    pub fn new(args: RosArgs, domain_id: u16) -> Result<Self> {
        let context = Context::with_options(ContextOptions::new().domain_id(domain_id)).map_err(
            transport_error(format!("cannot join DDS domain {domain_id}")),
        )?;
        let node_name = NodeName::new(&args.namespace, &args.node_name).map_err(|err| {
            Error::RosArgs(format!(
                "invalid node name {}: {err:?}",
                args.fully_qualified_name()
            ))
        })?;
        let options = NodeOptions::new()
            .enable_rosout(false)
            .start_parameter_services(false);
        let node = context
            .new_node(node_name, options)
            .map_err(transport_error("cannot create the ROS node"))?;
        Ok(Self {
            args,
            node,
            context,
        })
    }

    pub fn args(&self) -> &RosArgs {
        &self.args
    }

    fn participant(&self) -> DomainParticipant {
        self.context.domain_participant()
    }

    fn topic<M: RosMessage>(
        &mut self,
        name: &str,
        qos: &QosProfile,
    ) -> Result<ros2_client::dds::rustdds::Topic> {
        let resolved = self.args.resolve(name);
        let ros_name = Name::parse(&resolved)
            .map_err(|err| Error::RosArgs(format!("invalid topic name {resolved}: {err:?}")))?;
        self.node
            .create_topic(&ros_name, MessageTypeName::new(M::PACKAGE, M::NAME), qos)
            .map_err(transport_error(format!("cannot create topic {resolved}")))
    }

    /// A publisher of `M` on `name` (relative names resolve in the namespace).
    pub fn publisher<M: RosMessage>(
        &mut self,
        name: &str,
        qos: QosProfile,
    ) -> Result<Publisher<M>> {
        let topic = self.topic::<M>(name, &qos)?;
        self.node
            .create_publisher(&topic, Some(qos))
            .map_err(transport_error(format!("cannot publish {name}")))
    }

    /// A subscription to `M` on `name`.
    pub fn subscription<M: RosMessage>(
        &mut self,
        name: &str,
        qos: QosProfile,
    ) -> Result<Subscription<M>> {
        let topic = self.topic::<M>(name, &qos)?;
        self.node
            .create_subscription(&topic, Some(qos))
            .map_err(transport_error(format!("cannot subscribe to {name}")))
    }
}

/// How long a "does anyone want debug images" answer is reused.
const SUBSCRIBER_CHECK_PERIOD: Duration = Duration::from_millis(500);

/// Discovery finds a reader a moment before the writer is matched with it: a reader
/// counts as subscribed once it has been known this long.
const MATCH_SETTLE: Duration = Duration::from_millis(500);

/// After the end of a file the writers stay this long: a reader that lost a sample of the
/// last frames gets it repaired on the writer's next heartbeat (every 100 ms while a
/// reader is behind), which an exiting node would no longer send.
const END_OF_STREAM_LINGER: Duration = Duration::from_secs(1);

/// The node's publishers.
struct DdsOutputs {
    features: Publisher<msgs::Features>,
    matches: Publisher<msgs::Matches>,
    diagnostics: Publisher<DiagnosticArray>,
    debug_image: Publisher<Image>,
    /// `image`, only for camera input with `input.publish_image`.
    image: Option<Publisher<Image>>,
    /// The DDS names of `debug_image` and `features`, to look for their readers.
    debug_image_dds_topic: String,
    features_dds_topic: String,
    participant: DomainParticipant,
    debug_wanted: Mutex<Option<(Instant, bool)>>,
    features_reader_since: Mutex<Option<Instant>>,
}

impl DdsOutputs {
    fn has_reader(&self, dds_topic: &str) -> bool {
        self.participant
            .discovered_readers()
            .iter()
            .any(|reader| reader.subscription_topic_data.topic_name == dds_topic)
    }
}

fn publish<M>(publisher: &Publisher<M>, message: M) -> Result<()>
where
    M: RosMessage + std::fmt::Debug + Sync,
{
    publisher.publish(message).map_err(transport_error(format!(
        "cannot publish a {} message",
        M::NAME
    )))
}

impl Outputs for DdsOutputs {
    fn publish_features(&self, message: msgs::Features) -> Result<()> {
        publish(&self.features, message)
    }
    fn publish_matches(&self, message: msgs::Matches) -> Result<()> {
        publish(&self.matches, message)
    }
    fn publish_diagnostics(&self, message: DiagnosticArray) -> Result<()> {
        publish(&self.diagnostics, message)
    }
    fn publish_debug_image(&self, message: Image) -> Result<()> {
        publish(&self.debug_image, message)
    }
    fn wants_debug_image(&self) -> bool {
        let mut cached = self.debug_wanted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((checked, wanted)) = *cached {
            if checked.elapsed() < SUBSCRIBER_CHECK_PERIOD {
                return wanted;
            }
        }
        let wanted = self.has_reader(&self.debug_image_dds_topic);
        *cached = Some((Instant::now(), wanted));
        wanted
    }
    fn publish_image(&self, message: Image) -> Result<()> {
        match &self.image {
            Some(image) => publish(image, message),
            None => Ok(()),
        }
    }
    fn features_subscribed(&self) -> bool {
        let mut since = self
            .features_reader_since
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !self.has_reader(&self.features_dds_topic) {
            *since = None;
            return false;
        }
        since.get_or_insert_with(Instant::now).elapsed() >= MATCH_SETTLE
    }
}

/// Resolves on SIGINT or SIGTERM (what `ros2 launch` sends on shutdown).
fn termination_signal() -> Result<futures::channel::oneshot::Receiver<()>> {
    let (sender, receiver) = futures::channel::oneshot::channel();
    let sender = Mutex::new(Some(sender));
    ctrlc::set_handler(move || {
        if let Some(sender) = sender.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = sender.send(());
        }
    })
    .map_err(transport_error("cannot install the SIGINT/SIGTERM handler"))?;
    Ok(receiver)
}

/// Runs the node over DDS until SIGINT or SIGTERM, or until the end of a video file
/// (camera input without `input.loop`); returns early only on a start-up error.
pub fn run(args: RosArgs, domain_id: u16, config: Config) -> Result<()> {
    let stop = termination_signal()?;
    let mut node = Node::new(&args.fully_qualified_name(), config.clone())?;
    let camera = open_camera(&config)?;
    let mut endpoint = DdsEndpoint::new(args, domain_id)?;
    let image = match &camera {
        Some(_) if config.input.publish_image => Some(endpoint.publisher("image", result_qos())?),
        _ => None,
    };
    let outputs = DdsOutputs {
        features: endpoint.publisher("features", result_qos())?,
        matches: endpoint.publisher("matches", result_qos())?,
        diagnostics: endpoint.publisher("/diagnostics", result_qos())?,
        debug_image: endpoint.publisher("debug_image", result_qos())?,
        image,
        debug_image_dds_topic: format!("rt{}", endpoint.args().resolve("debug_image")),
        features_dds_topic: format!("rt{}", endpoint.args().resolve("features")),
        participant: endpoint.participant(),
        debug_wanted: Mutex::new(None),
        features_reader_since: Mutex::new(None),
    };
    match camera {
        Some(camera) => capture(camera, &mut node, &outputs, stop),
        None => receive(&mut endpoint, &config, &mut node, &outputs, stop),
    }
    // The endpoint drops here, after the runtime: the participant says goodbye to its peers.
}

/// Camera input: the processing thread captures too; ends at the end of the stream.
fn capture(
    camera: CameraInput,
    node: &mut Node,
    outputs: &DdsOutputs,
    stop: futures::channel::oneshot::Receiver<()>,
) -> Result<()> {
    let stopping = AtomicBool::new(false);
    let (finished, done) = futures::channel::oneshot::channel::<()>();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let result = camera.run(node, outputs, &stopping);
            let _ = finished.send(());
            result
        });
        let ended = futures::executor::block_on(futures::future::select(stop, done));
        let end_of_stream = matches!(ended, futures::future::Either::Right(_));
        stopping.store(true, Ordering::Relaxed);
        log::info!("shutting down");
        let result = worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        if end_of_stream && result.is_ok() {
            std::thread::sleep(END_OF_STREAM_LINGER);
        }
        result
    })
}

/// Topic input: subscriptions feed the processing thread through the input queue.
fn receive(
    endpoint: &mut DdsEndpoint,
    config: &Config,
    node: &mut Node,
    outputs: &DdsOutputs,
    stop: futures::channel::oneshot::Receiver<()>,
) -> Result<()> {
    let mut subscriptions = Vec::new();
    for (camera, name) in input_topics(config.matching.mode) {
        let subscription = endpoint.subscription::<Image>(name, sensor_qos())?;
        log::info!("subscribed to {}", endpoint.args().resolve(name));
        subscriptions.push((*camera, subscription));
    }
    let queue = InputQueue::new();
    std::thread::scope(|scope| {
        scope.spawn(|| node.run(&queue, outputs));
        let receivers = subscriptions.iter().map(|(camera, subscription)| {
            let queue = &queue;
            let mut unreadable = Throttle::new(Duration::from_secs(2));
            subscription.async_stream().for_each(move |received| {
                match received {
                    Ok((image, _info)) => queue.put(Frame {
                        camera: *camera,
                        image,
                        received: Instant::now(),
                    }),
                    Err(err) => unreadable.warn(&format!("cannot read an image message: {err}")),
                }
                futures::future::ready(())
            })
        });
        let receiving = futures::future::join_all(receivers);
        futures::executor::block_on(futures::future::select(Box::pin(receiving), stop));
        log::info!("shutting down");
        queue.close();
    });
    Ok(())
}
