//! The memory image messages are decoded into.
//!
//! A discrete GPU's copy engine uploads from page-locked host memory only, so a frame
//! decoded into ordinary memory is copied once more before its upload: on the lent
//! H200s that copy was ~100 µs of a 1080p mono8 frame's ~0.5 ms through the node and
//! ~300 µs of a bgr8 frame's. A backend that uploads frames offers a
//! [`PageLockedPool`] ([`crate::Extractor::receive_pool`]); while the node holds it
//! ([`decode_frames_into`]), the data of every `sensor_msgs/Image` a transport decodes
//! goes straight into one of the pool's blocks ([`FrameBytes`]), and the frame is
//! uploaded from where it was decoded.
//!
//! The pool is bounded: at most [`MAX_BLOCKS`] blocks of at most [`MAX_BLOCK_BYTES`]
//! each. A frame that finds no free block (more frames alive at once than blocks, or
//! larger than a block may be) is decoded into ordinary memory, as without a pool,
//! and counted ([`PoolStats::missed`]).

use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::error::Result;

/// Blocks a pool holds at most: the frames alive at once in a node (one queued per
/// camera, two in flight, one being decoded, the stereo pairer's) with room to spare.
pub const MAX_BLOCKS: usize = 8;

/// The largest block: a 3840x2160 frame of 4 bytes a pixel with room to spare. Larger
/// frames are rare enough to pay the copy, and a flood of absurd sizes must not pin
/// host memory.
pub const MAX_BLOCK_BYTES: usize = 64 << 20;

/// Where page-locked memory comes from (the GPU driver).
pub trait PageLockedAllocator: Send + Sync {
    /// `bytes` of page-locked host memory.
    fn allocate(&self, bytes: usize) -> Result<NonNull<u8>>;

    /// Frees a block this allocator made.
    ///
    /// # Safety
    /// `ptr` came from `allocate` of this allocator, is freed once, and no copy
    /// reads it any more.
    unsafe fn free(&self, ptr: NonNull<u8>);
}

/// A block of page-locked memory owned by a pool: a plain description, which one owner
/// at a time holds (the pool's free list, or the [`Held`] it was handed to).
#[derive(Clone, Copy)]
struct Block {
    ptr: NonNull<u8>,
    capacity: usize,
}

// SAFETY: a block is plain memory; whoever holds it owns it alone (a free block in
// the pool's list, or the one `PageLockedBytes` it was handed to).
unsafe impl Send for Block {}
unsafe impl Sync for Block {}

/// What a pool did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Frames decoded into a block.
    pub decoded: u64,
    /// Frames decoded into ordinary memory: no free block, or too large for one.
    pub missed: u64,
    /// Blocks allocated.
    pub allocated: u64,
}

struct Free {
    blocks: Vec<Block>,
    /// Blocks allocated and not freed, in the list or handed out.
    live: usize,
}

/// Page-locked blocks that frames are decoded into and recycled from.
pub struct PageLockedPool {
    allocator: Box<dyn PageLockedAllocator>,
    free: Mutex<Free>,
    decoded: AtomicU64,
    missed: AtomicU64,
    allocated: AtomicU64,
}

impl PageLockedPool {
    pub fn new(allocator: Box<dyn PageLockedAllocator>) -> Arc<Self> {
        Arc::new(Self {
            allocator,
            free: Mutex::new(Free {
                blocks: Vec::new(),
                live: 0,
            }),
            decoded: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
        })
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            decoded: self.decoded.load(Ordering::Relaxed),
            missed: self.missed.load(Ordering::Relaxed),
            allocated: self.allocated.load(Ordering::Relaxed),
        }
    }

    /// A copy of `bytes` in one of the pool's blocks, or `None` (counted) when no block
    /// can take it.
    pub fn copy_of(self: &Arc<Self>, bytes: &[u8]) -> Option<PageLockedBytes> {
        let block = self.block_for(bytes.len());
        let counter = match block {
            Some(_) => &self.decoded,
            None => &self.missed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let block = block?;
        // SAFETY: the block holds at least `bytes.len()` bytes and is this caller's alone.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), block.ptr.as_ptr(), bytes.len()) };
        Some(PageLockedBytes(Arc::new(Held {
            block,
            len: bytes.len(),
            pool: self.clone(),
        })))
    }

    /// The smallest free block of at least `bytes`; else a new one while there is room
    /// (a free block too small for today's frames makes room for it).
    fn block_for(&self, bytes: usize) -> Option<Block> {
        if bytes > MAX_BLOCK_BYTES {
            return None;
        }
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let fitting = free
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, block)| block.capacity >= bytes)
            .min_by_key(|(_, block)| block.capacity)
            .map(|(index, _)| index);
        if let Some(index) = fitting {
            return Some(free.blocks.swap_remove(index));
        }
        if free.live == MAX_BLOCKS {
            let smallest = free
                .blocks
                .iter()
                .enumerate()
                .min_by_key(|(_, block)| block.capacity)
                .map(|(index, _)| index)?;
            let block = free.blocks.swap_remove(smallest);
            // SAFETY: a free block is read by no copy (its last holder's upload was
            // waited for before the holder let it go).
            unsafe { self.allocator.free(block.ptr) };
            free.live -= 1;
        }
        // Whole 64 KiB pages, so that slightly different frames share blocks.
        let capacity = bytes.max(1).next_multiple_of(64 << 10);
        match self.allocator.allocate(capacity) {
            Ok(ptr) => {
                free.live += 1;
                self.allocated.fetch_add(1, Ordering::Relaxed);
                Some(Block { ptr, capacity })
            }
            Err(error) => {
                log::warn!("cannot allocate page-locked memory for frames: {error}");
                None
            }
        }
    }

    fn give_back(&self, block: Block) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        free.blocks.push(block);
    }
}

