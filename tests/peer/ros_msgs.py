"""ROS 2 messages as Eclipse Cyclone DDS sees them: the wire type names
(`<package>::msg::dds_::<Name>_`) and field layouts of builtin_interfaces, std_msgs,
sensor_msgs, diagnostic_msgs and orbsift_msgs, plus the QoS ROS 2 speaks.

Shared by the peers that talk to orbsift_node (orbsift_peer.py, play_video.py).
"""

from dataclasses import dataclass

from cyclonedds.core import Policy, Qos
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import float32, int32, sequence, uint8, uint32
from cyclonedds.util import duration


@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time
    frame_id: str


@dataclass
class Image(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    header: Header
    height: uint32
    width: uint32
    encoding: str
    is_bigendian: uint8
    step: uint32
    data: sequence[uint8]


@dataclass
class Features(IdlStruct, typename="orbsift_msgs::msg::dds_::Features_"):
    header: Header
    image_width: uint32
    image_height: uint32
    algorithm: str
    x: sequence[float32]
    y: sequence[float32]
    size: sequence[float32]
    angle: sequence[float32]
    response: sequence[float32]
    octave: sequence[int32]
    descriptor_type: str
    descriptor_size: uint32
    descriptors: sequence[uint8]


@dataclass
class Matches(IdlStruct, typename="orbsift_msgs::msg::dds_::Matches_"):
    header: Header
    train_header: Header
    mode: str
    query_idx: sequence[uint32]
    train_idx: sequence[uint32]
    distance: sequence[float32]


@dataclass
class KeyValue(IdlStruct, typename="diagnostic_msgs::msg::dds_::KeyValue_"):
    key: str
    value: str


@dataclass
class DiagnosticStatus(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticStatus_"):
    level: uint8
    name: str
    message: str
    hardware_id: str
    values: sequence[KeyValue]


@dataclass
class DiagnosticArray(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticArray_"):
    header: Header
    status: sequence[DiagnosticStatus]


def qos(reliable, depth=50):
    reliability = (Policy.Reliability.Reliable(duration(seconds=1)) if reliable
                   else Policy.Reliability.BestEffort)
    # ROS 2 speaks XCDR1 (plain CDR).
    return Qos(reliability, Policy.History.KeepLast(depth),
               Policy.DataRepresentation(use_cdrv0_representation=True))


def diag_value(array, key):
    """The value of `key` in a DiagnosticArray, or None."""
    for status in array.status:
        for kv in status.values:
            if kv.key == key:
                return kv.value
    return None
