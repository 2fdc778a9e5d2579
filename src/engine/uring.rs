//! uring engine (to be written).
