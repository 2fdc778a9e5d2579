//! The initiator's control path against iolab's controller model
//! (`target::nvme_controller`) served over a real socket by a small
//! blocking loop here (test glue; the target's reactor comes later):
//! connect, enable, identify, queues, data both ways (in-capsule, R2T and
//! H2CData, C2HData), digests, and errors in words.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use super::*;
use crate::target::nvme_controller::{Action, Controller};

const NQN: &str = "nqn.2025-11.io.iolab:test";
/// The glue's MAXH2CDATA: small, so a 40 KiB write takes three H2CData PDUs.
const MAX_H2C: u32 = 16384;

type Disk = Arc<Mutex<Vec<u8>>>;

fn params(digests: Digests) -> Params {
    Params {
        subnqn: NQN.into(),
        hostnqn: "nqn.2025-11.io.iolab:host".into(),
        hostid: [7; 16],
        nsid: 1,
        digests,
        queue_size: 32,
        kato_ms: 120_000,
    }
}

/// Serve a controller over a `size`-byte RAM disk; its address.
fn serve(size: usize) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let ctrl = Arc::new(Mutex::new(Controller::new(NQN, 1, size as u64, 512)));
    let disk: Disk = Arc::new(Mutex::new(vec![0u8; size]));
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let (c, d) = (ctrl.clone(), disk.clone());
            std::thread::spawn(move || connection(s, c, d));
        }
    });
    addr
}

fn read_pdu(s: &mut TcpStream, rx: &mut Vec<u8>, digests: Digests) -> anyhow::Result<Option<Pdu>> {
    loop {
        if let Some((p, n)) = codec::split_pdu(rx, digests)? {
            let pdu = Pdu {
                header: p.header,
                specific: p.specific.to_vec(),
                data: p.data.to_vec(),
            };
            rx.drain(..n);
            return Ok(Some(pdu));
        }
        let mut b = [0u8; 65536];
        let k = s.read(&mut b)?;
        if k == 0 {
            return Ok(None);
        }
        rx.extend_from_slice(&b[..k]);
    }
}

fn connection(mut s: TcpStream, ctrl: Arc<Mutex<Controller>>, disk: Disk) -> anyhow::Result<()> {
    let (mut rx, mut digests, mut admin) = (Vec::new(), Digests::default(), true);
    while let Some(pdu) = read_pdu(&mut s, &mut rx, digests)? {
        if pdu.header.pdu_type == codec::PDU_ICREQ {
            let req = codec::parse_ic(&pdu.raw())?;
            let resp = Ic {
                max: MAX_H2C,
                ..req
            };
            s.write_all(&codec::encode_ic(codec::PDU_ICRESP, &resp)?)?;
            digests = req.digests;
            continue;
        }
        let sqe = codec::parse_capsule(&pdu.raw())?;
        let connect = sqe.opcode() == codec::OPC_FABRICS && sqe.fctype() == codec::FCTYPE_CONNECT;
        if connect {
            admin = sqe.connect_qid() == 0;
        }
        let action = {
            let mut c = ctrl.lock().unwrap();
            if admin || connect {
                c.admin(&sqe, &pdu.data)
            } else {
                c.io(&sqe)
            }
        };
        let (cqe, data) = match action {
            Action::Reply { cqe, data } => (cqe, data),
            Action::Read { cid, offset, len } => {
                let d = disk.lock().unwrap();
                let o = offset as usize;
                (Cqe::success(cid, 0), d[o..o + len as usize].to_vec())
            }
            Action::Write { cid, offset, len } => {
                let mut data = pdu.data.clone();
                if data.is_empty() {
                    let r2t = DataHeader {
                        cccid: cid,
                        ttag: 1,
                        offset: 0,
                        length: len,
                    };
                    let r2t = codec::frame(
                        codec::PDU_R2T,
                        0,
                        &codec::encode_data_header(&r2t),
                        &[],
                        digests,
                        0,
                    )?;
                    s.write_all(&r2t)?;
                    while data.len() < len as usize {
                        let Some(h2c) = read_pdu(&mut s, &mut rx, digests)? else {
                            return Ok(());
                        };
                        let h = codec::parse_data_header(&h2c.raw())?;
                        assert_eq!(h.offset as usize, data.len(), "H2CData in order");
                        assert!(h.length <= MAX_H2C);
                        data.extend_from_slice(&h2c.data);
                    }
                }
                let o = offset as usize;
                disk.lock().unwrap()[o..o + data.len()].copy_from_slice(&data);
                (Cqe::success(cid, 0), Vec::new())
            }
            Action::Flush { cid } => (Cqe::success(cid, 0), Vec::new()),
        };
        if !data.is_empty() {
            let h = DataHeader {
                cccid: cqe.cid,
                ttag: 0,
                offset: 0,
                length: data.len() as u32,
            };
            let c2h = codec::frame(
                codec::PDU_C2H_DATA,
                codec::FLAG_LAST_PDU,
                &codec::encode_data_header(&h),
                &data,
                digests,
                0,
            )?;
            s.write_all(&c2h)?;
        }
        s.write_all(&cqe.capsule(digests)?)?;
    }
    Ok(())
}

