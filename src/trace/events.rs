//! Typed trace events: the block, io_uring, syscall and irq tracepoints iolab
//! uses, decoded from raw records through the field layouts of their `format`
//! files (never through hard-coded offsets).

use std::collections::HashMap;

use anyhow::Result;

use super::format::{EventFormat, Field};

/// Which tracepoint an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Kind {
    /// block_bio_queue (Q)
    Queue,
    /// block_getrq (G)
    GetRq,
    /// block_rq_insert (I)
    Insert,
    /// block_rq_issue (D)
    Issue,
    /// block_rq_complete (C)
    Complete,
    /// block_bio_backmerge (M)
    BackMerge,
    /// block_bio_frontmerge (F)
    FrontMerge,
    /// block_rq_requeue (R)
    Requeue,
    /// block_split (X)
    Split,
    UringSubmit,
    UringComplete,
    SysEnter,
    SysExit,
    /// irq_handler_entry of the device's interrupt
    Irq,
}

impl Kind {
    /// (system, event) of the tracepoint.
    pub fn tracepoint(self) -> (&'static str, &'static str) {
        match self {
            Kind::Queue => ("block", "block_bio_queue"),
            Kind::GetRq => ("block", "block_getrq"),
            Kind::Insert => ("block", "block_rq_insert"),
            Kind::Issue => ("block", "block_rq_issue"),
            Kind::Complete => ("block", "block_rq_complete"),
            Kind::BackMerge => ("block", "block_bio_backmerge"),
            Kind::FrontMerge => ("block", "block_bio_frontmerge"),
            Kind::Requeue => ("block", "block_rq_requeue"),
            Kind::Split => ("block", "block_split"),
            Kind::UringSubmit => ("io_uring", "io_uring_submit_req"),
            Kind::UringComplete => ("io_uring", "io_uring_complete"),
            Kind::SysEnter => ("raw_syscalls", "sys_enter"),
            Kind::SysExit => ("raw_syscalls", "sys_exit"),
            Kind::Irq => ("irq", "irq_handler_entry"),
        }
    }

    pub const BLOCK: [Kind; 9] = [
        Kind::Queue,
        Kind::GetRq,
        Kind::Insert,
        Kind::Issue,
        Kind::Complete,
        Kind::BackMerge,
        Kind::FrontMerge,
        Kind::Requeue,
        Kind::Split,
    ];

    pub fn from_tracepoint(system: &str, name: &str) -> Option<Kind> {
        Kind::BLOCK
            .iter()
            .chain(
                [
                    Kind::UringSubmit,
                    Kind::UringComplete,
                    Kind::SysEnter,
                    Kind::SysExit,
                    Kind::Irq,
                ]
                .iter(),
            )
            .copied()
            .find(|k| k.tracepoint() == (system, name))
    }

    pub fn is_block(self) -> bool {
        Kind::BLOCK.contains(&self)
    }
}

/// One decoded event. The meaning of `a` and `b` depends on the kind:
/// block: sector and nr_sector (split: sector and new_sector);
/// io_uring: user_data and result; syscalls: syscall nr and return value;
/// irq: the irq number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub ts: u64,
    pub cpu: u16,
    pub pid: i32,
    pub kind: Kind,
    pub dev: u32,
    pub a: u64,
    pub b: i64,
    /// blktrace rwbs flags ("R", "WS", "FWFS", ...), NUL padded.
    pub rwbs: [u8; 8],
    /// Block: error (complete); io_uring: the ring (ctx) pointer.
    pub c: u64,
}

impl Event {
    pub fn rwbs_str(&self) -> &str {
        let end = self
            .rwbs
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(self.rwbs.len());
        std::str::from_utf8(&self.rwbs[..end]).unwrap_or("")
    }

    pub fn is_write(&self) -> bool {
        self.rwbs_str().contains('W')
    }
}

struct Layout {
    kind: Kind,
    pid: Field,
    dev: Option<Field>,
    a: Option<Field>,
    b: Option<Field>,
    c: Option<Field>,
    rwbs: Option<Field>,
}

/// Decodes raw records by their `common_type` id.
pub struct Decoder {
    by_id: HashMap<u16, Layout>,
    type_field: Field,
}

impl Decoder {
    pub fn new(formats: &[EventFormat]) -> Result<Decoder> {
        let mut by_id = HashMap::new();
        let mut type_field = None;
        for f in formats {
            let Some(kind) = Kind::from_tracepoint(&f.system, &f.name) else {
                continue;
            };
            type_field.get_or_insert_with(|| f.field("common_type").cloned());
            let get = |n: &str| f.field(n).cloned();
            let (dev, a, b, c) = match kind {
                Kind::Split => (get("dev"), get("sector"), get("new_sector"), None),
                Kind::Complete => (get("dev"), get("sector"), get("nr_sector"), get("error")),
                k if k.is_block() => (get("dev"), get("sector"), get("nr_sector"), None),
                Kind::UringSubmit => (None, get("user_data"), get("opcode"), get("ctx")),
                Kind::UringComplete => (None, get("user_data"), get("res"), get("ctx")),
                Kind::SysEnter => (None, get("id"), None, None),
                Kind::SysExit => (None, get("id"), get("ret"), None),
                Kind::Irq => (None, get("irq"), None, None),
                _ => (None, None, None, None),
            };
            by_id.insert(
                f.id,
                Layout {
                    kind,
                    pid: f.need("common_pid")?.clone(),
                    dev,
                    a,
                    b,
                    c,
                    rwbs: get("rwbs"),
                },
            );
        }
        let type_field = type_field.flatten().unwrap_or(Field {
            name: "common_type".into(),
            ctype: "unsigned short".into(),
            offset: 0,
            size: 2,
            signed: false,
            data_loc: false,
            array: false,
        });
        Ok(Decoder { by_id, type_field })
    }

    /// Decode one record; `None` for event types iolab does not use.
    pub fn decode(&self, ts: u64, cpu: u16, rec: &[u8]) -> Option<Event> {
        let id = self.type_field.read_u64(rec)? as u16;
        let l = self.by_id.get(&id)?;
        let rd = |f: &Option<Field>| f.as_ref().and_then(|f| f.read_i64(rec)).unwrap_or(0);
        let mut rwbs = [0u8; 8];
        if let Some(s) = l.rwbs.as_ref().and_then(|f| f.read_str(rec)) {
            let n = s.len().min(8);
            rwbs[..n].copy_from_slice(&s.as_bytes()[..n]);
        }
        Some(Event {
            ts,
            cpu,
            pid: l.pid.read_i64(rec)? as i32,
            kind: l.kind,
            dev: rd(&l.dev) as u32,
            a: rd(&l.a) as u64,
            b: rd(&l.b),
            rwbs,
            c: rd(&l.c) as u64,
        })
    }
}

/// Kernel-internal dev_t as the block tracepoints print it (major << 20 | minor).
pub fn kdev(major: u32, minor: u32) -> u32 {
    (major << 20) | minor
}
