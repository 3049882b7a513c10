//! The rcl transport (feature `r2r`): the same runtime inside a ROS 2 install.
//! rcl itself handles `--ros-args` (names, remapping, parameter files); images
//! arrive and results leave as raw CDR, coded by [`crate::msgs`] as over DDS.

use std::sync::Arc;
use std::time::Duration;

use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use futures::StreamExt;
use r2r::{
    ParameterValue, PublisherUntyped, QosProfile, WrappedServiceTypeSupport, WrappedTypesupport,
};

use super::qos::{self, Qos};
use super::{image_topic, Shutdown, Transport};
use crate::config::{ImageTransport, NodeConfig};
use crate::error::{Error, Result, TransportError};
use crate::msgs::rcl_interfaces::{self as rcl, ParameterEvent, Service};
use crate::msgs::{self, CompressedImage, DiagnosticArray, Image, RosMessage};
use crate::node::{Camera, Frame, InputQueue, LiveParameters, Outputs};

/// How long one round of the rcl wait set blocks: the shutdown flag is seen this fast.
const SPIN_PERIOD: Duration = Duration::from_millis(20);

fn rcl_error(what: impl Into<String>) -> impl FnOnce(r2r::Error) -> Error {
    let what = what.into();
    move |source| {
        Error::Transport(TransportError::Ros {
            what,
            source: Box::new(source),
        })
    }
}

/// `package/msg/Name`, the form rcl type support is looked up by.
fn rcl_type<M: RosMessage>() -> String {
    format!("{}/msg/{}", M::PACKAGE, M::NAME)
}

/// `qos` as r2r takes it.
fn profile(qos: Qos) -> QosProfile {
    let profile = QosProfile::default().keep_last(qos.depth);
    match qos.reliability {
        qos::Reliability::Reliable => profile.reliable(),
        qos::Reliability::BestEffort => profile.best_effort(),
    }
}

/// A parameter as the `name=value` override [`NodeConfig::load`] takes.
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

pub struct RclOutputs {
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

/// The node under rcl.
pub struct RclTransport {
    context: r2r::Context,
    node: r2r::Node,
    /// Runs the subscriptions' consumers between rounds of the wait set.
    pool: LocalPool,
}

impl RclTransport {
    /// Initialises rcl from the process arguments and creates the node; returns it
    /// with the configuration its parameters (`--params-file`, `-p`) give.
    pub fn create(default_node_name: &str) -> Result<(Self, NodeConfig)> {
        let context = r2r::Context::create().map_err(rcl_error("cannot initialise rcl"))?;
        let node = r2r::Node::create(context.clone(), default_node_name, "")
            .map_err(rcl_error("cannot create the ROS node"))?;
        let overrides: Vec<String> = {
            let params = node.params.lock().unwrap_or_else(|p| p.into_inner());
            params
                .iter()
                .filter(|(name, _)| name.as_str() != "use_sim_time")
                .filter_map(|(name, p)| override_of(name, &p.value))
                .collect()
        };
        let config = NodeConfig::load(None, &overrides)?;
        let transport = Self {
            context,
            node,
            pool: LocalPool::new(),
        };
        Ok((transport, config))
    }

    fn publisher<M: RosMessage>(&mut self, topic: &str, qos: Qos) -> Result<PublisherUntyped> {
        self.node
            .create_publisher_untyped(topic, &rcl_type::<M>(), profile(qos))
            .map_err(rcl_error(format!("cannot publish {topic}")))
    }

    fn spawn(&self, task: impl futures::Future<Output = ()> + 'static, what: &str) -> Result<()> {
        self.pool.spawner().spawn_local(task).map_err(|source| {
            Error::Transport(TransportError::Ros {
                what: format!("cannot start {what}"),
                source: Box::new(source),
            })
        })
    }

    /// Serves `service` (r2r's type `R`, ours `S`) as `answer` says. r2r's messages
    /// and ours meet as CDR, the form both serialise to.
    fn serve<R, S>(
        &mut self,
        service: &str,
        answer: impl Fn(S::Request) -> S::Response + 'static,
    ) -> Result<()>
    where
        R: WrappedServiceTypeSupport + 'static,
        S: Service,
    {
        let name = format!(
            "{}/{service}",
            self.node.name().map_err(rcl_error("no node name"))?
        );
        let requests = self
            .node
            .create_service::<R>(&name, profile(qos::SERVICES))
            .map_err(rcl_error(format!("cannot serve {name}")))?;
        let serving = requests.for_each(move |request| {
            let response = request
                .message
                .to_serialized_bytes()
                .map_err(|err| err.to_string())
                .and_then(|bytes| msgs::decode::<S::Request>(&bytes).map_err(|e| e.to_string()))
                .and_then(|request| msgs::encode(&answer(request)).map_err(|e| e.to_string()))
                .and_then(|bytes| {
                    R::Response::from_serialized_bytes(&bytes).map_err(|e| e.to_string())
                });
            let sent =
                response.and_then(|response| request.respond(response).map_err(|e| e.to_string()));
            if let Err(err) = sent {
                log::warn!("cannot answer a parameter request: {err}");
            }
            futures::future::ready(())
        });
        self.spawn(serving, &name)
    }

