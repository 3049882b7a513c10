use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use super::*;
use crate::error::{CudaError, Error};
use crate::msgs::{decode, encode, Header, Image, Time};

/// Ordinary memory standing in for the driver's, which records what is live.
#[derive(Default)]
struct Recording {
    live: Arc<Mutex<HashMap<usize, usize>>>,
    made: Arc<AtomicU64>,
    refuse: Arc<AtomicBool>,
}

impl Recording {
    fn live_bytes(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = self.live.lock().unwrap().values().copied().collect();
        sizes.sort();
        sizes
    }

    fn handle(&self) -> Self {
        Self {
            live: self.live.clone(),
            made: self.made.clone(),
            refuse: self.refuse.clone(),
        }
    }
}

impl PageLockedAllocator for Recording {
    fn allocate(&self, bytes: usize) -> Result<NonNull<u8>> {
        if self.refuse.load(Ordering::Relaxed) {
            return Err(Error::Cuda(CudaError::Unavailable(
                "out of page-locked memory".into(),
            )));
        }
        let layout = Layout::from_size_align(bytes, 64).unwrap();
        // SAFETY: `layout` has a nonzero size (the pool asks for whole 64 KiB pages).
        let ptr = NonNull::new(unsafe { std::alloc::alloc(layout) }).unwrap();
        self.live
            .lock()
            .unwrap()
            .insert(ptr.as_ptr() as usize, bytes);
        self.made.fetch_add(1, Ordering::Relaxed);
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: NonNull<u8>) {
        let bytes = self.live.lock().unwrap().remove(&(ptr.as_ptr() as usize));
        let bytes = bytes.expect("freed a block this allocator made, once");
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), Layout::from_size_align(bytes, 64).unwrap()) };
    }
}

fn pool() -> (Arc<PageLockedPool>, Recording) {
    let memory = Recording::default();
    (PageLockedPool::new(Box::new(memory.handle())), memory)
}

fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn a_steady_stream_of_frames_reuses_one_block() {
    let (pool, memory) = pool();
    for seed in 0..100 {
        let bytes = frame(1920 * 1080, seed);
        let copy = pool.copy_of(&bytes).expect("a block");
        assert_eq!(copy.as_slice(), &bytes[..]);
    }
    assert_eq!(memory.made.load(Ordering::Relaxed), 1);
    assert_eq!(
        pool.stats(),
        PoolStats {
            decoded: 100,
            missed: 0,
            allocated: 1
        }
    );
}

#[test]
fn frames_beyond_the_blocks_or_too_large_go_to_ordinary_memory_and_are_counted() {
    let (pool, memory) = pool();
    let held: Vec<_> = (0..MAX_BLOCKS)
        .map(|seed| pool.copy_of(&frame(640 * 480, seed as u8)).unwrap())
        .collect();
    assert!(pool.copy_of(&frame(640 * 480, 9)).is_none());
    assert!(pool.copy_of(&vec![0; MAX_BLOCK_BYTES + 1]).is_none());
    assert_eq!(memory.live_bytes().len(), MAX_BLOCKS);
    assert_eq!(pool.stats().missed, 2);
    // Each still holds its own frame.
    for (seed, copy) in held.iter().enumerate() {
        assert_eq!(copy.as_slice(), &frame(640 * 480, seed as u8)[..]);
    }
    drop(held);
    assert!(pool.copy_of(&frame(640 * 480, 9)).is_some());
}

#[test]
fn a_larger_frame_replaces_a_free_block_when_the_pool_is_full() {
    let (pool, memory) = pool();
    let small: Vec<_> = (0..MAX_BLOCKS)
        .map(|seed| pool.copy_of(&frame(100_000, seed as u8)).unwrap())
        .collect();
    drop(small);
    let large = pool
        .copy_of(&frame(3_000_000, 1))
        .expect("room made for it");
    assert_eq!(large.as_slice(), &frame(3_000_000, 1)[..]);
    let sizes = memory.live_bytes();
    assert_eq!(sizes.len(), MAX_BLOCKS);
    assert_eq!(sizes.iter().filter(|&&bytes| bytes >= 3_000_000).count(), 1);
    // The smallest block that fits is taken: the large one stays for large frames.
    let again = pool.copy_of(&frame(100_000, 2)).unwrap();
    assert!(again.as_slice().as_ptr() != large.as_slice().as_ptr());
}

#[test]
fn a_refused_allocation_leaves_the_frame_in_ordinary_memory() {
    let (pool, memory) = pool();
    memory.refuse.store(true, Ordering::Relaxed);
    assert!(pool.copy_of(&frame(4096, 0)).is_none());
    assert_eq!(pool.stats().missed, 1);
}

#[test]
fn every_block_is_freed_once_the_pool_and_its_frames_are_gone() {
    let (pool, memory) = pool();
    let kept = pool.copy_of(&frame(5000, 0)).unwrap();
    let shared = kept.clone();
    let _ = pool.copy_of(&frame(7000, 0)).unwrap();
    drop(pool);
    drop(kept);
    assert_eq!(memory.live_bytes().len(), 2, "a held frame keeps its pool");
    assert_eq!(shared.as_slice(), &frame(5000, 0)[..]);
    drop(shared);
    assert!(memory.live_bytes().is_empty());
}

fn image(data: Vec<u8>) -> Image {
    Image {
        header: Header {
            stamp: Time { sec: 7, nanosec: 8 },
            frame_id: "camera".into(),
        },
        height: 480,
        width: 640,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: 640,
        data: data.into(),
    }
}

// The only test that registers a pool: the registration is the process's.
#[test]
fn image_data_is_decoded_into_the_registered_pool_while_it_lives() {
    let sent = image(frame(640 * 480, 3));
    let cdr = encode(&sent).unwrap();
    let (pool, _memory) = pool();
    decode_frames_into(Some(&pool));
    let received: Image = decode(&cdr).unwrap();
    assert_eq!(received, sent);
    let block = received.data.page_locked().expect("decoded into the pool");
    assert_eq!(block.as_slice(), &sent.data[..]);
    let frame = crate::msgs::raw_frame(&received, u64::MAX).unwrap();
    assert!(frame
        .page_locked
        .is_some_and(|b| b.as_slice().as_ptr() == frame.data.as_ptr()));
    assert_eq!(pool.stats().decoded, 1);

    drop(received);
    drop(pool);
    let after: Image = decode(&cdr).unwrap();
    assert_eq!(after, sent);
    assert!(
        after.data.page_locked().is_none(),
        "no pool: ordinary memory"
    );
    decode_frames_into(None);
}
