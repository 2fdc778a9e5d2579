//! Parsers of tracefs formats and ring-buffer pages, checked against fixtures
//! captured on this machine: raw `trace_pipe_raw` pages plus the kernel's own
//! text rendering (`trace`) of the same events.

use std::path::PathBuf;

use iolab::trace::events::{Decoder, Event, Kind};
use iolab::trace::format::{EventFormat, HeaderEvent, HeaderPage};
use iolab::trace::ringbuf::parse_page;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn formats() -> Vec<EventFormat> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(fixture("formats")).unwrap() {
        let p = e.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().to_string();
        let system = if file.starts_with("block_") {
            "block"
        } else if file.starts_with("io_uring_") {
            "io_uring"
        } else if file.starts_with("raw_syscalls_") {
            "raw_syscalls"
        } else {
            "irq"
        };
        out.push(EventFormat::parse(system, &std::fs::read_to_string(&p).unwrap()).unwrap());
    }
    out
}

#[test]
fn format_fields_offsets_sizes_signedness() {
    let f = EventFormat::parse("block", &read("formats/block_block_rq_issue.format")).unwrap();
    assert_eq!(f.name, "block_rq_issue");
    assert!(f.id > 0);
    let dev = f.need("dev").unwrap();
    assert_eq!((dev.offset, dev.size, dev.signed), (8, 4, false));
    let sector = f.need("sector").unwrap();
    assert_eq!((sector.offset, sector.size), (16, 8));
    let rwbs = f.need("rwbs").unwrap();
    assert!(rwbs.array && rwbs.size == 10);
    let cmd = f.need("cmd").unwrap();
    assert!(cmd.data_loc);
    assert!(f.need("common_pid").unwrap().signed);
    let c = EventFormat::parse("block", &read("formats/block_block_rq_complete.format")).unwrap();
    assert!(c.need("error").unwrap().signed);
    let irq = EventFormat::parse("irq", &read("formats/irq_irq_handler_entry.format")).unwrap();
    assert!(irq.need("name").unwrap().data_loc);
    let u = EventFormat::parse(
        "io_uring",
        &read("formats/io_uring_io_uring_submit_req.format"),
    )
    .unwrap();
    assert_eq!(u.need("user_data").unwrap().size, 8);
    assert!(EventFormat::parse("x", "garbage").is_err());
}

#[test]
fn header_page_and_event() {
    let hp = HeaderPage::parse(&read("header_page")).unwrap();
    assert_eq!(hp.timestamp_offset, 0);
    assert_eq!(hp.commit_offset, 8);
    assert_eq!(hp.data_offset, 16);
    assert_eq!(hp.page_size(), 4096);
    let he = HeaderEvent::parse(&read("header_event")).unwrap();
    assert_eq!(
        he,
        HeaderEvent {
            padding: 29,
            time_extend: 30,
            time_stamp: 31,
            data_max_type_len: 28
        }
    );
}

/// One line of the kernel's text output: (event name, timestamp in us, sector).
fn parse_text(line: &str) -> (String, u64, Option<u64>) {
    let after_cpu = &line[line.find("] ").unwrap() + 2..];
    let mut it = after_cpu.split_whitespace();
    it.next(); // flags
    let ts = it.next().unwrap().trim_end_matches(':');
    let (s, us) = ts.split_once('.').unwrap();
    let us = s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap();
    let name = it.next().unwrap().trim_end_matches(':').to_string();
    let rest: Vec<&str> = it.collect();
    let sector = rest
        .windows(2)
        .find(|w| w[1] == "+" || w[1] == "/")
        .and_then(|w| w[0].parse::<u64>().ok());
    (name, us, sector)
}

fn decode_cpu(cpu: u16) -> (Vec<Event>, usize) {
    decode_file(&format!("cpu{cpu}.raw"), cpu)
}

fn decode_file(file: &str, cpu: u16) -> (Vec<Event>, usize) {
    let hp = HeaderPage::parse(&read("header_page")).unwrap();
    let he = HeaderEvent::parse(&read("header_event")).unwrap();
    let dec = Decoder::new(&formats()).unwrap();
    let raw = std::fs::read(fixture(file)).unwrap();
    let mut events = Vec::new();
    let mut records = 0;
    for page in raw.chunks(hp.page_size()) {
        let s = parse_page(page, &hp, &he, |ts, rec| {
            records += 1;
            if let Some(e) = dec.decode(ts, cpu, rec) {
                events.push(e);
            }
        })
        .unwrap();
        assert!(s.missed.is_none() && !s.missed_unknown);
    }
    (events, records)
}

