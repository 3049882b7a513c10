"""Listens to what an orbsift_node publishes, as a Cyclone DDS subscriber that is not
orbsift: `features`, `matches` and `/diagnostics` (reliable, deep history), from before
the node starts until this script's stdin closes; then prints one JSON document for
tests/node_camera.rs to judge. Prints `ready` on stderr once its readers exist.

With --full, each Features entry carries its x coordinates and its descriptors (hex).
"""

import argparse
import json
import sys
import threading
import time

from cyclonedds.domain import DomainParticipant
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from ros_msgs import DiagnosticArray, Features, Matches, qos

# More than the node publishes while a test polls: nothing is displaced by history.
DEPTH = 1000


def stamp(header):
    return [header.stamp.sec, header.stamp.nanosec]


def features_entry(f, full):
    entry = {"stamp": stamp(f.header), "frame_id": f.header.frame_id,
             "width": f.image_width, "height": f.image_height, "keypoints": len(f.x)}
    if full:
        entry["x"] = list(f.x)
        entry["descriptors"] = bytes(f.descriptors).hex()
    return entry


def matches_entry(m):
    return {"stamp": stamp(m.header), "frame_id": m.header.frame_id,
            "train_stamp": stamp(m.train_header), "train_frame_id": m.train_header.frame_id,
            "mode": m.mode, "query_idx": list(m.query_idx), "train_idx": list(m.train_idx)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--domain", type=int, required=True)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()

    participant = DomainParticipant(args.domain)
    reliable = qos(True, DEPTH)
    features = DataReader(participant, Topic(participant, "rt/features", Features), reliable)
    matches = DataReader(participant, Topic(participant, "rt/matches", Matches), reliable)
    diagnostics = DataReader(participant, Topic(participant, "rt/diagnostics", DiagnosticArray),
                             reliable)
    print("ready", file=sys.stderr, flush=True)

    stdin_closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stdin_closed.set()), daemon=True).start()
    heard = {"features": [], "matches": [], "diagnostics": None}
    while True:
        done = stdin_closed.is_set()
        # A writer that goes away leaves an InvalidSample (its unregistration): skipped.
        heard["features"] += [features_entry(f, args.full) for f in features.take(N=100)
                              if isinstance(f, Features)]
        heard["matches"] += [matches_entry(m) for m in matches.take(N=100)
                             if isinstance(m, Matches)]
        for report in diagnostics.take(N=100):
            if not isinstance(report, DiagnosticArray):
                continue
            heard["diagnostics"] = {kv.key: kv.value for status in report.status
                                    for kv in status.values}
        if done:
            break
        time.sleep(0.01)
    json.dump(heard, sys.stdout)


if __name__ == "__main__":
    main()
