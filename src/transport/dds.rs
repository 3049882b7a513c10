//! The embedded transport: ROS 2 over RustDDS (`ros2-client`), no ROS install needed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use ros2_client::dds::rustdds::{DomainParticipant, DomainParticipantBuilder};
use ros2_client::dds::{Context, Node as RosNode, Publisher, Subscription};
use ros2_client::qos::{History, QosProfile, Reliability, WhenFull};
use ros2_client::service::{Server, ServiceMapping};
use ros2_client::{Gid, MessageTypeName, Name, NodeName, NodeOptions, ServiceTypeName};

use super::qos::{self, Qos};
use super::receive_buffer;
use super::sequence_gaps::SequenceGaps;
use super::{image_topic, RosArgs, Shutdown, Transport};
use crate::config::ImageTransport;
use crate::error::{ConfigError, Error, Result, TransportError};
use crate::msgs::rcl_interfaces::{self as rcl, ParameterEvent, Service};
use crate::msgs::{self, CompressedImage, DiagnosticArray, Image, RosMessage};
use crate::node::{Camera, Frame, InputQueue, LiveParameters, Outputs};

fn transport_error<E>(what: impl Into<String>) -> impl FnOnce(E) -> Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    let what = what.into();
    move |source| {
        Error::Transport(TransportError::Ros {
            what,
            source: Box::new(source),
        })
    }
}

/// `qos` as ros2-client takes it.
pub fn profile(qos: Qos) -> QosProfile {
    let reliability = match qos.reliability {
        qos::Reliability::Reliable => Reliability::Reliable {
            when_full: WhenFull::DEFAULT,
        },
        qos::Reliability::BestEffort => Reliability::BestEffort,
    };
    QosProfile::subscription_default()
        .reliability(reliability)
        .history(History::KeepLast { depth: qos.depth })
}

/// Camera streams in (the sensor-data profile).
pub fn sensor_qos() -> QosProfile {
    profile(qos::IMAGES_IN)
}

