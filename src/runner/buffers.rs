//! The worker's I/O buffer pool: one allocation aligned to 4096 bytes (what
//! O_DIRECT needs), a slot of `max_bs` bytes per in-flight request, filled
//! with incompressible random bytes before timing starts. With a memory
//! node (`--mem-node`, `--numa-node`) the pool is its own mapping, bound
//! to the node (mbind) before its first touch.

use std::alloc::{alloc_zeroed, dealloc, Layout};

use crate::dut::verify::fill_random;

pub const ALIGN: usize = 4096;

pub struct BufferPool {
    ptr: *mut u8,
    layout: Layout,
    slot_len: usize,
    slots: usize,
    /// An anonymous mapping of its own (bound to a node), not the heap's.
    mapped: bool,
}

impl BufferPool {
    pub fn new(slots: usize, slot_len: usize, seed: u64) -> anyhow::Result<BufferPool> {
        BufferPool::on_node(slots, slot_len, seed, None)
    }

    /// A pool whose pages are bound to `node` (None: the heap, wherever
    /// the kernel puts it).
    pub fn on_node(
        slots: usize,
        slot_len: usize,
        seed: u64,
        node: Option<u32>,
    ) -> anyhow::Result<BufferPool> {
        let slot_len = slot_len.div_ceil(ALIGN) * ALIGN;
        let total = slots
            .max(1)
            .checked_mul(slot_len)
            .ok_or_else(|| anyhow::anyhow!("buffer pool too large"))?;
        let layout = Layout::from_size_align(total, ALIGN)?;
        let ptr = match node {
            None => {
                // SAFETY: layout has non-zero size.
                unsafe { alloc_zeroed(layout) }
            }
            Some(n) => map_on_node(total, n)?,
        };
        if ptr.is_null() {
            anyhow::bail!("cannot allocate {} MiB of I/O buffers", total >> 20);
        }
        let mut pool = BufferPool {
            ptr,
            layout,
            slot_len,
            slots,
            mapped: node.is_some(),
        };
        fill_random(pool.as_mut_slice(), seed);
        Ok(pool)
    }

    #[inline(always)]
    pub fn slot_ptr(&self, slot: usize) -> *mut u8 {
        debug_assert!(slot < self.slots);
        // SAFETY: slot < slots, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot * self.slot_len) }
    }

    /// The bytes of one slot.
    pub fn slot(&mut self, slot: usize, len: usize) -> &mut [u8] {
        assert!(slot < self.slots && len <= self.slot_len);
        // SAFETY: in bounds per the assert; &mut self guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(slot), len) }
    }

    pub fn base(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the whole allocation, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

/// An anonymous mapping of `len` bytes bound to `node`, not yet touched.
fn map_on_node(len: usize, node: u32) -> anyhow::Result<*mut u8> {
    // SAFETY: a fresh private anonymous mapping; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        anyhow::bail!(
            "cannot map {} KiB of I/O buffers: {}",
            len >> 10,
            std::io::Error::last_os_error()
        );
    }
    let p = p.cast::<u8>();
    if let Err(e) = crate::measure::numa::bind_range(p as usize, len, node) {
        // SAFETY: the mapping made above, unused.
        unsafe { libc::munmap(p.cast(), len) };
        anyhow::bail!("cannot bind the I/O buffers to NUMA node {node} (mbind): {e}");
    }
    Ok(p)
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: mapped in `on_node` with this length.
            unsafe { libc::munmap(self.ptr.cast(), self.layout.size()) };
            return;
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_random_slots() {
        let mut p = BufferPool::new(4, 5000, 1).unwrap();
        assert_eq!(p.base() as usize % ALIGN, 0);
        assert_eq!(p.slot_ptr(1) as usize % ALIGN, 0);
        assert_eq!(p.len(), 4 * 8192);
        let s = p.slot(3, 8192);
        assert!(s.iter().filter(|&&b| b == 0).count() < 200, "random fill");
    }
}
