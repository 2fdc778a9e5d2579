//! Wire formats shared by iolab's initiators (`engine::nbd`,
//! `engine::nvmetcp`) and its targets (`iolab serve`: `target::nbd_target`,
//! `target::nvme_target`): pure encoding and decoding, no sockets, every
//! field read from the wire checked against its bound (docs/safety.md,
//! "Hostile peers").

pub mod nbd;
pub mod nvme;
