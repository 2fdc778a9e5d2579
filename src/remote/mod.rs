//! Remote storage iolab serves itself (see DESIGN.md: targets, topology).
//! So far: the server side of the NBD handshake, on the wire format the
//! nbd engine's codec defines; the target that serves requests after it
//! (io_uring, O_DIRECT, per-request stamps) is next (issue 12, item 4).

pub mod nbd_negotiate;
