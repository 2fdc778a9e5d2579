//! mmap engine (to be written).
