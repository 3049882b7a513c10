"""Floods a running orbsift_node with camera frames over Eclipse Cyclone DDS: real
pixels (graf1.png resized), bgr8, best effort, as fast as this process can (or at
--rate), while counting the Features the node publishes back. Prints one JSON line
per second: {"sent": total frames sent, "features": total Features received}.

Used by tests/node_flood.rs; runs until --seconds have passed or it is killed.
"""

import argparse
import json
import os
import sys
import time

import cv2
from cyclonedds.domain import DomainParticipant
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from ros_msgs import Features, frame_sender, qos

HERE = os.path.dirname(os.path.abspath(__file__))


def frame_writer(participant, width, height):
    """A function that publishes one bgr8 frame stamped now on `image`."""
    pixels = cv2.imread(os.path.join(HERE, "..", "data", "graf1.png"), cv2.IMREAD_COLOR)
    data = cv2.resize(pixels, (width, height), interpolation=cv2.INTER_AREA).tobytes()
    _, send = frame_sender(participant, "flood", width, height, data, reliable=False)
    return lambda: send(time.time_ns())


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