#[test]
fn raw_pages_match_the_kernels_text_rendering() {
    for cpu in [0u16, 1] {
        let (events, records) = decode_cpu(cpu);
        assert_eq!(
            events.len(),
            records,
            "every record is an event iolab decodes"
        );
        let text: Vec<_> = read(&format!("cpu{cpu}.txt"))
            .lines()
            .map(parse_text)
            .collect();
        let n = events.len().min(text.len());
        assert!(n >= 90, "cpu{cpu}: only {n} events compared");
        for (i, (e, (name, us, sector))) in events.iter().zip(text.iter()).take(n).enumerate() {
            assert_eq!(e.kind.tracepoint().1, name, "cpu{cpu} event {i}");
            assert_eq!(
                (e.ts + 500) / 1000,
                *us,
                "cpu{cpu} event {i} ({name}) timestamp"
            );
            if e.kind.is_block() {
                assert_eq!(e.dev, (254 << 20), "cpu{cpu} event {i} dev");
                assert_eq!(Some(e.a), *sector, "cpu{cpu} event {i} sector");
                assert!(!e.rwbs_str().is_empty());
            }
            if e.kind == Kind::Irq {
                assert_eq!(e.a, 36);
            }
        }
        // Timestamps never go backwards within one CPU.
        assert!(events.windows(2).all(|w| w[0].ts <= w[1].ts));
    }
}

#[test]
fn pages_with_bad_commit_are_errors_not_panics() {
    let hp = HeaderPage::parse(&read("header_page")).unwrap();
    let he = HeaderEvent::parse(&read("header_event")).unwrap();
    let mut page = std::fs::read(fixture("cpu1.raw")).unwrap()[..4096].to_vec();
    page[8..16].copy_from_slice(&5000u64.to_ne_bytes());
    assert!(parse_page(&page, &hp, &he, |_, _| {}).is_err());
    assert!(parse_page(&page[..10], &hp, &he, |_, _| {}).is_err());
    // Arbitrary bytes never panic.
    let mut x = 0x1234_5678u32;
    for _ in 0..200 {
        let mut p = vec![0u8; 4096];
        for b in p.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        p[8..16].copy_from_slice(&((x % 4080) as u64).to_ne_bytes());
        let _ = parse_page(&p, &hp, &he, |_, _| {});
    }
}

#[test]
fn missed_events_flag_is_reported() {
    let hp = HeaderPage::parse(&read("header_page")).unwrap();
    let he = HeaderEvent::parse(&read("header_event")).unwrap();
    let mut page = std::fs::read(fixture("cpu0.raw")).unwrap()[..4096].to_vec();
    let commit = u64::from_ne_bytes(page[8..16].try_into().unwrap()) & ((1 << 30) - 1);
    page[8..16].copy_from_slice(&(commit | (1 << 31)).to_ne_bytes());
    let s = parse_page(&page, &hp, &he, |_, _| {}).unwrap();
    assert!(s.missed_unknown);
    if commit as usize + 16 + 8 <= 4096 {
        page[8..16].copy_from_slice(&(commit | (1 << 31) | (1 << 30)).to_ne_bytes());
        let at = 16 + commit as usize;
        page[at..at + 8].copy_from_slice(&42u64.to_ne_bytes());
        let s = parse_page(&page, &hp, &he, |_, _| {}).unwrap();
        assert_eq!(s.missed, Some(42));
    }
}

/// io_uring and syscall events (captured while fio ran io_uring at QD4):
/// user_data and syscall numbers decode to what the kernel printed.
#[test]
fn io_uring_and_syscall_events_match_the_kernels_text() {
    let (events, records) = decode_file("uring-cpu1.raw", 1);
    assert_eq!(events.len(), records);
    let text = read("uring-cpu1.txt");
    let lines: Vec<&str> = text.lines().collect();
    let n = events.len().min(lines.len());
    let (mut uring, mut sys) = (0, 0);
    for (i, (e, line)) in events.iter().zip(lines.iter()).take(n).enumerate() {
        let (name, us, _) = parse_text(line);
        assert_eq!(e.kind.tracepoint().1, name, "event {i}");
        assert_eq!((e.ts + 500) / 1000, us, "event {i} timestamp");
        match e.kind {
            Kind::UringSubmit | Kind::UringComplete => {
                let ud = line
                    .split("user_data 0x")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap();
                assert_eq!(
                    e.a,
                    u64::from_str_radix(ud, 16).unwrap(),
                    "event {i} user_data"
                );
                assert_ne!(e.c, 0, "ring pointer");
                uring += 1;
            }
            Kind::SysEnter | Kind::SysExit => {
                assert_eq!(e.a, 426, "io_uring_enter");
                sys += 1;
            }
            _ => {}
        }
    }
    assert!(uring >= 40 && sys >= 10, "uring {uring} sys {sys}");
}
