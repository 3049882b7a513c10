"""Transport benchmark: large camera frames into orbsift_node over loopback.

For each publisher x size x QoS case it starts a fresh node (CPU backend, `matching.mode:
none`) on its own ROS domain, publishes real frames (graf1.png resized, bgr8) at the camera
rate, and reports: frames sent, received by the node (its /diagnostics `frames_received`),
lost in transport (sent - received), Features delivered, stamp -> Features latency
p50/p99 (measured here, on this machine's clock), the node's CPU over the run (% of one
core) and the kernel's UDP `RcvbufErrors` rise (machine-wide).

Publishers:
  cyclone         Eclipse Cyclone DDS (the `cyclonedds` package of .venv)
  fastdds         rclpy with Fast DDS, default profile (needs a ROS prefix: --ros-setup)
  fastdds-udp     the same with shared memory off (FASTDDS_BUILTIN_TRANSPORTS=UDPv4)
  fastdds-large   the same with config/fastdds-large-data.xml (not in the default set)
  fastdds-large-shm  the same with config/fastdds-large-data-shm.xml (not in the default set)
  rclpy-cyclonedds        rclpy on rmw_cyclonedds_cpp, default config (not in the default
                          set; needs scripts/build-rmw-cyclonedds.sh: --rmw-cyclonedds)
  rclpy-cyclonedds-large  the same with config/cyclonedds-large-data.xml (CYCLONEDDS_URI)

Run (a few minutes per receive-buffer ceiling; the node binary is built first):
  cargo build --release --bin orbsift_node
  .venv/bin/python perf/transport_bench.py --rmem-max 4194304 33554432
`--rmem-max` runs every case under each `net.core.rmem_max` (as root; the machine's own
value is put back at the end); without it the cases run under the machine's ceiling.
The r2r node on rmw_cyclonedds_cpp (scripts/build-rmw-cyclonedds.sh; the node is not
rebuilt, the middleware is preloaded):
  R=$PWD/.ros/rmw_cyclonedds
  .venv/bin/python perf/transport_bench.py --node .ros/ws/build/orbsift/release/orbsift_node \\
      --node-env LD_PRELOAD=$R/lib/librmw_cyclonedds_cpp.so \\
      --node-env RMW_IMPLEMENTATION=rmw_cyclonedds_cpp \\
      --node-env CYCLONEDDS_URI=file://$PWD/config/cyclonedds-large-data.xml \\
      --publishers cyclone fastdds fastdds-udp rclpy-cyclonedds rclpy-cyclonedds-large
"""

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = {"1080p": (1920, 1080, 30.0), "4k": (3840, 2160, 10.0)}
PUBLISHERS = ["cyclone", "fastdds", "fastdds-udp"]
PUBLISHERS_OPTIONAL = [
    "fastdds-large", "fastdds-large-shm", "rclpy-cyclonedds", "rclpy-cyclonedds-large",
]
QOS = ["best_effort", "reliable"]
# The publishers that load one of the shipped Fast DDS profiles.
FASTDDS_PROFILES = {
    "fastdds-large": "fastdds-large-data.xml",
    "fastdds-large-shm": "fastdds-large-data-shm.xml",
}
# After the last frame: the node answers it and publishes diagnostics (every second).
DRAIN_SECONDS = 3.0
FRAME_ID = "bench"


def frame_bytes(width, height):
    import cv2  # the .venv peer, not the library under test

    image = cv2.imread(os.path.join(ROOT, "tests", "data", "graf1.png"), cv2.IMREAD_COLOR)
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR).tobytes()


RMEM_MAX = "/proc/sys/net/core/rmem_max"


def rmem_max():
    with open(RMEM_MAX) as ceiling:
        return int(ceiling.read())


def set_rmem_max(value):
    with open(RMEM_MAX, "w") as ceiling:
        ceiling.write(str(value))


