"""ROS 2 messages as Eclipse Cyclone DDS sees them: the wire type names
(`<package>::msg::dds_::<Name>_`) and field layouts of builtin_interfaces, std_msgs,
sensor_msgs, diagnostic_msgs and orbsift_msgs, plus the QoS ROS 2 speaks.

Shared by the peers that talk to orbsift_node (orbsift_peer.py, play_video.py, flood.py,
perf/transport_bench.py).
"""

import struct
from dataclasses import dataclass

from cyclonedds._clayer import ddspy_write
from cyclonedds.core import Policy, Qos
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float32, int32, sequence, uint8, uint32
from cyclonedds.pub import DataWriter
from cyclonedds.topic import Topic
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


def frame_sender(participant, frame_id, width, height, bgr, reliable):
    """Publishes one bgr8 frame (`bgr`: width * height * 3 bytes) on `image` per call of
    the function it returns, `send(stamp_ns)`, and that writer, for matching checks.

    The message is serialized once and each frame only rewrites its stamp (after the
    4-byte CDR encapsulation header), handed to the C writer as DataWriter.write does after
    serializing: the Python serializer packs a sequence value by value, which takes longer
    than a 30 Hz period for a 1080p frame.
    """
    size = len(bgr)

    # sensor_msgs/Image with `data` as its length and a byte array of this size: the same
    # CDR as sequence<uint8>.
    @dataclass
    class PackedImage(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
        header: Header
        height: uint32
        width: uint32
        encoding: str
        is_bigendian: uint8
        step: uint32
        data_length: uint32
        data: array[uint8, size]

    writer = DataWriter(participant, Topic(participant, "rt/image", PackedImage),
                        qos(reliable, depth=5))
    template = PackedImage(Header(Time(0, 0), frame_id), height, width, "bgr8", 0, width * 3,
                           size, bgr)
    serialized = template.serialize(use_version_2=writer._use_version_2)
    serialized = bytearray(serialized.ljust((len(serialized) + 3) & ~3, b"\0"))
    stamp_at = struct.Struct("<iI" if serialized[1] == 1 else ">iI")

    def send(stamp_ns):
        stamp_at.pack_into(serialized, 4, stamp_ns // 1_000_000_000, stamp_ns % 1_000_000_000)
        if ddspy_write(writer._ref, serialized) < 0:
            raise RuntimeError("cyclonedds write failed")

    return writer, send
