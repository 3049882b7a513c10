#!/usr/bin/env python3
"""OpenCV's CPU SIFT on the inputs benches/sift_cpu.rs wrote (target/sift_bench_*.pgm):
median of detectAndCompute with cv2.setNumThreads(1) and with OpenCV's default threads."""
import glob
import statistics
import sys
import time

import cv2

paths = sorted(glob.glob("target/sift_bench_*.pgm"))
if not paths:
    sys.exit("run `cargo bench --bench sift_cpu` first: it writes target/sift_bench_*.pgm")
sift = cv2.SIFT_create()
default_threads = cv2.getNumThreads()
for threads in (1, default_threads):
    cv2.setNumThreads(threads)
    for path in paths:
        image = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        keypoints, _ = sift.detectAndCompute(image, None)
        times = []
        for _ in range(10):
            start = time.perf_counter()
            sift.detectAndCompute(image, None)
            times.append(time.perf_counter() - start)
        print(f"OpenCV {cv2.__version__} SIFT {path}: threads {threads}, "
              f"{len(keypoints)} keypoints, median {1e3 * statistics.median(times):.1f} ms")
