//! aio engine (to be written).
