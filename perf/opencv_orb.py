"""Times OpenCV's CPU ORB (2000 features) on the frames that benches/orb_cpu.rs
writes to target/bench-frames/, for the comparison in perf/RESULTS.md.

Needs the venv: python3 -m venv .venv && .venv/bin/pip install opencv-python-headless
Run: cargo bench --bench orb_cpu && .venv/bin/python perf/opencv_orb.py
"""

import os
import statistics
import sys
import time

try:
    import cv2
except ImportError:
    sys.exit("cv2 missing: python3 -m venv .venv && .venv/bin/pip install opencv-python-headless")

FRAMES = os.path.join(os.path.dirname(__file__), "..", "target", "bench-frames")
RUNS = 40


def medians_ms(orb, image):
    """Median wall time and median CPU time of the calling thread (with one
    OpenCV thread, the caller does all the work)."""
    for _ in range(3):
        orb.detectAndCompute(image, None)
    wall, cpu = [], []
    for _ in range(RUNS):
        start, start_cpu = time.perf_counter(), time.thread_time()
        keypoints, _ = orb.detectAndCompute(image, None)
        cpu.append((time.thread_time() - start_cpu) * 1e3)
        wall.append((time.perf_counter() - start) * 1e3)
    return statistics.median(wall), statistics.median(cpu), len(keypoints)


def main():
    print(f"OpenCV {cv2.__version__}, {RUNS} runs after 3 warm-ups")
    for size in ["640x480", "1920x1080"]:
        path = os.path.join(FRAMES, f"graf1_{size}.png")
        image = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        if image is None:
            sys.exit(f"{path} missing: run `cargo bench --bench orb_cpu` first")
        for threads in [1, os.cpu_count()]:
            cv2.setNumThreads(threads)
            wall_ms, cpu_ms, n = medians_ms(cv2.ORB_create(2000), image)
            line = f"{size} {threads} threads: median wall {wall_ms:.2f} ms"
            if threads == 1:
                line += f", median thread CPU {cpu_ms:.2f} ms"
            print(f"{line}, {n} keypoints")


if __name__ == "__main__":
    main()