impl Drop for PageLockedPool {
    fn drop(&mut self) {
        let free = self.free.get_mut().unwrap_or_else(PoisonError::into_inner);
        for block in free.blocks.drain(..) {
            // SAFETY: free blocks are read by no copy, and each is freed once.
            unsafe { self.allocator.free(block.ptr) };
        }
    }
}

/// A block handed out, and the pool it goes back to (kept alive by its blocks, so
/// that a frame outliving its node still frees its memory).
struct Held {
    block: Block,
    len: usize,
    pool: Arc<PageLockedPool>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.pool.give_back(self.block);
    }
}

/// Frame bytes in a page-locked block. Clones share the block, which goes back to its
/// pool when the last of them is dropped: a backend that uploads from it keeps a
/// clone until the upload is done.
#[derive(Clone)]
pub struct PageLockedBytes(Arc<Held>);

impl fmt::Debug for PageLockedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PageLockedBytes({} bytes)", self.0.len)
    }
}

impl PageLockedBytes {
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the block holds `len` initialised bytes and nobody writes them while
        // it is held.
        unsafe { std::slice::from_raw_parts(self.0.block.ptr.as_ptr(), self.0.len) }
    }
}

/// The data of an image message: in a page-locked block where a pool was offered,
/// otherwise ordinary memory. Reads as a byte slice either way.
#[derive(Clone, Default)]
pub struct FrameBytes(Repr);

#[derive(Clone)]
enum Repr {
    Heap(Vec<u8>),
    PageLocked(PageLockedBytes),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Heap(Vec::new())
    }
}

impl FrameBytes {
    /// A copy of `bytes`, in a block of the pool frames are decoded into if there is
    /// one and it has a block free.
    pub fn received(bytes: &[u8]) -> Self {
        let pool = RECEIVE_POOL
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .upgrade();
        match pool.and_then(|pool| pool.copy_of(bytes)) {
            Some(page_locked) => Self(Repr::PageLocked(page_locked)),
            None => Self(Repr::Heap(bytes.to_vec())),
        }
    }

    /// The page-locked block the bytes lie in, if they do.
    pub fn page_locked(&self) -> Option<&PageLockedBytes> {
        match &self.0 {
            Repr::PageLocked(bytes) => Some(bytes),
            Repr::Heap(_) => None,
        }
    }
}

impl Deref for FrameBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Heap(bytes) => bytes,
            Repr::PageLocked(bytes) => bytes.as_slice(),
        }
    }
}

impl From<Vec<u8>> for FrameBytes {
    fn from(bytes: Vec<u8>) -> Self {
        Self(Repr::Heap(bytes))
    }
}

impl From<FrameBytes> for Vec<u8> {
    fn from(bytes: FrameBytes) -> Self {
        match bytes.0 {
            Repr::Heap(bytes) => bytes,
            Repr::PageLocked(bytes) => bytes.as_slice().to_vec(),
        }
    }
}

impl PartialEq for FrameBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for FrameBytes {}

impl fmt::Debug for FrameBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = match self.0 {
            Repr::Heap(_) => "heap",
            Repr::PageLocked(_) => "page-locked",
        };
        write!(f, "FrameBytes({} bytes, {place})", self.len())
    }
}

/// One copy in and out of CDR, not one serde call per byte (25 M for a 4K frame).
impl Serialize for FrameBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self)
    }
}

impl<'de> Deserialize<'de> for FrameBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_bytes(FrameBytesVisitor)
    }
}

struct FrameBytesVisitor;

impl<'de> Visitor<'de> for FrameBytesVisitor {
    type Value = FrameBytes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a byte sequence")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> std::result::Result<FrameBytes, E> {
        Ok(FrameBytes::received(bytes))
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> std::result::Result<FrameBytes, E> {
        Ok(bytes.into())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<FrameBytes, A::Error> {
        // Bounded by what the message holds: a sequence is read, not trusted, for its size.
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(byte) = seq.next_element()? {
            bytes.push(byte);
        }
        Ok(bytes.into())
    }
}

/// The pool frames are decoded into, held weakly: it lives as long as its backend.
static RECEIVE_POOL: RwLock<Weak<PageLockedPool>> = RwLock::new(Weak::new());

/// From now on, image data is decoded into `pool` (ordinary memory with `None`).
/// The process has one: a node registers its extractor's.
pub fn decode_frames_into(pool: Option<&Arc<PageLockedPool>>) {
    let mut current = RECEIVE_POOL.write().unwrap_or_else(PoisonError::into_inner);
    *current = pool.map_or_else(Weak::new, Arc::downgrade);
}

#[cfg(test)]
mod tests;
