//! Parser of tracefs event `format` files: event id, field names, offsets,
//! sizes, signedness and `__data_loc` strings, read at run time so iolab never
//! hard-codes a kernel's record layout.

use anyhow::{anyhow, bail, Context, Result};

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The C type as printed by the kernel (e.g. `unsigned int`, `char[10]`).
    pub ctype: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc`: the record holds (len << 16 | offset) of a dynamic array.
    pub data_loc: bool,
    /// Fixed-size array field (e.g. `char rwbs[10]`).
    pub array: bool,
}

/// One event's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parse the text of `events/<system>/<name>/format`.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = t.strip_prefix("ID:") {
                id = Some(
                    v.trim()
                        .parse::<u16>()
                        .with_context(|| format!("bad ID line {t:?}"))?,
                );
            } else if t.starts_with("field:") {
                fields.push(parse_field(t)?);
            }
        }
        Ok(EventFormat {
            system: system.to_string(),
            name: name.ok_or_else(|| anyhow!("format file has no name: line"))?,
            id: id.ok_or_else(|| anyhow!("format file has no ID: line"))?,
            fields,
        })
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// A field that must exist (with the event named in the error).
    pub fn need(&self, name: &str) -> Result<&Field> {
        self.field(name)
            .ok_or_else(|| anyhow!("event {}/{} has no field {name:?}", self.system, self.name))
    }
}

fn parse_field(line: &str) -> Result<Field> {
    // field:unsigned int nr_sector;	offset:24;	size:4;	signed:0;
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let p = part.trim();
        if let Some(v) = p.strip_prefix("field:") {
            decl = Some(v.trim().to_string());
        } else if let Some(v) = p.strip_prefix("offset:") {
            offset = Some(v.trim().parse::<usize>()?);
        } else if let Some(v) = p.strip_prefix("size:") {
            size = Some(v.trim().parse::<usize>()?);
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or_else(|| anyhow!("bad field line {line:?}"))?;
    let (offset, size) = match (offset, size) {
        (Some(o), Some(s)) => (o, s),
        _ => bail!("field line without offset/size: {line:?}"),
    };
    let data_loc = decl.starts_with("__data_loc") || decl.starts_with("__rel_loc");
    // The name is the last identifier, before any `[N]`.
    let mut base = String::new();
    let mut depth = 0;
    for c in decl.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => base.push(c),
            _ => {}
        }
    }
    let base = base.trim_end();
    let name = base
        .rsplit(|c: char| c.is_whitespace() || c == '*')
        .next()
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        bail!("field without a name: {line:?}");
    }
    let array = decl.contains('[') && !data_loc;
    let ctype = base[..base.len() - name.len()].trim().to_string();
    Ok(Field {
        name,
        ctype,
        offset,
        size,
        signed,
        data_loc,
        array,
    })
}

impl Field {
    /// Read an integer field (1, 2, 4 or 8 bytes, little endian host), sign-extended if signed.
    pub fn read_i64(&self, rec: &[u8]) -> Option<i64> {
        let b = rec.get(self.offset..self.offset + self.size)?;
        Some(match (self.size, self.signed) {
            (1, false) => b[0] as i64,
            (1, true) => b[0] as i8 as i64,
            (2, false) => u16::from_ne_bytes([b[0], b[1]]) as i64,
            (2, true) => i16::from_ne_bytes([b[0], b[1]]) as i64,
            (4, false) => u32::from_ne_bytes(b.try_into().ok()?) as i64,
            (4, true) => i32::from_ne_bytes(b.try_into().ok()?) as i64,
            (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    pub fn read_u64(&self, rec: &[u8]) -> Option<u64> {
        self.read_i64(rec).map(|v| v as u64)
    }

    /// The first 8 bytes of a byte array field as a little-endian integer
    /// (an NVMe command's SLBA in cdw10 and cdw11, as the wire lays it out).
    pub fn read_le_u64_head(&self, rec: &[u8]) -> Option<u64> {
        if self.size < 8 {
            return None;
        }
        let b = rec.get(self.offset..self.offset + 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    /// A fixed char array or a `__data_loc char[]` string, up to its NUL.
    pub fn read_str<'a>(&self, rec: &'a [u8]) -> Option<&'a str> {
        let bytes = if self.data_loc {
            let loc = u32::from_ne_bytes(rec.get(self.offset..self.offset + 4)?.try_into().ok()?);
            let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
            let off = if self.ctype.starts_with("__rel_loc") {
                self.offset + 4 + off
            } else {
                off
            };
            rec.get(off..off + len)?
        } else {
            rec.get(self.offset..self.offset + self.size)?
        };
        let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
        std::str::from_utf8(&bytes[..end]).ok()
    }
}

/// Layout of the ring-buffer page header, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPage {
    pub timestamp_offset: usize,
    pub commit_offset: usize,
    pub commit_size: usize,
    pub data_offset: usize,
    /// Bytes of event data a page can hold.
    pub data_size: usize,
}

impl HeaderPage {
    pub fn parse(text: &str) -> Result<HeaderPage> {
        let mut ts = None;
        let mut commit = None;
        let mut data = None;
        for line in text.lines() {
            let t = line.trim();
            if !t.starts_with("field:") {
                continue;
            }
            let f = parse_field(t)?;
            match f.name.as_str() {
                "timestamp" => ts = Some(f),
                "commit" => commit = Some(f),
                "data" => data = Some(f),
                _ => {}
            }
        }
        let (ts, commit, data) = match (ts, commit, data) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => bail!("header_page lacks timestamp/commit/data fields"),
        };
        Ok(HeaderPage {
            timestamp_offset: ts.offset,
            commit_offset: commit.offset,
            commit_size: commit.size,
            data_offset: data.offset,
            data_size: data.size,
        })
    }

    /// Whole page size (header + data).
    pub fn page_size(&self) -> usize {
        self.data_offset + self.data_size
    }
}

/// The compressed event header's special type_len values, from `events/header_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderEvent {
    pub padding: u32,
    pub time_extend: u32,
    pub time_stamp: u32,
    pub data_max_type_len: u32,
}

impl Default for HeaderEvent {
    fn default() -> Self {
        HeaderEvent {
            padding: 29,
            time_extend: 30,
            time_stamp: 31,
            data_max_type_len: 28,
        }
    }
}

impl HeaderEvent {
    pub fn parse(text: &str) -> Result<HeaderEvent> {
        let mut h = HeaderEvent::default();
        let mut seen = 0;
        for line in text.lines() {
            let t = line.trim();
            let num = |s: &str| -> Result<u32> {
                s.rsplit("==")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .parse::<u32>()
                    .map_err(|e| anyhow!("header_event {t:?}: {e}"))
            };
            if t.starts_with("padding") {
                h.padding = num(t)?;
                seen += 1;
            } else if t.starts_with("time_extend") {
                h.time_extend = num(t)?;
                seen += 1;
            } else if t.starts_with("time_stamp") {
                h.time_stamp = num(t)?;
                seen += 1;
            } else if t.starts_with("data max type_len") {
                h.data_max_type_len = num(t)?;
                seen += 1;
            }
        }
        if seen < 4 {
            bail!("header_event: expected padding/time_extend/time_stamp/data max lines");
        }
        if !text.contains("type_len    :    5 bits") && !text.contains("type_len") {
            bail!("header_event: no type_len");
        }
        Ok(h)
    }
}
