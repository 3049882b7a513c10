// How the tiled scale-space launches overlap (kernels/sift/pyramid.cu and levels.cu, their
// `_overlapped` copies) on sm_90 and later. A launch's dependents start as soon as each
// of its blocks has taken its last tile (programmatic dependent launch: the host queues
// them with programmatic stream serialization), and a tile then waits only for the rows
// of tiles of its source that it reads, not for the whole launch before it: a launch's
// last wave no longer idles the SMs it leaves free.
//
// A job's row of tiles is published once every tile of it is stored: counter
// `rows_done + row` of the frame's tile-row counters (zeroed with the frame's counters)
// counts its stored tiles. Sound because a launch's dependents start only once all of
// its tiles are taken by resident blocks, so every tile a block waits for is being made
// by a block that runs, and that tile waits only on launches before it. Each block
// also waits for the launch before it to end before it exits, so a launch ends after
// every launch before it, as the kernels and copies that follow with ordinary
// dependencies expect.
//
// The waits and releases cost every tile: the host overlaps the launches of a frame only
// where that pays (src/cuda/sift/launch.rs), and the copies it launches otherwise get no
// counters (`rows_done` null), so none of this is compiled into them. Before sm_90 the
// launches run one after the other and none of it is compiled at all.
#pragma once

#include "common/blur_jobs.cuh"

#if __CUDA_ARCH__ >= 900
#define TILE_FLOW 1
#else
#define TILE_FLOW 0
#endif

// Lets the launch's dependents start: called by a block once it has taken its last tile.
__device__ __forceinline__ void allow_dependents(const unsigned int* rows_done) {
#if TILE_FLOW
    if (rows_done != nullptr) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Waits for the launch before this one to end and its stores to be visible: the last
// thing a block does.
__device__ __forceinline__ void wait_for_launch_before(const unsigned int* rows_done) {
#if TILE_FLOW
    if (rows_done != nullptr) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Waits until the source rows that the tile at row y0 of `job`'s level reads with a halo
// of `halo` rows are stored (rows reflected at the level's borders lie among them): every
// row of tiles of the job making the source that holds one of them. A frame source is
// there before the first launch. Every thread calls it; it ends with a barrier where
// it waits.
__device__ __forceinline__ void wait_for_source(const unsigned int* rows_done, const LevelsJob& job,
                                                int y0, int halo) {
#if TILE_FLOW
    if (rows_done == nullptr || job.src_rows_done < 0) return;  // uniform
    int first_row = max(y0 - halo, 0), last_row = min(y0 + job.tile_h - 1 + halo, job.height - 1);
    if (job.source == SOURCE_PLANE_HALVED) {
        first_row *= 2;
        last_row *= 2;
    }
    if (threadIdx.x < 32) {
        const int last = last_row / job.src_tile_h;
        for (int r = first_row / job.src_tile_h + (int)threadIdx.x; r <= last; r += 32) {
            const unsigned int* done = rows_done + job.src_rows_done + r;
            unsigned int tiles;
            asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(tiles) : "l"(done) : "memory");
            while (tiles < (unsigned int)job.src_tiles_x) {
                __nanosleep(32);
                asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(tiles) : "l"(done) : "memory");
            }
            // Acquire once the row is seen complete (it also drops the SM's L1 lines,
            // which may hold parts of the source from before they were stored).
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(tiles) : "l"(done) : "memory");
        }
    }
    __syncthreads();
#endif
}

// The counter of row `row` of `job`'s tiles, or -1 where launches do not overlap.
__device__ __forceinline__ int tile_row_counter(const unsigned int* rows_done, const LevelsJob& job,
                                                int row) {
    return rows_done != nullptr ? job.rows_done + row : -1;
}

// Counts a stored tile in its row's counter (`counter`, -1: none), called after a
// barrier that follows every thread's stores of it, with release semantics, which
// order the block's stores (seen through the barrier) before it device-wide. The
// release waits for those stores to land: a block with another tile to make publishes
// a tile once it has loaded the next one, when they have.
__device__ __forceinline__ void publish_tile(unsigned int* rows_done, int counter) {
#if TILE_FLOW
    if (counter >= 0 && threadIdx.x == 0)
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(rows_done + counter) : "memory");
#endif
}