/// Results out.
pub fn result_qos() -> QosProfile {
    profile(qos::RESULTS)
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
        let buffer = receive_buffer::plan(receive_buffer::WANTED, receive_buffer::rmem_max());
        if let Some(warning) = &buffer.warning {
            log::warn!("{warning}");
        }
        let cannot_join = format!("cannot join DDS domain {domain_id}");
        let participant = DomainParticipantBuilder::new(domain_id)
            .socket_receive_buffer_size(buffer.request)
            .build()
            .map_err(transport_error(cannot_join.clone()))?;
        let context =
            Context::from_domain_participant(participant).map_err(transport_error(cannot_join))?;
        let node_name = NodeName::new(&args.namespace, &args.node_name).map_err(|err| {
            Error::Config(ConfigError::RosArgs(format!(
                "invalid node name {}: {err:?}",
                args.fully_qualified_name()
            )))
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
        let ros_name = Name::parse(&resolved).map_err(|err| {
            Error::Config(ConfigError::RosArgs(format!(
                "invalid topic name {resolved}: {err:?}"
            )))
        })?;
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

    /// A server of the service `S` on `name`.
    pub fn server<S: Service>(&mut self, name: &str) -> Result<Server<S::Request, S::Response>>
    where
        S::Request: ros2_client::Message,
        S::Response: ros2_client::Message,
    {
        let resolved = self.args.resolve(name);
        let ros_name = Name::parse(&resolved).map_err(|err| {
            Error::Config(ConfigError::RosArgs(format!(
                "invalid service name {resolved}: {err:?}"
            )))
        })?;
        self.node
            .create_server(
                ServiceMapping::Enhanced,
                &ros_name,
                &ServiceTypeName::new("rcl_interfaces", S::NAME),
                profile(qos::SERVICES),
                profile(qos::SERVICES),
            )
            .map_err(transport_error(format!("cannot serve {resolved}")))
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

/// The node's publishers.
pub struct DdsOutputs {
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

/// An image subscription of either transport's message type.
enum ImageSubscription {
    Raw(Subscription<Image>),
    Compressed(Subscription<CompressedImage>),
}

type ServerOf<S> = Server<<S as Service>::Request, <S as Service>::Response>;

/// The parameter services of the node, served from `parameters`.
struct ParameterServices {
    parameters: Arc<LiveParameters>,
    events: Publisher<ParameterEvent>,
    list: ServerOf<rcl::ListParameters>,
    get: ServerOf<rcl::GetParameters>,
    types: ServerOf<rcl::GetParameterTypes>,
    set: ServerOf<rcl::SetParameters>,
    set_atomically: ServerOf<rcl::SetParametersAtomically>,
    describe: ServerOf<rcl::DescribeParameters>,
}

impl ParameterServices {
    fn announce(&self, events: impl IntoIterator<Item = ParameterEvent>) {
        for event in events {
            if let Err(err) = publish(&self.events, event) {
                log::warn!("{}", err.one_line());
            }
        }
    }
}

/// Answers every request `server` receives with `answer`.
async fn answer_requests<Q, A>(server: &Server<Q, A>, answer: impl Fn(Q) -> A)
where
    Q: ros2_client::Message + Clone + 'static,
    A: ros2_client::Message + 'static,
{
    server
        .receive_request_stream()
        .for_each(|request| {
            let sent = match request {
                Ok((id, request)) => server
                    .send_response(id, answer(request))
                    .map_err(|err| format!("cannot answer a parameter request: {err:?}")),
                Err(err) => Err(format!("cannot read a parameter request: {err:?}")),
            };
            if let Err(err) = sent {
                log::warn!("{err}");
            }
            futures::future::ready(())
        })
        .await
}

/// The node over the embedded DDS stack.
pub struct DdsTransport {
    subscriptions: Vec<(Camera, ImageSubscription, Arc<InputQueue>)>,
    parameter_services: Option<ParameterServices>,
    // Dropped after the entities above: they deregister through its participant.
    endpoint: DdsEndpoint,
}

impl DdsTransport {
    /// Joins `domain_id` as the node `args` names.
    pub fn new(args: RosArgs, domain_id: u16) -> Result<Self> {
        Ok(Self {
            subscriptions: Vec::new(),
            parameter_services: None,
            endpoint: DdsEndpoint::new(args, domain_id)?,
        })
    }
}

/// Feeds every message of `subscription` into `queue`, counting undecodable ones and
/// the ones the stack skipped, until `shutdown` is requested.
async fn receive<M>(
    camera: Camera,
    subscription: &Subscription<M>,
    queue: &InputQueue,
    frame: fn(Camera, M) -> Frame,
    shutdown: &Shutdown,
) where
    M: RosMessage + 'static,
{
    let mut gaps = SequenceGaps::<Gid>::default();
    let mut messages = std::pin::pin!(subscription.async_stream());
    // Under a flood the stream is always ready and never yields to the executor: the
    // stop request is looked at after every message, not only when the stream waits.
    while let Some(received) = messages.next().await {
        match received {
            Ok((message, info)) => {
                let skipped = gaps.observe(&info.publisher_gid(), info.sequence_number());
                if skipped > 0 {
                    queue.lost_in_stack(skipped);
                }
                queue.put(frame(camera, message))
            }
            Err(err) => queue.unreadable(format!("cannot decode a {}: {err}", M::NAME)),
        }
        if shutdown.is_requested() {
            break;
        }
    }
}

impl Transport for DdsTransport {
    type Outputs = DdsOutputs;

    fn node_name(&self) -> String {
        self.endpoint.args().fully_qualified_name()
    }

    fn outputs(&mut self, republish: bool) -> Result<DdsOutputs> {
        let endpoint = &mut self.endpoint;
        let image = match republish {
            true => Some(endpoint.publisher("image", profile(qos::IMAGES_OUT))?),
            false => None,
        };
        Ok(DdsOutputs {
            features: endpoint.publisher("features", profile(qos::RESULTS))?,
            matches: endpoint.publisher("matches", profile(qos::RESULTS))?,
            diagnostics: endpoint.publisher("/diagnostics", profile(qos::RESULTS))?,
            debug_image: endpoint.publisher("debug_image", profile(qos::IMAGES_OUT))?,
            image,
            debug_image_dds_topic: format!("rt{}", endpoint.args().resolve("debug_image")),
            features_dds_topic: format!("rt{}", endpoint.args().resolve("features")),
            participant: endpoint.participant(),
            debug_wanted: Mutex::new(None),
            features_reader_since: Mutex::new(None),
        })
    }

    fn subscribe(
        &mut self,
        topics: &[(Camera, &str)],
        transport: ImageTransport,
        queue: Arc<InputQueue>,
    ) -> Result<()> {
        for (camera, name) in topics {
            let topic = image_topic(name, transport);
            let subscription = match transport {
                ImageTransport::Raw => {
                    ImageSubscription::Raw(self.endpoint.subscription(&topic, sensor_qos())?)
                }
                ImageTransport::Compressed => {
                    ImageSubscription::Compressed(self.endpoint.subscription(&topic, sensor_qos())?)
                }
            };
            log::info!("subscribed to {}", self.endpoint.args().resolve(&topic));
            self.subscriptions
                .push((*camera, subscription, queue.clone()));
        }
        Ok(())
    }

    fn serve_parameters(&mut self, parameters: Arc<LiveParameters>) -> Result<()> {
        let endpoint = &mut self.endpoint;
        self.parameter_services = Some(ParameterServices {
            parameters,
            events: endpoint.publisher("/parameter_events", profile(qos::PARAMETER_EVENTS))?,
            list: endpoint.server::<rcl::ListParameters>("~/list_parameters")?,
            get: endpoint.server::<rcl::GetParameters>("~/get_parameters")?,
            types: endpoint.server::<rcl::GetParameterTypes>("~/get_parameter_types")?,
            set: endpoint.server::<rcl::SetParameters>("~/set_parameters")?,
            set_atomically: endpoint
                .server::<rcl::SetParametersAtomically>("~/set_parameters_atomically")?,
            describe: endpoint.server::<rcl::DescribeParameters>("~/describe_parameters")?,
        });
        Ok(())
    }

    fn spin(&mut self, shutdown: &Shutdown) -> Result<()> {
        let mut tasks: Vec<futures::future::LocalBoxFuture<'_, ()>> = self
            .subscriptions
            .iter()
            .map(|(camera, subscription, queue)| match subscription {
                ImageSubscription::Raw(raw) => {
                    receive(*camera, raw, queue, Frame::from_image, shutdown).boxed_local()
                }
                ImageSubscription::Compressed(compressed) => {
                    receive(*camera, compressed, queue, Frame::from_compressed, shutdown)
                        .boxed_local()
                }
            })
            .collect();
        if let Some(services) = &self.parameter_services {
            let parameters = &services.parameters;
            tasks.extend([
                answer_requests(&services.list, |q| parameters.list(&q)).boxed_local(),
                answer_requests(&services.get, |q| parameters.get(&q)).boxed_local(),
                answer_requests(&services.types, |q| parameters.types(&q)).boxed_local(),
                answer_requests(&services.describe, |q| parameters.describe(&q)).boxed_local(),
                answer_requests(&services.set, |q| {
                    let (answer, events) = parameters.set(&q);
                    services.announce(events);
                    answer
                })
                .boxed_local(),
                answer_requests(&services.set_atomically, |q| {
                    let (answer, event) = parameters.set_atomically(&q);
                    services.announce(event);
                    answer
                })
                .boxed_local(),
            ]);
        }
        // Subscriptions and services never end by themselves; with none, only the
        // shutdown ends the wait.
        let receiving = futures::future::join_all(tasks).then(|_| futures::future::pending::<()>());
        futures::executor::block_on(futures::future::select(
            Box::pin(receiving),
            shutdown.requested(),
        ));
        Ok(())
    }
}