fn pattern(n: usize, k: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(k))
        .collect()
}

fn round_trip(digests: Digests) {
    let addr = serve(1 << 20);
    let p = params(digests);
    let (_admin, info) = connect_admin(&addr, &p).unwrap();
    assert_eq!((info.ns.bytes(), info.ns.block_size), (1 << 20, 512));
    assert_eq!((info.cntlid, info.io_queues), (1, 64));
    assert_eq!(info.id.subnqn, NQN);
    assert_eq!(info.id.in_capsule_data(), 8192);
    let mut q = connect_io(&addr, &p, &info, 1).unwrap();
    assert_eq!(q.digests, digests);
    // 4 KiB in the capsule, 40 KiB through R2T (three H2CData PDUs).
    let small = pattern(4096, 1);
    let cid = q.next_cid();
    q.command(
        &Sqe::write(cid, 1, 8, 8, 4096, true),
        &small,
        &mut Vec::new(),
    )
    .unwrap();
    let big = pattern(40960, 2);
    let cid = q.next_cid();
    q.command(
        &Sqe::write(cid, 1, 100, 80, 40960, false),
        &big,
        &mut Vec::new(),
    )
    .unwrap();
    for (lba, want) in [(8u64, &small), (100, &big)] {
        let mut got = Vec::new();
        let cid = q.next_cid();
        let blocks = want.len() as u32 / 512;
        q.command(
            &Sqe::read(cid, 1, lba, blocks, want.len() as u32),
            &[],
            &mut got,
        )
        .unwrap();
        assert_eq!(&got, want, "lba {lba}");
    }
    let cid = q.next_cid();
    q.command(&Sqe::flush(cid, 1), &[], &mut Vec::new())
        .unwrap();
}

#[test]
fn connect_enable_identify_and_data_both_ways() {
    round_trip(Digests::default());
}

#[test]
fn the_same_with_header_and_data_digests() {
    round_trip(Digests {
        header: true,
        data: true,
    });
}

#[test]
fn errors_name_the_status() {
    let addr = serve(1 << 20);
    let mut p = params(Digests::default());
    let (_admin, info) = connect_admin(&addr, &p).unwrap();
    let mut q = connect_io(&addr, &p, &info, 1).unwrap();
    let cid = q.next_cid();
    let e = q
        .command(&Sqe::read(cid, 1, 2047, 8, 4096), &[], &mut Vec::new())
        .unwrap_err();
    assert!(format!("{e:#}").contains("LBA Out of Range"), "{e:#}");
    let e = connect_io(&addr, &p, &info, 65).err().unwrap();
    assert!(format!("{e:#}").contains("of the 64"), "{e:#}");
    p.subnqn = "nqn.2025-11.io.iolab:other".into();
    let e = connect_admin(&addr, &p).err().unwrap();
    assert!(
        format!("{e:#}").contains("Connect: Invalid Parameters"),
        "{e:#}"
    );
}
