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

from ros_msgs import (DiagnosticArray, Features, Header, Image, Matches, Time, diag_value,
                      qos)


FRAME_ID = "peer_camera"
# Translation of the synthetic pair: the second frame shows the scene moved by this.
SHIFT = (-7, -4)


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

    def send_and_wait(self, message, timeout=15.0):
        """Publishes a frame and waits for its Features; True when it came."""
        sec = message.header.stamp.sec
        self.writer.write(message)
        return self.wait_for(lambda: sec in self.seen_features, timeout)


def features_summary(f):
    return {
        "sec": f.header.stamp.sec, "nanosec": f.header.stamp.nanosec,
        "frame_id": f.header.frame_id, "width": f.image_width, "height": f.image_height,
        "algorithm": f.algorithm, "keypoints": len(f.x),
        "array_lengths": [len(f.y), len(f.size), len(f.angle), len(f.response), len(f.octave)],
        "descriptor_type": f.descriptor_type, "descriptor_size": f.descriptor_size,
        "descriptor_bytes": len(f.descriptors),
        "in_image": all(0 <= x < f.image_width and 0 <= y < f.image_height
                        for x, y in zip(f.x, f.y)),
    }


def matches_summary(m, features):
    query, train = features.get(m.header.stamp.sec), features.get(m.train_header.stamp.sec)
    return {
        "sec": m.header.stamp.sec, "train_sec": m.train_header.stamp.sec, "mode": m.mode,
        "count": len(m.query_idx), "lengths_agree": len(m.query_idx) == len(m.train_idx) == len(m.distance),
        "indices_in_range": query is not None and train is not None
        and all(q < len(query.x) for q in m.query_idx) and all(t < len(train.x) for t in m.train_idx),
    }


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
    base = grey(os.path.join(args.data, "basketball1.png"))
    dx, dy = SHIFT
    h, w = base.shape[0] - 20, base.shape[1] - 20
    first = base[10:10 + h, 10:10 + w]
    second = base[10 - dy:10 - dy + h, 10 - dx:10 - dx + w]
    sec += 1
    first_sec = sec
    peer.send_and_wait(image_message(sec, np.ascontiguousarray(first)))
    sec += 1
    peer.send_and_wait(image_message(sec, np.ascontiguousarray(second)))
    good += [first_sec, sec]
    peer.wait_for(lambda: sec in peer.seen_matches, 5.0)
    consistent = None
    if sec in peer.seen_matches and first_sec in peer.seen_features and sec in peer.seen_features:
        m, q, t = peer.seen_matches[sec], peer.seen_features[sec], peer.seen_features[first_sec]
        ok = sum(1 for qi, ti in zip(m.query_idx, m.train_idx)
                 if abs(q.x[qi] - (t.x[ti] + dx)) <= 2.0 and abs(q.y[qi] - (t.y[ti] + dy)) <= 2.0)
        consistent = {"matches": len(m.query_idx), "consistent": ok, "train_sec": m.train_header.stamp.sec,
                      "width": w, "height": h}
    peer.wait_for(lambda: sec in peer.seen_debug_images, 5.0)
    report["debug_image"] = peer.seen_debug_images.get(sec)

    # Malformed frames, each followed by a good one.
    small = grey(os.path.join(args.data, "rubberwhale1.png"))
    bad_cases = {}
    after_bad = []

    def bad(name, message):
        nonlocal sec
        # The node matches after publishing Features: once the Matches are out it is
        # idle, so the bad frame is processed rather than replaced by the next one.
        previous = sec
        peer.wait_for(lambda: previous in peer.seen_matches, 10.0)
        sec += 1
        message.header.stamp.sec = sec
        bad_cases[name] = sec
        peer.writer.write(message)
        # Wait until the node counted it: a good frame sent while the bad one is still
        # on its way would replace it (counted as dropped, not rejected).
        peer.wait_for(lambda: peer.last_diagnostics is not None
                      and diag_value(peer.last_diagnostics, "frames_rejected") == str(len(bad_cases)),
                      10.0)
        sec += 1
        after_bad.append(sec)
        peer.send_and_wait(image_message(sec, small))

    m = image_message(0, small)
    m.encoding = "bayer_rggb8"
    bad("unknown_encoding", m)
    m = image_message(0, small)
    m.step = m.width - 1
    bad("step_smaller_than_row", m)
    m = image_message(0, small)
    m.data = m.data[: len(m.data) // 2]
    bad("data_shorter_than_step_times_height", m)
    m = image_message(0, small)
    m.width = 0
    m.step = 0
    bad("zero_width", m)
    m = image_message(0, small)
    m.width, m.height, m.step = 9000, 9000, 9000
    bad("above_max_image_pixels", m)
    peer.wait_for(lambda: False, 1.5)  # late answers to bad frames would show up here
    peer.wait_for(lambda: peer.last_diagnostics is not None
                  and diag_value(peer.last_diagnostics, "frames_rejected") == str(len(bad_cases)), 5.0)

    report.update({
        "good_secs": good + after_bad,
        "bad_cases": bad_cases,
        "features": [features_summary(f) for f in peer.seen_features.values()],
        "matches": [matches_summary(m, peer.seen_features) for m in peer.seen_matches.values()],
        "shift": consistent,
        "diagnostics": None if peer.last_diagnostics is None else {
            kv.key: kv.value for s in peer.last_diagnostics.status for kv in s.values},
    })
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
