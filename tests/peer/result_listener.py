"""Listens to what an orbsift_node publishes, as a Cyclone DDS subscriber that is not
orbsift: `features`, `matches` and `/diagnostics` (reliable, deep history), from before
the node starts until this script's stdin closes; then prints one JSON document for
tests/common/listener.rs to read. Prints `ready` on stderr once its readers exist.

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

from heard import DEPTH, diagnostics_values, features_entry, matches_entry
from ros_msgs import DiagnosticArray, Features, Matches, qos


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
            heard["diagnostics"] = diagnostics_values(report)
        if done:
            break
        time.sleep(0.01)
    json.dump(heard, sys.stdout)


if __name__ == "__main__":
    main()
