"""The frames scenario both ROS 2 peers run against orbsift_node, whatever their DDS
stack (orbsift_peer.py: Cyclone DDS; rclpy_peer.py: rclpy over Fast DDS), and the
summaries of what the node answered, which tests/common/node_report.rs judges.

Nothing here imports a DDS stack: a peer passes its own `image_message(sec, pixels)`
and itself, with `publish(message)`, `send_and_wait(message)`, `wait_for(condition,
timeout)`, `wait_for_rejected(count, timeout)` and the Matches it has seen by stamp
(`seen_matches`).
"""

FRAME_ID = "peer_camera"
# Translation of the synthetic pair: the second frame shows the scene moved by this.
SHIFT = (-7, -4)


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
    """`m` summarised, with `features` (Features by stamp) to check its indices."""
    query, train = features.get(m.header.stamp.sec), features.get(m.train_header.stamp.sec)
    return {
        "sec": m.header.stamp.sec, "train_sec": m.train_header.stamp.sec, "mode": m.mode,
        "count": len(m.query_idx),
        "lengths_agree": len(m.query_idx) == len(m.train_idx) == len(m.distance),
        "indices_in_range": query is not None and train is not None
        and all(q < len(query.x) for q in m.query_idx)
        and all(t < len(train.x) for t in m.train_idx),
    }


def consistent_with(m, query, train, dx, dy):
    """How many matches put the query keypoint at the train keypoint moved by (dx, dy)."""
    return sum(1 for q, t in zip(m.query_idx, m.train_idx)
               if abs(query.x[q] - (train.x[t] + dx)) <= 2.0
               and abs(query.y[q] - (train.y[t] + dy)) <= 2.0)


def shifted_pair(base):
    """Two crops of the grey image `base`, the second the first moved by SHIFT."""
    dx, dy = SHIFT
    h, w = base.shape[0] - 20, base.shape[1] - 20
    return base[10:10 + h, 10:10 + w], base[10 - dy:10 - dy + h, 10 - dx:10 - dx + w]


def shift_report(m, query, train, first):
    """What the Matches `m` of the shifted pair (`first`: its first crop) tell."""
    return {"matches": len(m.query_idx),
            "consistent": consistent_with(m, query, train, *SHIFT),
            "train_sec": m.train_header.stamp.sec,
            "width": first.shape[1], "height": first.shape[0]}


def malformed_frames(image_message, pixels):
    """(what is wrong, frame): frames of `pixels` the node must reject, made when asked."""
    def unknown_encoding(m):
        m.encoding = "bayer_rggb8"

    def step_smaller_than_row(m):
        m.step = m.width - 1

    def data_shorter_than_step_times_height(m):
        m.data = m.data[: len(m.data) // 2]

    def zero_width(m):
        m.width, m.step = 0, 0

    def above_max_image_pixels(m):
        m.width, m.height, m.step = 9000, 9000, 9000

    for break_it in [unknown_encoding, step_smaller_than_row,
                     data_shorter_than_step_times_height, zero_width, above_max_image_pixels]:
        message = image_message(0, pixels)
        break_it(message)
        yield break_it.__name__, message


def send_malformed(peer, image_message, pixels, sec):
    """Sends each malformed frame of `pixels`, each followed by a good one, stamped from
    `sec` + 1 on. Returns the bad frames' stamps by case and the good ones' stamps."""
    bad_cases, after_bad = {}, []
    for name, message in malformed_frames(image_message, pixels):
        # The node matches after publishing Features: once the Matches are out it is
        # idle, so the bad frame is processed rather than replaced by the next one.
        previous = sec
        peer.wait_for(lambda: previous in peer.seen_matches, 10.0)
        sec += 1
        message.header.stamp.sec = sec
        bad_cases[name] = sec
        peer.publish(message)
        # Wait until the node counted it: a good frame sent while the bad one is still
        # on its way would replace it (counted as dropped, not rejected).
        peer.wait_for_rejected(len(bad_cases), timeout=10.0)
        sec += 1
        after_bad.append(sec)
        peer.send_and_wait(image_message(sec, pixels))
    peer.wait_for(lambda: False, 1.5)  # late answers to bad frames would show up here
    peer.wait_for_rejected(len(bad_cases))
    return bad_cases, after_bad
