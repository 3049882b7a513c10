"""Camera frames in every encoding orbsift reads, and OpenCV's grey for each.

Usage: gray_frames.py COLOUR_IMAGE OUT_DIR
Writes OUT_DIR/<encoding>.raw (the bytes of a sensor_msgs/Image's data) and
OUT_DIR/<encoding>.pgm (OpenCV's grey of those bytes), and prints one JSON record per
encoding: name, width, height, step, raw, gray. Packed encodings get padded rows.
"""

import json
import pathlib
import sys

import cv2
import numpy as np

PAD = 8


def padded(rows: np.ndarray) -> tuple[bytes, int]:
    """The rows (height x row_bytes) with PAD bytes of 0xEE after each, and the step."""
    height = rows.shape[0]
    flat = rows.reshape(height, -1)
    pad = np.full((height, PAD), 0xEE, np.uint8)
    return np.hstack([flat, pad]).tobytes(), flat.shape[1] + PAD


def main() -> None:
    source, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    bgr = cv2.imread(str(source), cv2.IMREAD_COLOR)
    height, width = bgr.shape[:2]
    yuv = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV)
    y, u, v = yuv[:, :, 0], yuv[:, :, 1], yuv[:, :, 2]
    # 4:2:2: one U and V per pair of pixels; 4:2:0: per 2x2 block.
    u2, v2 = u[:, 0::2], v[:, 0::2]
    u4, v4 = u[0::2, 0::2], v[0::2, 0::2]
    uyvy = np.stack([u2, y[:, 0::2], v2, y[:, 1::2]], axis=2).reshape(height, width, 2)
    yuyv = np.stack([y[:, 0::2], u2, y[:, 1::2], v2], axis=2).reshape(height, width, 2)
    nv12 = np.vstack([y, np.stack([u4, v4], axis=2).reshape(height // 2, width)])
    nv21 = np.vstack([y, np.stack([v4, u4], axis=2).reshape(height // 2, width)])
    nv24 = y.tobytes() + np.stack([u, v], axis=2).tobytes()

    frames = {
        "bgr8": (padded(bgr), cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)),
        "rgb8": (padded(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)), cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)),
        "bgra8": (padded(cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA)),
                  cv2.cvtColor(cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA), cv2.COLOR_BGRA2GRAY)),
        "rgba8": (padded(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGBA)),
                  cv2.cvtColor(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGBA), cv2.COLOR_RGBA2GRAY)),
        "uyvy": (padded(uyvy), cv2.cvtColor(uyvy, cv2.COLOR_YUV2GRAY_UYVY)),
        "yuv422_yuy2": (padded(yuyv), cv2.cvtColor(yuyv, cv2.COLOR_YUV2GRAY_YUY2)),
        # Planar frames: a step of exactly the width, as OpenCV's converters take them.
        "nv12": ((nv12.tobytes(), width), cv2.cvtColor(nv12, cv2.COLOR_YUV2GRAY_NV12)),
        "nv21": ((nv21.tobytes(), width), cv2.cvtColor(nv21, cv2.COLOR_YUV2GRAY_NV21)),
        # OpenCV has no NV24 converter: its grey is the Y plane OpenCV computed.
        "nv24": ((nv24, width), y),
    }
    records = []
    for name, ((raw, step), gray) in frames.items():
        raw_path, gray_path = out / f"{name}.raw", out / f"{name}.pgm"
        raw_path.write_bytes(raw)
        cv2.imwrite(str(gray_path), gray)
        records.append({"name": name, "width": width, "height": height, "step": step,
                        "raw": str(raw_path), "gray": str(gray_path)})
    print(json.dumps(records))


if __name__ == "__main__":
    main()
