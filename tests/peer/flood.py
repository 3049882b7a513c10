"""Floods a running orbsift_node with camera frames over Eclipse Cyclone DDS: real
pixels (graf1.png resized), bgr8, best effort, as fast as this process can (or at
--rate), while counting the Features the node publishes back. Prints one JSON line
per second: {"sent": total frames sent, "features": total Features received}.

Used by tests/node_flood.rs; runs until --seconds have passed or it is killed.
"""

import argparse
import json
import os
import struct
import sys
import time
from dataclasses import dataclass

import cv2
from cyclonedds._clayer import ddspy_write
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, uint8, uint32
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from ros_msgs import Features, Header, Time, qos

HERE = os.path.dirname(os.path.abspath(__file__))


def frame_writer(participant, width, height):
    """A function that publishes one bgr8 frame stamped now on `image`."""
    pixels = cv2.imread(os.path.join(HERE, "..", "data", "graf1.png"), cv2.IMREAD_COLOR)
    data = cv2.resize(pixels, (width, height), interpolation=cv2.INTER_AREA).tobytes()
    size = len(data)

    # sensor_msgs/Image with `data` as its length and a byte array: the same CDR as
    # sequence<uint8>, but packed in one copy (cyclonedds packs a sequence value by value).
    @dataclass
    class Image(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
        header: Header
        height: uint32
        width: uint32
        encoding: str
        is_bigendian: uint8
        step: uint32
        data_length: uint32
        data: array[uint8, size]

    writer = DataWriter(participant, Topic(participant, "rt/image", Image), qos(False, depth=5))
    # Serialized once; each frame rewrites only its stamp (after the 4-byte encapsulation
    # header) and goes to the C writer as DataWriter.write would send it.
    message = Image(Header(Time(0, 0), "flood"), height, width, "bgr8", 0, width * 3, size, data)
    serialized = message.serialize(use_version_2=writer._use_version_2)
    serialized = bytearray(serialized.ljust((len(serialized) + 3) & ~3, b"\0"))
    stamp = struct.Struct("<iI" if serialized[1] == 1 else ">iI")

    def write():
        now = time.time_ns()
        stamp.pack_into(serialized, 4, now // 1_000_000_000, now % 1_000_000_000)
        if ddspy_write(writer._ref, serialized) < 0:
            raise RuntimeError("cyclonedds write failed")

    return write


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--rate", type=float, default=0.0, help="frames/s; 0: as fast as possible")
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    participant = DomainParticipant(int(os.environ.get("ROS_DOMAIN_ID", "0")))
    write = frame_writer(participant, args.width, args.height)
    features = DataReader(participant, Topic(participant, "rt/features", Features),
                          qos(True, depth=100))
    sent = received = 0
    start = time.monotonic()
    next_report = start + 1.0
    next_send = start
    while time.monotonic() - start < args.seconds:
        write()
        sent += 1
        received += len(features.take(N=100))
        now = time.monotonic()
        if now >= next_report:
            print(json.dumps({"sent": sent, "features": received}), flush=True)
            next_report += 1.0
        if args.rate > 0:
            next_send += 1.0 / args.rate
            if next_send > now:
                time.sleep(next_send - now)
    return 0


if __name__ == "__main__":
    sys.exit(main())
