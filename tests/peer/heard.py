"""What the result listeners (result_listener.py: Cyclone DDS; rclpy_listener.py: rclpy
over Fast DDS) print of each message they hear, for tests/common/listener.rs. Nothing
here imports a DDS stack: both stacks' messages have the ROS field names.
"""

# More than the node publishes while a test listens: nothing is displaced by history.
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


def diagnostics_values(report):
    """A DiagnosticArray's values, key -> value."""
    return {kv.key: kv.value for status in report.status for kv in status.values}
