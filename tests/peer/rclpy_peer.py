"""A ROS 2 peer that is a real ROS 2 node: rclpy over Fast DDS (the Jazzy default rmw),
from the prefix of scripts/setup-ros.sh (run it with `.ros/setup.bash` sourced).

Talks to a running orbsift_node (either transport) in one scenario and prints one JSON
document for tests/node_rclpy.rs to judge; it asserts nothing itself.

    rclpy_peer.py SCENARIO --frames DIR --namespace NS [--timeout S]

DIR holds frames.json and the raw pixels tests/node_rclpy.rs decoded (the ROS prefix
has no image codecs): {"name": {"file", "width", "height", "encoding"}}.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from orbsift_msgs.msg import Features, Matches
from rcl_interfaces.msg import ParameterEvent
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage, Image

from node_exchange import (FRAME_ID, consistent_with, features_summary, matches_summary,
                           send_malformed, shift_report, shifted_pair)

# Stereo: the right camera sees the scene this many pixels further left.
DISPARITY = 12
# rclpy's default: reliable, volatile, keep last 10.
DEFAULT_QOS = QoSProfile(depth=10)


def load_frames(folder):
    with open(os.path.join(folder, "frames.json")) as f:
        index = json.load(f)
    frames = {}
    for name, entry in index.items():
        pixels = np.fromfile(os.path.join(folder, entry["file"]), dtype=np.uint8)
        shape = (entry["height"], entry["width"], 3 if entry["encoding"] == "rgb8" else 1)
        frames[name] = pixels.reshape(shape)
    return frames


def image_message(sec, pixels, encoding="mono8", frame_id=FRAME_ID, nanosec=0):
    pixels = np.ascontiguousarray(pixels)
    height, width = pixels.shape[:2]
    message = Image()
    message.header.stamp.sec = sec
    message.header.stamp.nanosec = nanosec
    message.header.frame_id = frame_id
    message.height, message.width, message.encoding = height, width, encoding
    message.step = pixels[0].size
    message.data = pixels.tobytes()
    return message


def json_number(value):
    """`value` as JSON can carry it: NaN and infinities as strings."""
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value


def diagnostics_values(array):
    return None if array is None else {
        kv.key: kv.value for status in array.status for kv in status.values}


class Peer:
    """An rclpy node in `namespace`, subscribed to the node's outputs there."""

    def __init__(self, namespace, image_topic="image", image_type=Image):
        self.node = rclpy.create_node("rclpy_peer", namespace=namespace)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.writer = self.node.create_publisher(image_type, image_topic, DEFAULT_QOS)
        self.seen_features, self.seen_matches, self.seen_debug_images = {}, {}, {}
        self.last_diagnostics = None
        self.node.create_subscription(Features, "features", self._on_features, 100)
        self.node.create_subscription(Matches, "matches", self._on_matches, 100)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)

    def _on_features(self, f):
        self.seen_features[(f.header.frame_id, f.header.stamp.sec)] = f

    def _on_matches(self, m):
        self.seen_matches[m.header.stamp.sec] = m

    def _on_diagnostics(self, d):
        self.last_diagnostics = d

    def subscribe_debug_image(self):
        def on_image(image):
            self.seen_debug_images[image.header.stamp.sec] = [
                image.width, image.height, image.encoding, len(image.data)]
        self.node.create_subscription(Image, "debug_image", on_image, DEFAULT_QOS)

    def features(self, sec, frame_id=FRAME_ID):
        return self.seen_features.get((frame_id, sec))

    def wait_for(self, condition, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            self.executor.spin_once(timeout_sec=0.02)
        return condition()

    def wait_for_node(self, timeout, writers=None):
        """Until the node reads our images and we read its features (both matched)."""
        writers = writers or [self.writer]
        found = self.wait_for(
            lambda: all(w.get_subscription_count() > 0 for w in writers)
            and self.node.count_publishers("features") > 0, timeout)
        # Let the other direction of discovery settle too.
        self.wait_for(lambda: False, 0.5)
        return found

    def publish(self, message):
        self.writer.publish(message)

    def send_and_wait(self, message, timeout=10.0, attempts=3):
        """Publishes a frame and waits for its Features; True when they came. Inputs
        are best effort: a frame lost on the way is sent again."""
        for _ in range(attempts):
            self.publish(message)
            if self.wait_for(
                    lambda: self.features(message.header.stamp.sec, message.header.frame_id)
                    is not None, timeout):
                return True
        return False

    def diagnostics(self):
        return diagnostics_values(self.last_diagnostics)

    def wait_for_rejected(self, count, timeout=5.0):
        self.wait_for(lambda: (self.diagnostics() or {}).get("frames_rejected") == str(count),
                      timeout)

    def graph(self, node_name, namespace):
        def by_node(query):
            try:
                return {topic: types for topic, types in query(node_name, namespace)}
            except Exception as error:  # noqa: BLE001 (reported, judged by the test)
                return f"{type(error).__name__}: {error}"
        return {
            "nodes": [[name, ns] for name, ns in self.node.get_node_names_and_namespaces()],
            "topics": {topic: types for topic, types in self.node.get_topic_names_and_types()},
            "node_publishes": by_node(self.node.get_publisher_names_and_types_by_node),
            "node_subscribes": by_node(self.node.get_subscriber_names_and_types_by_node),
        }


def scenario_frames(peer, frames, args):
    """What tests/node_peer.rs asks of the Cyclone DDS peer, plus the graph."""
    peer.subscribe_debug_image()
    report = {"node_found": peer.wait_for_node(args.timeout)}
    if not report["node_found"]:
        return report
    sec = 0
    good = []
    for name in ["basketball1.png", "basketball2.png", "rubberwhale1.png", "rubberwhale2.png"]:
        sec += 1
        pixels = frames[name]
        encoding = "bgr8" if sec % 2 else "rgb8"
        if encoding == "bgr8":
            pixels = pixels[:, :, ::-1]
        peer.send_and_wait(image_message(sec, pixels, encoding))
        good.append(sec)

    # A known translation of a real image: the second frame is the first moved by SHIFT.
    first, second = shifted_pair(frames["basketball1.png.gray"])
    sec += 1
    first_sec = sec
    peer.send_and_wait(image_message(sec, first))
    sec += 1
    peer.send_and_wait(image_message(sec, second))
    good += [first_sec, sec]
    peer.wait_for(lambda: sec in peer.seen_matches, 5.0)
    shift = None
    if sec in peer.seen_matches and peer.features(first_sec) and peer.features(sec):
        shift = shift_report(peer.seen_matches[sec], peer.features(sec),
                             peer.features(first_sec), first)
    peer.wait_for(lambda: sec in peer.seen_debug_images, 5.0)
    report["debug_image"] = peer.seen_debug_images.get(sec)

    # Malformed frames, each followed by a good one.
    bad_cases, after_bad = send_malformed(peer, image_message, frames["rubberwhale1.png.gray"],
                                          sec)

    report.update({
        "good_secs": good + after_bad,
        "bad_cases": bad_cases,
        "features": [features_summary(f) for f in peer.seen_features.values()],
        "matches": [matches_summary(m, {s: f for (_, s), f in peer.seen_features.items()})
                    for m in peer.seen_matches.values()],
        "shift": shift,
        "diagnostics": peer.diagnostics(),
        "graph": peer.graph(args.node, args.namespace),
    })
    return report


def scenario_stereo(peer, frames, args):
    """Left/right pairs 2 ms apart with a known disparity, until stereo Matches come."""
    left_writer = peer.node.create_publisher(Image, "left/image", DEFAULT_QOS)
    right_writer = peer.node.create_publisher(Image, "right/image", DEFAULT_QOS)
    report = {"node_found": peer.wait_for_node(args.timeout, [left_writer, right_writer])}
    if not report["node_found"]:
        return report
    scene = frames["basketball1.png.gray"]
    width = scene.shape[1] - DISPARITY
    deadline = time.monotonic() + args.timeout
    sec = 0
    while not peer.seen_matches and time.monotonic() < deadline:
        sec += 1
        left_writer.publish(image_message(sec, scene[:, DISPARITY:], frame_id="left"))
        right_writer.publish(image_message(sec, scene[:, :width], frame_id="right",
                                           nanosec=2_000_000))
        peer.wait_for(lambda: peer.seen_matches, 3.0)
    if not peer.seen_matches:
        return report
    stamp, m = next(iter(peer.seen_matches.items()))
    peer.wait_for(lambda: peer.features(stamp, "left") and peer.features(stamp, "right"), 5.0)
    left, right = peer.features(stamp, "left"), peer.features(stamp, "right")
    report["matches"] = {
        "mode": m.mode, "frame_id": m.header.frame_id, "train_frame_id": m.train_header.frame_id,
        "sec": m.header.stamp.sec, "train_sec": m.train_header.stamp.sec,
        "train_nanosec": m.train_header.stamp.nanosec, "count": len(m.query_idx),
        "pair_features": left is not None and right is not None,
        # A scene point at x in the left image is at x + DISPARITY in the right one.
        "consistent": None if left is None or right is None
        else consistent_with(m, left, right, -DISPARITY, 0),
    }
    return report


def scenario_parameters(peer, frames, args):
    """rclpy's parameter client against the node's parameter services."""
    fqn = args.namespace.rstrip("/") + "/" + args.node
    events = []
    peer.node.create_subscription(
        ParameterEvent, "/parameter_events",
        lambda e: events.append(e) if e.node == fqn else None, QoSProfile(depth=1000))
    client = AsyncParameterClient(peer.node, fqn)
    report = {"node_found": peer.wait_for_node(args.timeout)
              and client.wait_for_services(timeout_sec=args.timeout)}
    if not report["node_found"]:
        return report

    def call(future):
        peer.executor.spin_until_future_complete(future, timeout_sec=10.0)
        return future.result()

    def values(names):
        return {name: json_number(parameter_value_to_python(v))
                for name, v in zip(names, call(client.get_parameters(names)).values)}

    def set_one(name, value):
        result = call(client.set_parameters([Parameter(name, value=value)]))
        return {"successful": result.results[0].successful, "reason": result.results[0].reason}

    listed = call(client.list_parameters())
    report["list"] = {"names": list(listed.result.names), "prefixes": list(listed.result.prefixes)}
    watched = ["orb.n_features", "orb.scale_factor", "algorithm", "backend", "matching.ratio"]
    report["get"] = values(watched)
    report["types"] = dict(zip(watched, call(client.get_parameter_types(watched)).types))
    report["describe"] = {
        d.name: {
            "type": d.type, "read_only": d.read_only, "description": d.description,
            "additional_constraints": d.additional_constraints,
            "integer_range": [[r.from_value, r.to_value] for r in d.integer_range],
            "floating_point_range": [[r.from_value, r.to_value] for r in d.floating_point_range],
        } for d in call(client.describe_parameters(watched)).descriptors}

    # A live change applies from the next frame: fewer keypoints wanted, fewer come.
    scene = frames["basketball1.png.gray"]
    peer.send_and_wait(image_message(1, scene))
    before = peer.features(1)
    report["set_n_features"] = set_one("orb.n_features", 150)
    peer.send_and_wait(image_message(2, scene))
    after = peer.features(2)
    report["keypoints"] = [None if f is None else len(f.x) for f in (before, after)]

    refused = {
        "nan": ("orb.scale_factor", math.nan),
        "out_of_range": ("orb.n_features", 0),
        "wrong_type": ("orb.n_features", "many"),
        "restart_only_algorithm": ("algorithm", "sift"),
        "restart_only_backend": ("backend", "cuda"),
    }
    report["refused"] = {case: set_one(name, value) for case, (name, value) in refused.items()}
    report["after_refusals"] = values(watched)
    peer.send_and_wait(image_message(3, scene))
    report["keypoints_after_refusals"] = None if peer.features(3) is None else len(peer.features(3).x)
    peer.wait_for(lambda: False, 1.0)  # events of refused changes would come here
    report["events"] = [
        {"changed": {p.name: json_number(parameter_value_to_python(p.value))
                     for p in e.changed_parameters},
         "new": [p.name for p in e.new_parameters], "deleted": [p.name for p in e.deleted_parameters]}
        for e in events]
    return report


OUTPUTS = {"features": Features, "matches": Matches, "/diagnostics": DiagnosticArray,
           "debug_image": Image}
PROFILES = {"default": DEFAULT_QOS, "sensor_data": qos_profile_sensor_data}


def scenario_qos(peer, frames, args):
    """Each output subscribed with rclpy's default QoS and with the sensor-data profile."""
    # The stamps (seconds) each subscriber got; /diagnostics messages are counted.
    received = {topic: {profile: set() for profile in PROFILES} for topic in OUTPUTS}
    for topic, message_type in OUTPUTS.items():
        for profile, qos in PROFILES.items():
            def note(message, topic=topic, profile=profile):
                seen = received[topic][profile]
                seen.add(len(seen) if topic == "/diagnostics" else message.header.stamp.sec)
            peer.node.create_subscription(message_type, topic, note, qos)
    report = {"node_found": peer.wait_for_node(args.timeout)}
    if not report["node_found"]:
        return report
    # Until the node sees the debug_image readers (it draws only for a reader).
    peer.wait_for(lambda: peer.node.count_publishers("debug_image") > 0, 10.0)
    peer.wait_for(lambda: False, 1.0)
    answered = []
    for sec in range(1, 7):
        name = "basketball1.png.gray" if sec % 2 else "basketball2.png.gray"
        if peer.send_and_wait(image_message(sec, frames[name])):
            answered.append(sec)
        # One frame at a time: the next once this one's matches and drawing are out.
        peer.wait_for(lambda: sec in received["debug_image"]["default"], 5.0)
    last = answered[-1] if answered else None
    peer.wait_for(lambda: all(last in received[topic][profile] for profile in PROFILES
                              for topic in ["matches", "debug_image"]), 10.0)
    peer.wait_for(lambda: False, 1.0)
    report.update({
        "frames_answered": answered,
        "received": {topic: {profile: len(seen) if topic == "/diagnostics" else sorted(seen)
                             for profile, seen in by_profile.items()}
                     for topic, by_profile in received.items()},
        "offered": {topic: sorted({info.qos_profile.reliability.name
                                   for info in peer.node.get_publishers_info_by_topic(
                                       peer.node.resolve_topic_name(topic))})
                    for topic in OUTPUTS},
    })
    return report


def scenario_compressed(peer, frames, args):
    """sensor_msgs/CompressedImage frames (image_transport's `compressed`) in."""
    report = {"node_found": peer.wait_for_node(args.timeout)}
    if not report["node_found"]:
        return report

    def compressed(sec, data, format_):
        message = CompressedImage()
        message.header.stamp.sec = sec
        message.header.frame_id = FRAME_ID
        message.format = format_
        message.data = data
        return message

    def read(name):
        with open(os.path.join(args.data, name), "rb") as f:
            return f.read()
    jpeg, png = read("leuvenA.jpg"), read("basketball1.png")
    cases = {"jpeg": (1, jpeg, "bgr8; jpeg compressed bgr8"),
             "png": (2, png, "bgr8; png compressed bgr8")}
    bad = {"truncated_jpeg": (3, jpeg[: len(jpeg) // 2], "bgr8; jpeg compressed bgr8"),
           "garbage": (5, bytes(np.random.default_rng(7).integers(0, 256, 50_000, np.uint8)),
                       "bgr8; jpeg compressed bgr8")}
    for sec, data, format_ in cases.values():
        peer.send_and_wait(compressed(sec, data, format_))
    answered_after_bad = {}
    for case, (sec, data, format_) in bad.items():
        peer.writer.publish(compressed(sec, data, format_))
        peer.wait_for(lambda: False, 0.5)
        # A good frame after each bad one: the node still answers.
        answered_after_bad[case] = peer.send_and_wait(compressed(sec + 1, png, "png"))
    peer.wait_for(lambda: False, 1.0)
    peer.wait_for_rejected(len(bad))
    report.update({
        "good": {case: None if peer.features(sec) is None else features_summary(peer.features(sec))
                 for case, (sec, _, _) in cases.items()},
        "bad": {case: peer.features(sec) is not None for case, (sec, _, _) in bad.items()},
        "answered_after_bad": answered_after_bad,
        "diagnostics": peer.diagnostics(),
    })
    return report


SCENARIOS = {
    "frames": (scenario_frames, {}),
    "stereo": (scenario_stereo, {}),
    "parameters": (scenario_parameters, {}),
    "qos": (scenario_qos, {}),
    "compressed": (scenario_compressed,
                   {"image_topic": "image/compressed", "image_type": CompressedImage}),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--frames", required=True, help="folder with frames.json")
    parser.add_argument("--data", required=True, help="tests/data, for the compressed files")
    parser.add_argument("--namespace", default="/")
    parser.add_argument("--node", default="orbsift", help="the node's name")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    frames = load_frames(args.frames)
    scenario, peer_options = SCENARIOS[args.scenario]
    rclpy.init()
    try:
        report = scenario(Peer(args.namespace, **peer_options), frames, args)
    finally:
        rclpy.try_shutdown()
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
