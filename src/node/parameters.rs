//! The node's parameters as the ROS parameter services serve them (`ros2 param`,
//! rclpy's and rclcpp's parameter clients): every transport forwards the requests
//! here. A change is validated exactly as at start-up and applied from the next frame.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::config::{spec_of, Change, NodeConfig, Range, Value};
use crate::msgs::rcl_interfaces::{
    parameter_type, DescribeParametersRequest, DescribeParametersResponse, FloatingPointRange,
    GetParameterTypesRequest, GetParameterTypesResponse, GetParametersRequest,
    GetParametersResponse, IntegerRange, ListParametersRequest, ListParametersResponse,
    ListParametersResult, Parameter, ParameterDescriptor, ParameterEvent, ParameterValue,
    SetParametersAtomicallyRequest, SetParametersAtomicallyResponse, SetParametersRequest,
    SetParametersResponse, SetParametersResult,
};
use crate::msgs::Time;

/// The running node's configuration, changed by parameter requests.
pub struct LiveParameters {
    node_name: String,
    config: Mutex<NodeConfig>,
    /// Counts accepted changes, so the processing thread sees one cheaply.
    generation: AtomicU64,
}

fn type_of(value: &Value) -> u8 {
    match value {
        Value::Bool(_) => parameter_type::BOOL,
        Value::Integer(_) => parameter_type::INTEGER,
        Value::Double(_) => parameter_type::DOUBLE,
        Value::String(_) => parameter_type::STRING,
    }
}

fn message_of(value: Option<&Value>) -> ParameterValue {
    let mut message = ParameterValue::default();
    match value {
        None => {}
        Some(Value::Bool(b)) => message.bool_value = *b,
        Some(Value::Integer(i)) => message.integer_value = *i,
        Some(Value::Double(d)) => message.double_value = *d,
        Some(Value::String(s)) => message.string_value = s.clone(),
    }
    message.r#type = value.map_or(parameter_type::NOT_SET, type_of);
    message
}

fn value_of(message: &ParameterValue) -> Result<Value, String> {
    Ok(match message.r#type {
        parameter_type::BOOL => Value::Bool(message.bool_value),
        parameter_type::INTEGER => Value::Integer(message.integer_value),
        parameter_type::DOUBLE => Value::Double(message.double_value),
        parameter_type::STRING => Value::String(message.string_value.clone()),
        parameter_type::NOT_SET => return Err("parameters cannot be undeclared".into()),
        other => return Err(format!("parameter type {other} is not used by this node")),
    })
}

fn success() -> SetParametersResult {
    SetParametersResult {
        successful: true,
        reason: String::new(),
    }
}

fn failure(reason: String) -> SetParametersResult {
    SetParametersResult {
        successful: false,
        reason,
    }
}

/// Whether `name` is listed for `prefixes` and `depth`, as rclcpp lists: no prefix
/// means every name up to `depth` dots deep (0: any depth); a prefix takes its own
/// name and names under it.
fn listed(name: &str, prefixes: &[String], depth: u64) -> bool {
    let within = |relative_dots: usize| depth == 0 || (relative_dots as u64) < depth;
    if prefixes.is_empty() {
        return within(name.matches('.').count());
    }
    prefixes.iter().any(|prefix| {
        name == prefix
            || name
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|rest| within(rest.matches('.').count()))
    })
}

