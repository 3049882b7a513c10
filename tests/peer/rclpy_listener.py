"""result_listener.py as a real ROS 2 node: rclpy over Fast DDS (run it with
`.ros/setup.bash` sourced). Listens to `features`, `matches` and `/diagnostics`
(reliable, deep history) until stdin closes, then prints the same JSON document.
Prints `ready` on stderr once its subscriptions exist.
"""

import argparse
import json
import sys
import threading

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from orbsift_msgs.msg import Features, Matches
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy

# More than the node publishes while a test listens: nothing is displaced by history.
DEPTH = 1000


def stamp(header):
    return [header.stamp.sec, header.stamp.nanosec]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()

    rclpy.init()
    node = rclpy.create_node("result_listener")
    reliable = QoSProfile(depth=DEPTH, reliability=ReliabilityPolicy.RELIABLE)
    heard = {"features": [], "matches": [], "diagnostics": None}

    def on_features(f):
        entry = {"stamp": stamp(f.header), "frame_id": f.header.frame_id,
                 "width": f.image_width, "height": f.image_height, "keypoints": len(f.x)}
        if args.full:
            entry["x"] = list(f.x)
            entry["descriptors"] = bytes(f.descriptors).hex()
        heard["features"].append(entry)

    def on_matches(m):
        heard["matches"].append({
            "stamp": stamp(m.header), "frame_id": m.header.frame_id,
            "train_stamp": stamp(m.train_header), "train_frame_id": m.train_header.frame_id,
            "mode": m.mode, "query_idx": list(m.query_idx), "train_idx": list(m.train_idx)})

    def on_diagnostics(report):
        heard["diagnostics"] = {kv.key: kv.value for status in report.status
                                for kv in status.values}

    node.create_subscription(Features, "features", on_features, reliable)
    node.create_subscription(Matches, "matches", on_matches, reliable)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, reliable)
    print("ready", file=sys.stderr, flush=True)

    stdin_closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stdin_closed.set()), daemon=True).start()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    while not stdin_closed.is_set():
        executor.spin_once(timeout_sec=0.01)
    # What arrived before stdin closed and is still queued.
    for _ in range(100):
        executor.spin_once(timeout_sec=0)
    json.dump(heard, sys.stdout)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
