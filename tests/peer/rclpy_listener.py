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

from heard import DEPTH, diagnostics_values, features_entry, matches_entry


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()

    rclpy.init()
    node = rclpy.create_node("result_listener")
    reliable = QoSProfile(depth=DEPTH, reliability=ReliabilityPolicy.RELIABLE)
    heard = {"features": [], "matches": [], "diagnostics": None}

    node.create_subscription(Features, "features",
                             lambda f: heard["features"].append(features_entry(f, args.full)),
                             reliable)
    node.create_subscription(Matches, "matches",
                             lambda m: heard["matches"].append(matches_entry(m)), reliable)
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             lambda report: heard.update(diagnostics=diagnostics_values(report)),
                             reliable)
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