impl LiveParameters {
    pub fn new(node_name: &str, config: NodeConfig) -> Self {
        Self {
            node_name: node_name.to_string(),
            config: Mutex::new(config),
            generation: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, NodeConfig> {
        self.config
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The configuration now.
    pub fn config(&self) -> NodeConfig {
        self.lock().clone()
    }

    /// The configuration if it changed since `seen`, which is updated.
    pub fn changed_since(&self, seen: &mut u64) -> Option<NodeConfig> {
        let now = self.generation.load(Ordering::Acquire);
        if now == *seen {
            return None;
        }
        *seen = now;
        Some(self.config())
    }

    pub fn list(&self, request: &ListParametersRequest) -> ListParametersResponse {
        let names: Vec<String> = self
            .lock()
            .parameters()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| listed(name, &request.prefixes, request.depth))
            .collect();
        let mut prefixes: Vec<String> = names
            .iter()
            .filter_map(|name| name.rsplit_once('.').map(|(prefix, _)| prefix.to_string()))
            .collect();
        prefixes.dedup();
        ListParametersResponse {
            result: ListParametersResult { names, prefixes },
        }
    }

    pub fn get(&self, request: &GetParametersRequest) -> GetParametersResponse {
        let config = self.lock();
        GetParametersResponse {
            values: request
                .names
                .iter()
                .map(|name| message_of(config.parameter(name).as_ref()))
                .collect(),
        }
    }

    pub fn types(&self, request: &GetParameterTypesRequest) -> GetParameterTypesResponse {
        let config = self.lock();
        GetParameterTypesResponse {
            types: request
                .names
                .iter()
                .map(|name| {
                    config
                        .parameter(name)
                        .map_or(parameter_type::NOT_SET, |v| type_of(&v))
                })
                .collect(),
        }
    }

    pub fn describe(&self, request: &DescribeParametersRequest) -> DescribeParametersResponse {
        let config = self.lock();
        let descriptors = request
            .names
            .iter()
            .map(|name| {
                let (Some(spec), Some(value)) = (spec_of(name), config.parameter(name)) else {
                    return ParameterDescriptor {
                        name: name.clone(),
                        ..ParameterDescriptor::default()
                    };
                };
                let restart = spec.change == Change::Restart;
                let mut constraints = spec.constraints.to_string();
                if restart {
                    if !constraints.is_empty() {
                        constraints.push_str("; ");
                    }
                    constraints.push_str("read at start-up only: restart the node to change it");
                }
                let mut descriptor = ParameterDescriptor {
                    name: name.clone(),
                    r#type: type_of(&value),
                    description: spec.description.to_string(),
                    additional_constraints: constraints,
                    read_only: restart,
                    ..ParameterDescriptor::default()
                };
                match spec.range {
                    Some(Range::Integer { from, to }) => {
                        descriptor.integer_range.push(IntegerRange {
                            from_value: from,
                            to_value: to,
                            step: 0,
                        })
                    }
                    Some(Range::Float { from, to, .. }) => {
                        descriptor.floating_point_range.push(FloatingPointRange {
                            from_value: from,
                            to_value: to,
                            step: 0.0,
                        })
                    }
                    None => {}
                }
                descriptor
            })
            .collect();
        DescribeParametersResponse { descriptors }
    }

    /// Applies `parameters` together or not at all; the new configuration is in
    /// place for the next frame when this returns.
    fn apply(&self, parameters: &[Parameter]) -> Result<ParameterEvent, String> {
        let changes = parameters
            .iter()
            .map(|p| value_of(&p.value).map(|value| (p.name.clone(), value)))
            .collect::<Result<Vec<_>, String>>()?;
        let mut config = self.lock();
        let changed = config
            .with_changes(&changes)
            .map_err(|err| err.one_line())?;
        *config = changed;
        self.generation.fetch_add(1, Ordering::Release);
        Ok(ParameterEvent {
            stamp: Time::now(),
            node: self.node_name.clone(),
            changed_parameters: parameters.to_vec(),
            ..ParameterEvent::default()
        })
    }

    /// Sets each parameter on its own, as `set_parameters` does; returns the
    /// response and the events of the accepted ones.
    pub fn set(
        &self,
        request: &SetParametersRequest,
    ) -> (SetParametersResponse, Vec<ParameterEvent>) {
        let mut events = Vec::new();
        let results = request
            .parameters
            .iter()
            .map(
                |parameter| match self.apply(std::slice::from_ref(parameter)) {
                    Ok(event) => {
                        events.push(event);
                        success()
                    }
                    Err(reason) => failure(reason),
                },
            )
            .collect();
        (SetParametersResponse { results }, events)
    }

    /// Sets all parameters or none, as `set_parameters_atomically` does.
    pub fn set_atomically(
        &self,
        request: &SetParametersAtomicallyRequest,
    ) -> (SetParametersAtomicallyResponse, Option<ParameterEvent>) {
        match self.apply(&request.parameters) {
            Ok(event) => (
                SetParametersAtomicallyResponse { result: success() },
                Some(event),
            ),
            Err(reason) => (
                SetParametersAtomicallyResponse {
                    result: failure(reason),
                },
                None,
            ),
        }
    }
}