def udp_rcvbuf_errors():
    with open("/proc/net/snmp") as snmp:
        rows = [line.split() for line in snmp if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, rank):
    """Nearest-rank percentile: a value that was measured, never below a lower rank's."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(rank / 100 * len(ordered)) - 1)]


def load_average():
    with open("/proc/loadavg") as loadavg:
        return float(loadavg.read().split()[0])


# ---------------------------------------------------------------- publishers


def publish_cyclone(args, data, width, height):
    from cyclonedds.domain import DomainParticipant

    sys.path.insert(0, os.path.join(ROOT, "tests", "peer"))
    from ros_msgs import frame_sender

    participant = DomainParticipant(args.domain)
    writer, send = frame_sender(participant, FRAME_ID, width, height, data,
                                reliable=args.qos == "reliable")
    return (lambda: bool(writer.get_matched_subscriptions())), send


def publish_rclpy(args, data, width, height):
    import array

    import rclpy
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node("transport_bench_publisher")
    reliability = (ReliabilityPolicy.RELIABLE if args.qos == "reliable"
                   else ReliabilityPolicy.BEST_EFFORT)
    publisher = node.create_publisher(
        Image, "image", QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=5,
                                   reliability=reliability))
    message = Image(height=height, width=width, encoding="bgr8", step=width * 3)
    message.header.frame_id = FRAME_ID
    message.data = array.array("B", data)

    def send(stamp_ns):
        message.header.stamp.sec = stamp_ns // 1_000_000_000
        message.header.stamp.nanosec = stamp_ns % 1_000_000_000
        publisher.publish(message)

    return (lambda: publisher.get_subscription_count() > 0), send


def publish(args):
    """The publisher process: waits for the node, sends `frames` at `rate`, prints JSON."""
    width, height = args.width, args.height
    with open(args.frame, "rb") as frame:
        data = frame.read()
    start = publish_cyclone if args.stack == "cyclone" else publish_rclpy
    matched, send = start(args, data, width, height)
    deadline = time.monotonic() + 30
    while not matched():
        if time.monotonic() > deadline:
            print(json.dumps({"error": "the node's subscription was not matched in 30 s"}))
            return 1
        time.sleep(0.05)
    time.sleep(1.0)  # let discovery settle both ways
    period = 1.0 / args.rate
    next_send = time.monotonic()
    late = 0
    for _ in range(args.frames):
        now = time.monotonic()
        if now < next_send:
            time.sleep(next_send - now)
        elif now - next_send > period:
            late += 1
        send(time.time_ns())
        next_send += period
    print(json.dumps({"sent": args.frames, "late": late}))
    sys.stdout.flush()
    time.sleep(DRAIN_SECONDS)  # a reliable writer repairs until the node has it all
    return 0


# ---------------------------------------------------------------- the node's answers


class Observer:
    """Features and /diagnostics of the node, read over Cyclone DDS."""

    def __init__(self, domain):
        from cyclonedds.domain import DomainParticipant
        from cyclonedds.sub import DataReader
        from cyclonedds.topic import Topic

        sys.path.insert(0, os.path.join(ROOT, "tests", "peer"))
        from ros_msgs import DiagnosticArray, Features, diag_value, qos

        self.diag_value = diag_value
        participant = DomainParticipant(domain)
        self.features = DataReader(participant, Topic(participant, "rt/features", Features),
                                   qos(True, depth=100))
        self.diagnostics = DataReader(
            participant, Topic(participant, "rt/diagnostics", DiagnosticArray), qos(True))
        self.participant = participant
        self.latencies = []
        self.last_diagnostics = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while not self.stop.is_set():
            for features in self.features.take(N=100):
                now = time.time_ns()
                stamp = features.header.stamp
                self.latencies.append((now - (stamp.sec * 1_000_000_000 + stamp.nanosec)) / 1e6)
            for diagnostics in self.diagnostics.take(N=100):
                self.last_diagnostics = diagnostics
            time.sleep(0.002)

    def value(self, key):
        if self.last_diagnostics is None:
            return None
        return self.diag_value(self.last_diagnostics, key)

    def close(self):
        self.stop.set()
        self.thread.join()


# ---------------------------------------------------------------- the driver


@dataclass
class Case:
    publisher: str
    size: str
    qos: str


def run_case(args, case, domain, frame_files):
    width, height, rate = SIZES[case.size]
    frames = max(1, round(args.seconds * rate))
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    node_env = dict(env, **dict(setting.split("=", 1) for setting in args.node_env))
    node = subprocess.Popen(
        [args.node, "--ros-args", "-p", "backend:=cpu", "-p", "matching.mode:=none"]
        + sum((["-p", p] for p in args.param), []),
        env=node_env, stdout=subprocess.DEVNULL, stderr=open(args.node_log, "a"))
    observer = Observer(domain)
    if case.publisher == "cyclone":
        command = [sys.executable, __file__]
    elif case.publisher.startswith("rclpy-cyclonedds"):
        # rclpy on rmw_cyclonedds_cpp: the runner preloads it (the wheels link Fast DDS).
        command = ["bash", "-c", f'source "{args.ros_setup}" && '
                   f'exec "{args.rmw_cyclonedds}" python3 "$0" "$@"', __file__]
    else:
        command = ["bash", "-c", f'source "{args.ros_setup}" && exec python3 "$0" "$@"',
                   __file__]
    publisher_env = dict(env)
    if case.publisher == "fastdds-udp":
        publisher_env["FASTDDS_BUILTIN_TRANSPORTS"] = "UDPv4"
    if case.publisher in FASTDDS_PROFILES:
        publisher_env["FASTRTPS_DEFAULT_PROFILES_FILE"] = os.path.join(
            ROOT, "config", FASTDDS_PROFILES[case.publisher])
    if case.publisher == "rclpy-cyclonedds-large":
        publisher_env["CYCLONEDDS_URI"] = "file://" + os.path.join(
            ROOT, "config", "cyclonedds-large-data.xml")
    command += ["publish", "--stack", "cyclone" if case.publisher == "cyclone" else "rclpy",
                "--qos", case.qos, "--frame", frame_files[case.size], "--width", str(width),
                "--height", str(height), "--rate", str(rate), "--frames", str(frames),
                "--domain", str(domain)]
    load = load_average()
    errors_before = udp_rcvbuf_errors()
    cpu_before, wall_before = cpu_seconds(node.pid), time.monotonic()
    published = subprocess.run(command, env=publisher_env, capture_output=True, text=True,
                               timeout=args.seconds * 3 + 90)
    cpu = cpu_seconds(node.pid) - cpu_before
    wall = time.monotonic() - wall_before
    errors = udp_rcvbuf_errors() - errors_before
    time.sleep(1.2)  # one more diagnostics report after the drain
    row = {"publisher": case.publisher, "size": case.size, "qos": case.qos,
           "rate": rate, "load": load, "rmem_max": rmem_max()}
    try:
        row.update(json.loads(published.stdout.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError):
        row["error"] = (published.stderr or published.stdout)[-400:]
    received = observer.value("frames_received")
    if received is None:
        # A node from before `frames_received`: everything it received was processed,
        # dropped (replaced by a newer frame) or rejected.
        counts = [observer.value(k) for k in
                  ("frames_processed", "frames_dropped", "frames_rejected")]
        received = sum(int(c) for c in counts) if None not in counts else None
    row["received"] = int(received) if received is not None else None
    row["stack_lost"] = observer.value("frames_lost_in_stack")
    row["features"] = len(observer.latencies)
    if observer.latencies:
        row["p50_ms"] = percentile(observer.latencies, 50)
        row["p99_ms"] = percentile(observer.latencies, 99)
    row["node_cpu_pct"] = 100.0 * cpu / wall
    row["rcvbuf_errors"] = errors
    observer.close()
    node.send_signal(signal.SIGTERM)
    try:
        row["node_exit"] = node.wait(timeout=10)
    except subprocess.TimeoutExpired:
        node.kill()
        row["node_exit"] = "killed"
    if "sent" in row and row["received"] is not None:
        row["lost"] = row["sent"] - row["received"]
        row["lost_pct"] = 100.0 * row["lost"] / row["sent"]
    return row


def table(rows):
    lines = ["| rmem_max | publisher | size @ Hz | QoS | sent | received | lost in transport "
             "| lost in stack | Features | stamp→Features p50 / p99 ms | node CPU "
             "| RcvbufErrors | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "lost" not in r:
            lines.append(f"| {r['rmem_max'] >> 20} MiB | {r['publisher']} | {r['size']} @ "
                         f"{r['rate']:g} | {r['qos']} | error: {r.get('error', '?')!r} |")
            continue
        latency = (f"{r['p50_ms']:.1f} / {r['p99_ms']:.1f}" if "p50_ms" in r else "—")
        lines.append(
            f"| {r['rmem_max'] >> 20} MiB | {r['publisher']} | {r['size']} @ {r['rate']:g} | "
            f"{r['qos']} | {r['sent']} | {r['received']} | {r['lost']} ({r['lost_pct']:.1f} %) "
            f"| {r['stack_lost']} | {r['features']} | "
            f"{latency} | {r['node_cpu_pct']:.0f} % | {r['rcvbuf_errors']} | {r['load']:.1f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    pub = sub.add_parser("publish", help="(internal) one publisher process")
    pub.add_argument("--stack", choices=["cyclone", "rclpy"], required=True)
    pub.add_argument("--qos", choices=QOS, required=True)
    pub.add_argument("--frame", required=True)
    for name in ["width", "height", "frames", "domain"]:
        pub.add_argument(f"--{name}", type=int, required=True)
    pub.add_argument("--rate", type=float, required=True)
    parser.add_argument("--node", default=os.path.join(ROOT, "target", "release",
                                                       "orbsift_node"))
    parser.add_argument("--ros-setup", default=os.path.join(ROOT, ".ros", "setup.bash"),
                        help="bash file that puts rclpy on the path (fastdds publishers)")
    parser.add_argument("--rmw-cyclonedds",
                        default=os.path.join(ROOT, ".ros", "rmw_cyclonedds",
                                             "with-rmw-cyclonedds"),
                        help="the runner of scripts/build-rmw-cyclonedds.sh "
                             "(rclpy-cyclonedds publishers)")
    parser.add_argument("--publishers", nargs="+", choices=PUBLISHERS + PUBLISHERS_OPTIONAL,
                        default=PUBLISHERS)
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--qos", nargs="+", choices=QOS, default=QOS)
    parser.add_argument("--seconds", type=float, default=10.0, help="publishing time per case")
    parser.add_argument("--param", action="append", default=[],
                        help="extra node parameter, key:=value (repeatable)")
    parser.add_argument("--node-env", action="append", default=[], metavar="NAME=VALUE",
                        help="set in the node's environment only, e.g. the r2r node's "
                             "FASTRTPS_DEFAULT_PROFILES_FILE; repeatable")
    parser.add_argument("--domain", type=int, default=170, help="first ROS domain used")
    parser.add_argument("--node-log", default="/tmp/transport_bench_node.log")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--rmem-max", nargs="+", type=int, default=[],
                        help="run every case under each of these net.core.rmem_max (root)")
    args = parser.parse_args()
    if args.command == "publish":
        return publish(args)

    frame_files = {}
    for size in args.sizes:
        width, height, _ = SIZES[size]
        path = f"/tmp/transport_bench_{size}.bgr"
        if not os.path.exists(path):
            with open(path, "wb") as out:
                out.write(frame_bytes(width, height))
        frame_files[size] = path
    rows = []
    cases = [Case(p, s, q) for s in args.sizes for p in args.publishers for q in args.qos]
    started = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    machine_ceiling = rmem_max()
    try:
        for ceiling in args.rmem_max or [machine_ceiling]:
            if ceiling != rmem_max():
                set_rmem_max(ceiling)
            for case in cases:
                row = run_case(args, case, args.domain + len(rows) % 60, frame_files)
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
    finally:
        if rmem_max() != machine_ceiling:
            set_rmem_max(machine_ceiling)
    print(f"{started}, {os.uname().nodename}, {os.cpu_count()} CPUs, node {args.node}, "
          f"load average {load_average():.1f} at the end")
    print(table(rows))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
