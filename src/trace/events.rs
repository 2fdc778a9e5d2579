//! Typed trace events: the block, io_uring, syscall, irq, NVMe host and nvmet
//! tracepoints iolab uses, decoded from raw records through the field layouts of their `format`
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
    /// nvme:nvme_setup_cmd, the host's NVMe driver building a command
    NvmeSetup,
    /// nvme:nvme_complete_rq, the host's NVMe driver completing a request
    NvmeComplete,
    /// nvmet:nvmet_req_init, the kernel's target taking a command
    NvmetInit,
    /// nvmet:nvmet_req_complete, the kernel's target completing it
    NvmetComplete,
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
            Kind::NvmeSetup => ("nvme", "nvme_setup_cmd"),
            Kind::NvmeComplete => ("nvme", "nvme_complete_rq"),
            Kind::NvmetInit => ("nvmet", "nvmet_req_init"),
            Kind::NvmetComplete => ("nvmet", "nvmet_req_complete"),
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

    /// The NVMe-oF tracepoints, host then target, in a command's order.
    pub const NVME: [Kind; 4] = [
        Kind::NvmeSetup,
        Kind::NvmetInit,
        Kind::NvmetComplete,
        Kind::NvmeComplete,
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
            .chain(Kind::NVME.iter())
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
/// irq: the irq number; nvme and nvmet: the starting LBA of a read or write
/// (setup and init; 0 otherwise), the queue id, and in `c` the command id,
/// with the opcode (setup, init) or the status (completions) in `dev`.
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
    /// Block: error (complete); io_uring: the ring (ctx) pointer; nvme and
    /// nvmet: the command id.
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
    /// The command dwords from cdw10 on (nvme_setup_cmd, nvmet_req_init).
    cdw10: Option<Field>,
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
                Kind::NvmeSetup | Kind::NvmetInit => (get("opcode"), None, get("qid"), get("cid")),
                Kind::NvmeComplete | Kind::NvmetComplete => {
                    (get("status"), None, get("qid"), get("cid"))
                }
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
                    cdw10: get("cdw10"),
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
        let a = match &l.cdw10 {
            Some(f) if is_io(l.kind, rd(&l.dev), rd(&l.b)) => f.read_le_u64_head(rec).unwrap_or(0),
            _ => rd(&l.a) as u64,
        };
        Some(Event {
            ts,
            cpu,
            pid: l.pid.read_i64(rec)? as i32,
            kind: l.kind,
            dev: rd(&l.dev) as u32,
            a,
            b: rd(&l.b),
            rwbs,
            c: rd(&l.c) as u64,
        })
    }
}

/// NVMe opcodes whose cdw10 and cdw11 hold the starting LBA.
const NVME_CMD_WRITE: i64 = 0x01;
const NVME_CMD_READ: i64 = 0x02;

/// A read or write on an I/O queue (queue 0 is the admin queue, whose
/// opcodes mean other commands).
fn is_io(kind: Kind, opcode: i64, qid: i64) -> bool {
    matches!(kind, Kind::NvmeSetup | Kind::NvmetInit)
        && qid != 0
        && matches!(opcode, NVME_CMD_WRITE | NVME_CMD_READ)
}

/// Kernel-internal dev_t as the block tracepoints print it (major << 20 | minor).
pub fn kdev(major: u32, minor: u32) -> u32 {
    (major << 20) | minor
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of Debian 6.1's nvme_setup_cmd and nvmet_req_complete
    /// (`format` files, the print lines left out).
    const SETUP: &str = "name: nvme_setup_cmd\nID: 1344\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:char disk[32];\toffset:8;\tsize:32;\tsigned:1;\n\tfield:int ctrl_id;\toffset:40;\tsize:4;\tsigned:1;\n\tfield:int qid;\toffset:44;\tsize:4;\tsigned:1;\n\tfield:u8 opcode;\toffset:48;\tsize:1;\tsigned:0;\n\tfield:u16 cid;\toffset:52;\tsize:2;\tsigned:0;\n\tfield:u8 cdw10[24];\toffset:61;\tsize:24;\tsigned:0;\n";
    const TARGET_DONE: &str = "name: nvmet_req_complete\nID: 1339\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:u16 ctrl_id;\toffset:8;\tsize:2;\tsigned:0;\n\tfield:int qid;\toffset:44;\tsize:4;\tsigned:1;\n\tfield:int cid;\toffset:48;\tsize:4;\tsigned:1;\n\tfield:u16 status;\toffset:64;\tsize:2;\tsigned:0;\n";

    fn setup_record(qid: i32, opcode: u8, slba: u64) -> Vec<u8> {
        let mut r = vec![0u8; 88];
        r[0..2].copy_from_slice(&1344u16.to_ne_bytes());
        r[44..48].copy_from_slice(&qid.to_ne_bytes());
        r[48] = opcode;
        r[52..54].copy_from_slice(&0x1007u16.to_ne_bytes());
        r[61..69].copy_from_slice(&slba.to_le_bytes());
        r
    }

    #[test]
    fn nvme_commands_decode_by_their_format_files() {
        let dec = Decoder::new(&[
            EventFormat::parse("nvme", SETUP).unwrap(),
            EventFormat::parse("nvmet", TARGET_DONE).unwrap(),
        ])
        .unwrap();
        let e = dec.decode(5, 0, &setup_record(1, 0x02, 0x1234)).unwrap();
        assert_eq!(
            (e.kind, e.a, e.b, e.c, e.dev),
            (Kind::NvmeSetup, 0x1234, 1, 0x1007, 0x02)
        );
        // An admin command's dwords are no LBA.
        let admin = dec.decode(5, 0, &setup_record(0, 0x02, 0x1234)).unwrap();
        assert_eq!(admin.a, 0);
        let mut r = vec![0u8; 72];
        r[0..2].copy_from_slice(&1339u16.to_ne_bytes());
        r[44..48].copy_from_slice(&3i32.to_ne_bytes());
        r[48..52].copy_from_slice(&9i32.to_ne_bytes());
        let e = dec.decode(7, 0, &r).unwrap();
        assert_eq!((e.kind, e.b, e.c), (Kind::NvmetComplete, 3, 9));
    }
}
