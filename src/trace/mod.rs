//! Per-request latency breakdown through the I/O stack (tracefs).
