//! `rcl_interfaces`: the parameter messages and services that `ros2 param`, rclpy and
//! rclcpp speak, field for field. The parameter services' requests and responses
//! are the `Request` / `Response` structs of their `.srv` files.

use serde::{Deserialize, Serialize};

use super::{RosMessage, Time};

/// `rcl_interfaces/ParameterType` constants.
pub mod parameter_type {
    pub const NOT_SET: u8 = 0;
    pub const BOOL: u8 = 1;
    pub const INTEGER: u8 = 2;
    pub const DOUBLE: u8 = 3;
    pub const STRING: u8 = 4;
}

/// `rcl_interfaces/ParameterValue`: `type` says which field holds the value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ParameterValue {
    pub r#type: u8,
    pub bool_value: bool,
    pub integer_value: i64,
    pub double_value: f64,
    pub string_value: String,
    pub byte_array_value: Vec<u8>,
    pub bool_array_value: Vec<bool>,
    pub integer_array_value: Vec<i64>,
    pub double_array_value: Vec<f64>,
    pub string_array_value: Vec<String>,
}

/// `rcl_interfaces/Parameter`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    pub name: String,
    pub value: ParameterValue,
}

/// `rcl_interfaces/FloatingPointRange`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FloatingPointRange {
    pub from_value: f64,
    pub to_value: f64,
    /// 0: any value in the range.
    pub step: f64,
}

/// `rcl_interfaces/IntegerRange`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntegerRange {
    pub from_value: i64,
    pub to_value: i64,
    /// 0: any value in the range.
    pub step: u64,
}

/// `rcl_interfaces/ParameterDescriptor`; each range holds at most one element.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ParameterDescriptor {
    pub name: String,
    pub r#type: u8,
    pub description: String,
    pub additional_constraints: String,
    pub read_only: bool,
    pub dynamic_typing: bool,
    pub floating_point_range: Vec<FloatingPointRange>,
    pub integer_range: Vec<IntegerRange>,
}

/// `rcl_interfaces/SetParametersResult`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetParametersResult {
    pub successful: bool,
    pub reason: String,
}

/// `rcl_interfaces/ListParametersResult`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListParametersResult {
    pub names: Vec<String>,
    pub prefixes: Vec<String>,
}

/// `rcl_interfaces/ParameterEvent`, published on `/parameter_events`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ParameterEvent {
    pub stamp: Time,
    pub node: String,
    pub new_parameters: Vec<Parameter>,
    pub changed_parameters: Vec<Parameter>,
    pub deleted_parameters: Vec<Parameter>,
}

ros_message!("rcl_interfaces", ParameterEvent);

/// A `.srv` of `rcl_interfaces`: its name and its two messages.
pub trait Service {
    const NAME: &'static str;
    type Request: RosMessage + Clone;
    type Response: RosMessage;
}

macro_rules! service {
    ($service:ident, $name:literal, $request:ident { $($qname:ident: $qtype:ty),* }, $response:ident { $($aname:ident: $atype:ty),* }) => {
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        pub struct $request { $(pub $qname: $qtype),* }

        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        pub struct $response { $(pub $aname: $atype),* }

        ros_message!("rcl_interfaces", $request, concat!($name, "_Request"));
        ros_message!("rcl_interfaces", $response, concat!($name, "_Response"));

        #[cfg(feature = "dds")]
        impl ros2_client::Message for $request {}
        #[cfg(feature = "dds")]
        impl ros2_client::Message for $response {}

        pub enum $service {}

        impl Service for $service {
            const NAME: &'static str = $name;
            type Request = $request;
            type Response = $response;
        }
    };
}

service!(ListParameters, "ListParameters",
    ListParametersRequest { prefixes: Vec<String>, depth: u64 },
    ListParametersResponse { result: ListParametersResult });
service!(GetParameters, "GetParameters",
    GetParametersRequest { names: Vec<String> },
    GetParametersResponse { values: Vec<ParameterValue> });
service!(GetParameterTypes, "GetParameterTypes",
    GetParameterTypesRequest { names: Vec<String> },
    GetParameterTypesResponse { types: Vec<u8> });
service!(SetParameters, "SetParameters",
    SetParametersRequest { parameters: Vec<Parameter> },
    SetParametersResponse { results: Vec<SetParametersResult> });
service!(SetParametersAtomically, "SetParametersAtomically",
    SetParametersAtomicallyRequest { parameters: Vec<Parameter> },
    SetParametersAtomicallyResponse { result: SetParametersResult });
service!(DescribeParameters, "DescribeParameters",
    DescribeParametersRequest { names: Vec<String> },
    DescribeParametersResponse { descriptors: Vec<ParameterDescriptor> });
