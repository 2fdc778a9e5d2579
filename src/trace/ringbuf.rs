//! Parser of binary ftrace ring-buffer pages as read from
//! `per_cpu/cpuN/trace_pipe_raw`: the page header (base timestamp, commit size,
//! missed-events flags), then compressed event headers (type_len / time_delta),
//! time-extend and absolute-timestamp records and padding, yielding each event
//! record with its absolute timestamp.

use anyhow::{bail, Result};

use super::format::{HeaderEvent, HeaderPage};

/// Flags kept in the high bits of the page's commit word.
const RB_MISSED_EVENTS: u64 = 1 << 31;
const RB_MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 30) - 1;
/// Shift of the extended part of a time delta (the 27 bits of time_delta).
const TS_SHIFT: u32 = 27;

/// What a page said about itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageSummary {
    pub base_ts: u64,
    /// Bytes of event data committed on the page.
    pub commit: usize,
    pub events: usize,
    /// Events lost before this page (the kernel flags it; count if stored).
    pub missed: Option<u64>,
    /// The page said events were lost but not how many.
    pub missed_unknown: bool,
}

fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().unwrap_or([0; 4])))
}

fn rd_u64(b: &[u8], at: usize, size: usize) -> Option<u64> {
    match size {
        8 => b
            .get(at..at + 8)
            .map(|s| u64::from_ne_bytes(s.try_into().unwrap_or([0; 8]))),
        4 => rd_u32(b, at).map(u64::from),
        _ => None,
    }
}

/// Walk one page, calling `on_event(timestamp_ns, record)` for every data
/// event. `record` starts at the event's `common_type` field.
pub fn parse_page(
    page: &[u8],
    hp: &HeaderPage,
    he: &HeaderEvent,
    mut on_event: impl FnMut(u64, &[u8]),
) -> Result<PageSummary> {
    let Some(base_ts) = rd_u64(page, hp.timestamp_offset, 8) else {
        bail!(
            "ring-buffer page shorter than its header ({} bytes)",
            page.len()
        );
    };
    let Some(commit_word) = rd_u64(page, hp.commit_offset, hp.commit_size) else {
        bail!("ring-buffer page without a commit word");
    };
    let commit = (commit_word & COMMIT_MASK) as usize;
    if commit > hp.data_size || hp.data_offset + commit > page.len() {
        bail!(
            "ring-buffer page commit {commit} beyond the page ({} bytes)",
            page.len()
        );
    }
    let mut summary = PageSummary {
        base_ts,
        commit,
        ..Default::default()
    };
    if commit_word & RB_MISSED_EVENTS != 0 {
        if commit_word & RB_MISSED_STORED != 0 {
            summary.missed = rd_u64(page, hp.data_offset + commit, hp.commit_size);
        } else {
            summary.missed_unknown = true;
        }
    }
    let data = &page[hp.data_offset..hp.data_offset + commit];
    let mut ts = base_ts;
    let mut i = 0usize;
    while i + 4 <= data.len() {
        let hdr = rd_u32(data, i).unwrap_or(0);
        let type_len = hdr & 0x1f;
        let delta = u64::from(hdr >> 5);
        if type_len == he.padding {
            if delta == 0 {
                break; // the rest of the page is padding
            }
            let Some(len) = rd_u32(data, i + 4) else {
                break;
            };
            i += 4 + len as usize; // a discarded event
        } else if type_len == he.time_extend {
            let Some(ext) = rd_u32(data, i + 4) else {
                break;
            };
            ts = ts.wrapping_add((u64::from(ext) << TS_SHIFT) + delta);
            i += 8;
        } else if type_len == he.time_stamp {
            let Some(ext) = rd_u32(data, i + 4) else {
                break;
            };
            let abs = (u64::from(ext) << TS_SHIFT) | delta;
            // Only the low 59 bits are stored; the page stamp supplies the rest.
            ts = abs | (base_ts & !((1u64 << 59) - 1));
            i += 8;
        } else if type_len == 0 {
            let Some(len) = rd_u32(data, i + 4) else {
                break;
            };
            let len = len as usize;
            if len < 4 || i + 4 + len > data.len() {
                bail!("ring-buffer event at {i} has bad length {len}");
            }
            ts = ts.wrapping_add(delta);
            on_event(ts, &data[i + 8..i + 4 + len]);
            summary.events += 1;
            i += 4 + ((len + 3) & !3);
        } else if type_len <= he.data_max_type_len {
            let len = type_len as usize * 4;
            if i + 4 + len > data.len() {
                bail!("ring-buffer event at {i} overruns the commit");
            }
            ts = ts.wrapping_add(delta);
            on_event(ts, &data[i + 4..i + 4 + len]);
            summary.events += 1;
            i += 4 + len;
        } else {
            bail!("ring-buffer event at {i} has unknown type_len {type_len}");
        }
    }
    Ok(summary)
}
