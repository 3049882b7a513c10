"""Counts the frames of a video or image sequence with OpenCV (the pip wheel, not the
library orbsift links), reading every frame; prints {"frames", "width", "height", "fps"}
as JSON for tests/node_camera.rs."""

import json
import sys

import cv2


def main():
    video = cv2.VideoCapture(sys.argv[1])
    if not video.isOpened():
        print(f"video_frames: cannot open {sys.argv[1]}", file=sys.stderr)
        return 2
    frames = 0
    while video.read()[0]:
        frames += 1
    print(json.dumps({
        "frames": frames,
        "width": int(video.get(cv2.CAP_PROP_FRAME_WIDTH)),
        "height": int(video.get(cv2.CAP_PROP_FRAME_HEIGHT)),
        "fps": video.get(cv2.CAP_PROP_FPS),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
