"""rclpy's view of an orbsift_node started by `ros2 launch` (tests/ros_launch.rs).

Waits for the node NAMESPACE/orbsift, reads the graph (its publishers and subscribers),
reads every parameter of PARAMS_FILE through the node's get_parameters service, publishes
FRAMES frames of a PGM image (left and right with one stamp each in stereo mode) and
collects the Features and Matches that come back. Prints one JSON report on stdout; the
Rust test asserts on it. Exit status 0 unless the node never appeared.

usage: launch_probe.py NAMESPACE mono|stereo IMAGE_TOPIC|LEFT_TOPIC,RIGHT_TOPIC PARAMS_FILE PGM FRAMES
"""

import json
import sys
import time

import rclpy
import yaml
from orbsift_msgs.msg import Features, Matches
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import Image

NODE_NAME = "orbsift"
TIMEOUT_S = 60.0
# Input images go best effort (the sensor-data profile), so one can be lost on a loaded
# machine: a frame whose Features do not come back within RESEND_AFTER_S is sent again,
# with the same stamp, at most RESENDS times.
RESEND_AFTER_S = 4.0
RESENDS = 4


def read_pgm(path):
    """Binary PGM (P5, 8-bit): width, height, pixel bytes."""
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    magic, width, height, maxval = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    if magic != b"P5" or maxval > 255:
        raise ValueError(f"{path}: not an 8-bit binary PGM")
    pixels = data[pos + 1:pos + 1 + width * height]
    return width, height, pixels


def flat_parameters(params_file):
    """The dotted parameter names and values of every `ros__parameters` section."""
    with open(params_file) as f:
        document = yaml.safe_load(f)
    flat = {}

    def walk(prefix, value):
        if isinstance(value, dict):
            for key, child in value.items():
                walk(f"{prefix}.{key}" if prefix else key, child)
        else:
            flat[prefix] = value

    for section in document.values():
        walk("", section["ros__parameters"])
    return flat


def parameter_value(value):
    kinds = {
        ParameterType.PARAMETER_BOOL: lambda v: v.bool_value,
        ParameterType.PARAMETER_INTEGER: lambda v: v.integer_value,
        ParameterType.PARAMETER_DOUBLE: lambda v: v.double_value,
        ParameterType.PARAMETER_STRING: lambda v: v.string_value,
    }
    read = kinds.get(value.type)
    return read(value) if read else f"<type {value.type}>"


def spin_until(node, done, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    return done()


def main(argv):
    namespace, mode, topics, params_file, pgm, frames = argv
    frames = int(frames)
    fqn = f"{namespace.rstrip('/')}/{NODE_NAME}"
    rclpy.init()
    node = rclpy.create_node("launch_probe")
    report = {"node": fqn}

    seen = spin_until(
        node, lambda: (NODE_NAME, namespace) in node.get_node_names_and_namespaces(), TIMEOUT_S)
    if not seen:
        print(json.dumps({**report, "error": f"{fqn} never appeared"}))
        return 1
    # Endpoints are discovered after the node itself.
    spin_until(node, lambda: len(
        node.get_publisher_names_and_types_by_node(NODE_NAME, namespace)) >= 3, 10.0)
    report["publishers"] = dict(node.get_publisher_names_and_types_by_node(NODE_NAME, namespace))
    report["subscribers"] = dict(
        node.get_subscriber_names_and_types_by_node(NODE_NAME, namespace))

    expected = flat_parameters(params_file)
    client = node.create_client(GetParameters, f"{fqn}/get_parameters")
    parameters = {}
    if client.wait_for_service(timeout_sec=TIMEOUT_S):
        names = sorted(expected)
        future = client.call_async(GetParameters.Request(names=names))
        if spin_until(node, future.done, TIMEOUT_S):
            values = future.result().values
            parameters = {n: parameter_value(v) for n, v in zip(names, values)}
    report["parameters_expected"] = expected
    report["parameters"] = parameters

    # The node publishes its results reliably: a reliable reader loses none of them.
    features, matches = [], []
    results_qos = QoSProfile(depth=100)
    node.create_subscription(Features, f"{namespace}/features", features.append, results_qos)
    node.create_subscription(Matches, f"{namespace}/matches", matches.append, results_qos)
    width, height, pixels = read_pgm(pgm)
    inputs = topics.split(",")
    publishers = [node.create_publisher(Image, t, qos_profile_sensor_data) for t in inputs]
    # The node's input subscription must be matched before the first frame counts.
    spin_until(node, lambda: all(p.get_subscription_count() > 0 for p in publishers), TIMEOUT_S)

    frame_ids = [t.rsplit("/", 2)[-2] if len(inputs) == 2 else "camera" for t in inputs]

    def answered(stamp_sec):
        return {f.header.frame_id for f in features if f.header.stamp.sec == stamp_sec}

    sent, resent = [], 0
    for i in range(frames):
        stamp_sec = 1_700_000_000 + i
        for attempt in range(RESENDS + 1):
            for publisher, frame_id in zip(publishers, frame_ids):
                if frame_id in answered(stamp_sec):
                    continue
                image = Image(height=height, width=width, encoding="mono8", step=width,
                              data=pixels)
                image.header.stamp.sec = stamp_sec
                image.header.frame_id = frame_id
                publisher.publish(image)
            resent += attempt > 0
            # One frame at a time, so that none is dropped as stale by the node's queue.
            if spin_until(node, lambda: answered(stamp_sec) >= set(frame_ids), RESEND_AFTER_S):
                break
        sent.append(stamp_sec)
    spin_until(node, lambda: len(matches) >= (frames if mode == "stereo" else frames - 1), 5.0)

    report["sent_stamps"] = sent
    report["resent"] = resent
    # A frame sent again may be answered twice: one Features per stamp and camera counts.
    unique = {(f.header.stamp.sec, f.header.frame_id): f for f in features}
    features = list(unique.values())
    report["features"] = [
        {
            "stamp": f.header.stamp.sec,
            "frame_id": f.header.frame_id,
            "width": f.image_width,
            "height": f.image_height,
            "keypoints": len(f.x),
            "descriptor_size": f.descriptor_size,
            "descriptor_bytes": len(f.descriptors),
        }
        for f in features
    ]
    report["matches"] = [
        {"mode": m.mode, "count": len(m.query_idx), "stamp": m.header.stamp.sec} for m in matches
    ]
    report["image_size"] = [width, height]
    print(json.dumps(report))
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
