"""Plays a video into a running orbsift_node as sensor_msgs/Image (mono8) at the
video's own frame rate, over Eclipse Cyclone DDS, and prints once a second what the
node publishes back: Features per second, keypoints and temporal matches per frame,
and the latency the node reports on /diagnostics. Ends with one summary line.

Exit status: 0 when the node published Features, 1 when it published none, 2 when
the video cannot be read. Feeds a node on topic input (`input.source: topic`) from
another DDS stack; used by tests/player.rs.
"""

import argparse
import json
import os
import sys
import time

import cv2
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from ros_msgs import DiagnosticArray, Features, Header, Image, Matches, Time, diag_value, qos

FRAME_ID = "video"
# After the last frame, how long the node may take to answer it.
DRAIN_SECONDS = 3.0


def stamp_now():
    ns = time.time_ns()
    return Time(ns // 1_000_000_000, ns % 1_000_000_000)


def stamp_key(stamp):
    return (stamp.sec, stamp.nanosec)


def mono8_message(frame, stamp):
    # Grey, as the node extracts from grey anyway: cyclonedds packs a byte sequence one
    # value at a time (~100 ms for a 768x576 bgr8 frame, a third of that for mono8).
    grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    height, width = grey.shape
    return Image(Header(stamp, FRAME_ID), height, width, "mono8", 0, width, grey.tobytes())


class NodeOutput:
    """What the node published, as totals and per reporting window."""

    def __init__(self, participant):
        def reader(name, kind):
            return DataReader(participant, Topic(participant, name, kind), qos(True))

        self.features = reader("rt/features", Features)
        self.matches = reader("rt/matches", Matches)
        self.diagnostics = reader("rt/diagnostics", DiagnosticArray)
        self.answered = set()  # stamps of the frames with Features
        self.keypoints = []  # per Features message
        self.match_counts = []  # per Matches message
        self.last_diagnostics = None
        self.window_start = (0, 0)  # indexes into keypoints, match_counts

    def poll(self):
        for f in self.features.take(N=100):
            self.answered.add(stamp_key(f.header.stamp))
            self.keypoints.append(len(f.x))
        for m in self.matches.take(N=100):
            self.match_counts.append(len(m.query_idx))
        for d in self.diagnostics.take(N=100):
            self.last_diagnostics = d

    def latency(self):
        # The node reports once a second, from before its first frame on.
        if (self.last_diagnostics is None
                or diag_value(self.last_diagnostics, "frames_processed") == "0"):
            return "latency n/a"
        p50 = float(diag_value(self.last_diagnostics, "latency_p50_ms"))
        p99 = float(diag_value(self.last_diagnostics, "latency_p99_ms"))
        return f"latency p50 {p50:.1f} ms p99 {p99:.1f} ms"

    def window_line(self, elapsed, sent, seconds):
        k0, m0 = self.window_start
        keypoints, matches = self.keypoints[k0:], self.match_counts[m0:]
        self.window_start = (len(self.keypoints), len(self.match_counts))
        return (f"[{elapsed:4.1f} s] sent {sent:3d}  features {len(keypoints) / seconds:5.1f} fps"
                f"  keypoints/frame {mean(keypoints):6.0f}  matches/frame {mean(matches):6.0f}"
                f"  {self.latency()}")


def mean(values):
    return sum(values) / len(values) if values else 0.0


def wait_for_node(writer, output, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if writer.get_matched_subscriptions() and output.features.get_matched_publications():
            time.sleep(0.5)  # let discovery settle in the other direction too
            return True
        time.sleep(0.1)
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("video")
    parser.add_argument("--wait", type=float, default=30.0,
                        help="seconds to wait for orbsift_node to appear")
    parser.add_argument("--summary-json", help="also write the final numbers here")
    args = parser.parse_args()

    video = cv2.VideoCapture(args.video)
    fps = video.get(cv2.CAP_PROP_FPS)
    if not video.isOpened() or not fps > 0:
        print(f"play_video: cannot read {args.video} as a video", file=sys.stderr)
        return 2
    width = int(video.get(cv2.CAP_PROP_FRAME_WIDTH))
    height = int(video.get(cv2.CAP_PROP_FRAME_HEIGHT))

    participant = DomainParticipant(int(os.environ.get("ROS_DOMAIN_ID", "0")))
    writer = DataWriter(participant, Topic(participant, "rt/image", Image), qos(True, depth=5))
    output = NodeOutput(participant)
    if not wait_for_node(writer, output, args.wait):
        print(f"play_video: no orbsift_node answered within {args.wait:.0f} s", file=sys.stderr)
        return 1
    name = os.path.basename(args.video)
    print(f"playing {name}: {width}x{height} at {fps:.3g} fps into image", flush=True)

    start = time.monotonic()
    next_report = start + 1.0
    sent = []
    while True:
        ok, frame = video.read()
        if not ok:
            break
        # Pace to the video's own rate, polling the node's output meanwhile.
        due = start + len(sent) / fps
        while True:
            output.poll()
            now = time.monotonic()
            if now >= next_report:
                print(output.window_line(now - start, len(sent), 1.0), flush=True)
                next_report += 1.0
            if now >= due:
                break
            time.sleep(min(0.005, due - now))
        stamp = stamp_now()
        writer.write(mono8_message(frame, stamp))
        sent.append(stamp_key(stamp))

    deadline = time.monotonic() + DRAIN_SECONDS
    while sent and sent[-1] not in output.answered and time.monotonic() < deadline:
        output.poll()
        time.sleep(0.02)
    # One more diagnostics report, so the final latency covers the last frames.
    seen = output.last_diagnostics
    deadline = time.monotonic() + 1.5
    while output.last_diagnostics is seen and time.monotonic() < deadline:
        output.poll()
        time.sleep(0.02)

    answered = sum(1 for s in sent if s in output.answered)
    summary = {
        "frames_sent": len(sent), "frames_answered": answered,
        "matches_messages": len(output.match_counts),
        "mean_keypoints": mean(output.keypoints), "mean_matches": mean(output.match_counts),
        "backend": None if output.last_diagnostics is None
        else diag_value(output.last_diagnostics, "backend"),
        "frames_dropped": None if output.last_diagnostics is None
        else diag_value(output.last_diagnostics, "frames_dropped"),
    }
    print(f"done: {len(sent)} frames of {name} in {time.monotonic() - start:.1f} s, "
          f"Features for {answered}, Matches for {len(output.match_counts)}; "
          f"mean {summary['mean_keypoints']:.0f} keypoints and "
          f"{summary['mean_matches']:.0f} temporal matches per frame; "
          f"{output.latency()}; backend {summary['backend']}, "
          f"dropped {summary['frames_dropped']}", flush=True)
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(summary, f)
    if answered == 0:
        print("play_video: orbsift_node published no Features", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