    /// Feeds every message on `topic` into `queue` as `frame` makes it, counting
    /// undecodable ones.
    fn receive<M: RosMessage>(
        &mut self,
        camera: Camera,
        topic: &str,
        queue: Arc<InputQueue>,
        frame: fn(Camera, M) -> Frame,
    ) -> Result<()> {
        let stream = self
            .node
            .subscribe_raw(topic, &rcl_type::<M>(), profile(qos::IMAGES_IN))
            .map_err(rcl_error(format!("cannot subscribe to {topic}")))?;
        let consume = stream.for_each(move |bytes| {
            match msgs::decode::<M>(&bytes) {
                Ok(message) => queue.put(frame(camera, message)),
                Err(err) => queue.unreadable(err.to_string()),
            }
            futures::future::ready(())
        });
        self.spawn(consume, &format!("the {topic} reader"))
    }
}

impl Transport for RclTransport {
    type Outputs = RclOutputs;

    fn node_name(&self) -> String {
        self.node
            .fully_qualified_name()
            .unwrap_or_else(|_| "orbsift".into())
    }

    fn outputs(&mut self, republish: bool) -> Result<RclOutputs> {
        let image = match republish {
            true => Some(self.publisher::<Image>("image", qos::IMAGES_OUT)?),
            false => None,
        };
        Ok(RclOutputs {
            features: self.publisher::<msgs::Features>("features", qos::RESULTS)?,
            matches: self.publisher::<msgs::Matches>("matches", qos::RESULTS)?,
            diagnostics: self.publisher::<DiagnosticArray>("/diagnostics", qos::RESULTS)?,
            debug_image: self.publisher::<Image>("debug_image", qos::IMAGES_OUT)?,
            image,
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
            match transport {
                ImageTransport::Raw => {
                    self.receive::<Image>(*camera, &topic, queue.clone(), Frame::from_image)?
                }
                ImageTransport::Compressed => self.receive::<CompressedImage>(
                    *camera,
                    &topic,
                    queue.clone(),
                    Frame::from_compressed,
                )?,
            }
            log::info!("subscribed to {topic}");
        }
        Ok(())
    }

    fn serve_parameters(&mut self, parameters: Arc<LiveParameters>) -> Result<()> {
        use r2r::rcl_interfaces::srv;
        let events =
            Arc::new(self.publisher::<ParameterEvent>("/parameter_events", qos::PARAMETER_EVENTS)?);
        let announce = move |event: ParameterEvent| {
            if let Err(err) = publish(&events, &event) {
                log::warn!("{}", err.one_line());
            }
        };
        let p = parameters.clone();
        self.serve::<srv::ListParameters::Service, rcl::ListParameters>(
            "list_parameters",
            move |q| p.list(&q),
        )?;
        let p = parameters.clone();
        self.serve::<srv::GetParameters::Service, rcl::GetParameters>(
            "get_parameters",
            move |q| p.get(&q),
        )?;
        let p = parameters.clone();
        self.serve::<srv::GetParameterTypes::Service, rcl::GetParameterTypes>(
            "get_parameter_types",
            move |q| p.types(&q),
        )?;
        let p = parameters.clone();
        self.serve::<srv::DescribeParameters::Service, rcl::DescribeParameters>(
            "describe_parameters",
            move |q| p.describe(&q),
        )?;
        let (p, tell) = (parameters.clone(), announce.clone());
        self.serve::<srv::SetParameters::Service, rcl::SetParameters>(
            "set_parameters",
            move |q| {
                let (answer, events) = p.set(&q);
                events.into_iter().for_each(&tell);
                answer
            },
        )?;
        self.serve::<srv::SetParametersAtomically::Service, rcl::SetParametersAtomically>(
            "set_parameters_atomically",
            move |q| {
                let (answer, event) = parameters.set_atomically(&q);
                event.into_iter().for_each(&announce);
                answer
            },
        )
    }

    fn spin(&mut self, shutdown: &Shutdown) -> Result<()> {
        while !shutdown.is_requested() && self.context.is_valid() {
            self.node.spin_once(SPIN_PERIOD);
            self.pool.run_until_stalled();
        }
        Ok(())
    }
}
