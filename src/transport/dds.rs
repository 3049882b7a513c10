//! The embedded transport: ROS 2 over RustDDS (`ros2-client`), no ROS install needed.

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
use crate::node::{input_topics, Frame, InputQueue, Node, Outputs, Throttle};

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

/// The node's publishers.
struct DdsOutputs {
    features: Publisher<msgs::Features>,
    matches: Publisher<msgs::Matches>,
    diagnostics: Publisher<DiagnosticArray>,
    debug_image: Publisher<Image>,
    /// The DDS name of `debug_image`, to count its discovered readers.
    debug_image_dds_topic: String,
    participant: DomainParticipant,
    debug_wanted: Mutex<Option<(Instant, bool)>>,
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
        let wanted =
            self.participant.discovered_readers().iter().any(|reader| {
                reader.subscription_topic_data.topic_name == self.debug_image_dds_topic
            });
        *cached = Some((Instant::now(), wanted));
        wanted
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

/// Runs the node over DDS until SIGINT or SIGTERM; returns early only on a start-up error.
pub fn run(args: RosArgs, domain_id: u16, config: Config) -> Result<()> {
    let stop = termination_signal()?;
    let mut node = Node::new(&args.fully_qualified_name(), config.clone())?;
    let mut endpoint = DdsEndpoint::new(args, domain_id)?;
    let outputs = DdsOutputs {
        features: endpoint.publisher("features", result_qos())?,
        matches: endpoint.publisher("matches", result_qos())?,
        diagnostics: endpoint.publisher("/diagnostics", result_qos())?,
        debug_image: endpoint.publisher("debug_image", result_qos())?,
        debug_image_dds_topic: format!("rt{}", endpoint.args().resolve("debug_image")),
        participant: endpoint.participant(),
        debug_wanted: Mutex::new(None),
    };
    let mut subscriptions = Vec::new();
    for (camera, name) in input_topics(config.matching.mode) {
        let subscription = endpoint.subscription::<Image>(name, sensor_qos())?;
        log::info!("subscribed to {}", endpoint.args().resolve(name));
        subscriptions.push((*camera, subscription));
    }
    let queue = InputQueue::new();
    std::thread::scope(|scope| {
        scope.spawn(|| node.run(&queue, &outputs));
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
    // The endpoint drops here, after the runtime: the participant says goodbye to its peers.
    Ok(())
}
