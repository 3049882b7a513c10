"""A ROS 2 peer that is not orbsift: Eclipse Cyclone DDS (the default rmw of
several ROS 2 releases) speaking the ROS 2 wire names and CDR layouts.

Publishes images to a running orbsift_node, collects what it answers and prints
one JSON document for tests/node_peer.rs to judge. The topics are the node's
defaults in the root namespace: image, features, matches, /diagnostics.
"""

import argparse
import json
import os
import sys
import time

import cv2
import numpy as np
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from node_exchange import (FRAME_ID, features_summary, matches_summary, send_malformed,
                           shift_report, shifted_pair)
from ros_msgs import DiagnosticArray, Features, Header, Image, Matches, Time, diag_value, qos


def image_message(sec, pixels, encoding="mono8"):
    height, width = pixels.shape[:2]
    row = pixels.reshape(height, -1)
    return Image(Header(Time(sec, 0), FRAME_ID), height, width, encoding, 0, row.shape[1],
                 row.tobytes())


class Peer:
    def __init__(self, domain):
        self.participant = DomainParticipant(domain)
        self.writer = DataWriter(self.participant, Topic(self.participant, "rt/image", Image),
                                 qos(True))
        self.features = DataReader(self.participant,
                                   Topic(self.participant, "rt/features", Features), qos(True))
        self.matches = DataReader(self.participant,
                                  Topic(self.participant, "rt/matches", Matches), qos(True))
        self.diagnostics = DataReader(
            self.participant, Topic(self.participant, "rt/diagnostics", DiagnosticArray), qos(True))
        self.debug_image = DataReader(self.participant,
                                      Topic(self.participant, "rt/debug_image", Image), qos(True))
        self.seen_debug_images = {}
        self.seen_features = {}
        self.seen_matches = {}
        self.last_diagnostics = None

    def poll(self):
        for f in self.features.take(N=100):
            self.seen_features[f.header.stamp.sec] = f
        for m in self.matches.take(N=100):
            self.seen_matches[m.header.stamp.sec] = m
        for image in self.debug_image.take(N=10):
            self.seen_debug_images[image.header.stamp.sec] = (image.width, image.height,
                                                              image.encoding, len(image.data))
        for d in self.diagnostics.take(N=100):
            self.last_diagnostics = d

    def wait_for(self, condition, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            if condition():
                return True
            time.sleep(0.02)
        return False

    def wait_for_node(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (self.writer.get_matched_subscriptions()
                    and self.features.get_matched_publications()):
                time.sleep(0.5)  # let the other direction settle too
                return True
            time.sleep(0.1)
        return False

    def publish(self, message):
        self.writer.write(message)

    def send_and_wait(self, message, timeout=15.0):
        """Publishes a frame and waits for its Features; True when it came."""
        sec = message.header.stamp.sec
        self.publish(message)
        return self.wait_for(lambda: sec in self.seen_features, timeout)

    def wait_for_rejected(self, count, timeout=5.0):
        self.wait_for(lambda: self.last_diagnostics is not None
                      and diag_value(self.last_diagnostics, "frames_rejected") == str(count),
                      timeout)


def grey(path):
    return cv2.imread(path, cv2.IMREAD_GRAYSCALE)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="folder with the test images")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    peer = Peer(int(os.environ.get("ROS_DOMAIN_ID", "0")))
    report = {"node_found": peer.wait_for_node(args.timeout)}
    if not report["node_found"]:
        print(json.dumps(report))
        return 1

    sec = 0
    good = []
    for name in ["basketball1.png", "basketball2.png", "rubberwhale1.png", "rubberwhale2.png"]:
        sec += 1
        pixels = cv2.imread(os.path.join(args.data, name), cv2.IMREAD_COLOR)
        encoding = "bgr8" if sec % 2 else "rgb8"
        if encoding == "rgb8":
            pixels = np.ascontiguousarray(pixels[:, :, ::-1])
        peer.send_and_wait(image_message(sec, pixels, encoding))
        good.append(sec)

    # A known translation of a real image: the second frame is the first moved by SHIFT.
    first, second = shifted_pair(grey(os.path.join(args.data, "basketball1.png")))
    sec += 1
    first_sec = sec
    peer.send_and_wait(image_message(sec, np.ascontiguousarray(first)))
    sec += 1
    peer.send_and_wait(image_message(sec, np.ascontiguousarray(second)))
    good += [first_sec, sec]
    peer.wait_for(lambda: sec in peer.seen_matches, 5.0)
    shift = None
    if sec in peer.seen_matches and first_sec in peer.seen_features and sec in peer.seen_features:
        shift = shift_report(peer.seen_matches[sec], peer.seen_features[sec],
                             peer.seen_features[first_sec], first)
    peer.wait_for(lambda: sec in peer.seen_debug_images, 5.0)
    report["debug_image"] = peer.seen_debug_images.get(sec)

    # Malformed frames, each followed by a good one.
    small = grey(os.path.join(args.data, "rubberwhale1.png"))
    bad_cases, after_bad = send_malformed(peer, image_message, small, sec)

    report.update({
        "good_secs": good + after_bad,
        "bad_cases": bad_cases,
        "features": [features_summary(f) for f in peer.seen_features.values()],
        "matches": [matches_summary(m, peer.seen_features) for m in peer.seen_matches.values()],
        "shift": shift,
        "diagnostics": None if peer.last_diagnostics is None else {
            kv.key: kv.value for s in peer.last_diagnostics.status for kv in s.values},
    })
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
