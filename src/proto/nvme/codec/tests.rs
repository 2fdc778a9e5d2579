//! The codec against the specification's byte layouts, and round trips.

use super::*;

fn both() -> Digests {
    Digests {
        header: true,
        data: true,
    }
}

#[test]
fn icreq_is_128_bytes_in_the_specified_layout() {
    let ic = Ic {
        pfv: 0,
        align: 3,
        digests: Digests {
            header: true,
            data: false,
        },
        max: 0,
    };
    let b = encode_ic(PDU_ICREQ, &ic).unwrap();
    assert_eq!(b.len(), 128);
    assert_eq!(&b[..8], &[0x00, 0x00, 128, 0, 128, 0, 0, 0]);
    assert_eq!(&b[8..16], &[0, 0, 3, 0x01, 0, 0, 0, 0]);
    assert!(b[16..].iter().all(|&x| x == 0));
    let (p, n) = split_pdu(&b, Digests::default()).unwrap().unwrap();
    assert_eq!(n, 128);
    assert_eq!(parse_ic(&p).unwrap(), ic);
    // ICResp: MAXH2CDATA in the same place; its digests are never on the PDU itself.
    let resp = Ic { max: 131072, ..ic };
    let b = encode_ic(PDU_ICRESP, &resp).unwrap();
    assert_eq!(b[1], 0, "no digest flags on ICResp");
    assert_eq!(&b[12..16], &131072u32.to_le_bytes());
    let (p, _) = split_pdu(&b, both()).unwrap().unwrap();
    assert_eq!(parse_ic(&p).unwrap(), resp);
}

#[test]
fn a_bad_ic_is_refused() {
    let mut b = encode_ic(
        PDU_ICREQ,
        &Ic {
            pfv: 0,
            align: 0,
            digests: Digests::default(),
            max: 0,
        },
    )
    .unwrap();
    b[8] = 1;
    let (p, _) = split_pdu(&b, Digests::default()).unwrap().unwrap();
    assert!(parse_ic(&p).unwrap_err().0.contains("format version"));
    b[8] = 0;
    b[10] = 32;
    let (p, _) = split_pdu(&b, Digests::default()).unwrap().unwrap();
    assert!(parse_ic(&p).unwrap_err().0.contains("alignment"));
}

#[test]
fn data_offsets_follow_the_receivers_alignment() {
    let none = Digests::default();
    assert_eq!(layout(72, none, 0, 0), (0, 72));
    assert_eq!(layout(72, both(), 0, 0), (0, 76));
    assert_eq!(layout(72, none, 0, 512), (72, 584));
    assert_eq!(layout(72, both(), 0, 512), (76, 76 + 512 + 4));
    // CPDA 1: 8-byte units; CPDA 31: 128-byte units.
    assert_eq!(layout(72, both(), 1, 512).0, 80);
    assert_eq!(layout(72, none, 31, 512).0, 128);
    assert_eq!(layout(24, none, 0, 4096), (24, 24 + 4096));
}

#[test]
fn a_write_capsule_with_digests_round_trips_and_corruption_is_caught() {
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    let sqe = Sqe::write(9, 1, 100, 8, 4096, true);
    let pdu = sqe.capsule(&data, both(), 1).unwrap();
    let h = CommonHeader::parse(&pdu).unwrap();
    assert_eq!((h.pdu_type, h.hlen, h.pdo), (PDU_CAPSULE_CMD, 72, 80));
    assert_eq!(h.flags, FLAG_HDGST | FLAG_DDGST);
    assert_eq!(h.plen as usize, 80 + 4096 + 4);
    assert_eq!(
        &pdu[72..76],
        &crc32c::checksum(&pdu[..72]).to_le_bytes(),
        "the header digest covers the 72 header bytes"
    );
    assert!(pdu[76..80].iter().all(|&b| b == 0), "padding");
    let (p, n) = split_pdu(&pdu, both()).unwrap().unwrap();
    assert_eq!(n, pdu.len());
    assert_eq!(parse_capsule(&p).unwrap(), sqe);
    assert_eq!(p.data, &data[..]);
    // Every prefix is incomplete, not an error.
    for cut in [0, 7, 8, 72, 80, pdu.len() - 1] {
        assert_eq!(split_pdu(&pdu[..cut], both()).unwrap(), None, "cut {cut}");
    }
    let mut bad = pdu.clone();
    bad[100] ^= 1;
    assert!(split_pdu(&bad, both())
        .unwrap_err()
        .0
        .contains("data digest"));
    let mut bad = pdu.clone();
    bad[30] ^= 1;
    assert!(split_pdu(&bad, both())
        .unwrap_err()
        .0
        .contains("header digest"));
    // A connection without a header digest does not accept one.
    assert!(split_pdu(&pdu, Digests::default()).is_err());
}

#[test]
fn two_pdus_in_one_buffer_are_split() {
    let a = Cqe::success(1, 5).capsule(Digests::default()).unwrap();
    let b = Cqe::success(2, 6).capsule(Digests::default()).unwrap();
    let buf = [a.clone(), b].concat();
    let (p, n) = split_pdu(&buf, Digests::default()).unwrap().unwrap();
    assert_eq!((n, parse_response(&p).unwrap().cid), (24, 1));
    let (p, _) = split_pdu(&buf[n..], Digests::default()).unwrap().unwrap();
    assert_eq!(parse_response(&p).unwrap().result, 6);
}

#[test]
fn malformed_headers_are_errors() {
    let mut b = Cqe::success(1, 0).capsule(Digests::default()).unwrap();
    b[2] = 23;
    assert!(split_pdu(&b, Digests::default())
        .unwrap_err()
        .0
        .contains("header"));
    b[2] = 24;
    b[0] = 0x08;
    assert!(split_pdu(&b, Digests::default())
        .unwrap_err()
        .0
        .contains("unknown PDU type"));
    b[0] = PDU_CAPSULE_RESP;
    b[4] = 20;
    assert!(split_pdu(&b, Digests::default())
        .unwrap_err()
        .0
        .contains("shorter"));
}

#[test]
fn io_commands_have_the_specified_layout() {
    let r = Sqe::read(7, 1, 0x1_0000_0002, 8, 4096);
    assert_eq!(r.0[0], OPC_READ);
    assert_eq!(r.0[1], 0x40, "PSDT 01b: SGL");
    assert_eq!(&r.0[2..4], &7u16.to_le_bytes());
    assert_eq!(&r.0[4..8], &1u32.to_le_bytes());
    assert!(r.0[24..32].iter().all(|&b| b == 0), "SGL address 0");
    assert_eq!(r.sgl_desc(), (SGL_TRANSPORT, 4096));
    assert_eq!((r.dword(10), r.dword(11), r.dword(12)), (2, 1, 7));
    assert_eq!(r.lba_range(), (0x1_0000_0002, 8));
    let w = Sqe::write(8, 1, 16, 1, 512, true);
    assert_eq!(
        (w.opcode(), w.sgl_desc()),
        (OPC_WRITE, (SGL_IN_CAPSULE, 512))
    );
    let w = Sqe::write(8, 1, 16, 1, 512, false);
    assert_eq!(w.sgl_desc().0, SGL_TRANSPORT);
    let f = Sqe::flush(9, 1);
    assert_eq!((f.opcode(), f.sgl_desc()), (OPC_FLUSH, (0, 0)));
}

#[test]
fn admin_and_fabrics_commands_have_the_specified_layout() {
    let c = Sqe::connect(1, 2, 127, 15_000);
    assert_eq!((c.opcode(), c.fctype()), (OPC_FABRICS, FCTYPE_CONNECT));
    assert_eq!(&c.0[40..42], &[0, 0], "RECFMT 0");
    assert_eq!(&c.0[42..44], &2u16.to_le_bytes());
    assert_eq!(&c.0[44..46], &127u16.to_le_bytes());
    assert_eq!(&c.0[48..52], &15_000u32.to_le_bytes());
    assert_eq!(c.sgl_desc(), (SGL_IN_CAPSULE, 1024));
    let g = Sqe::property_get(3, PROP_CAP, true);
    assert_eq!((g.fctype(), g.0[40]), (FCTYPE_PROPERTY_GET, 1));
    assert_eq!(g.property(), (PROP_CAP, true, 0));
    let s = Sqe::property_set(4, PROP_CC, false, 0x0046_0001);
    assert_eq!(s.fctype(), FCTYPE_PROPERTY_SET);
    assert_eq!(&s.0[44..48], &0x14u32.to_le_bytes());
    assert_eq!(&s.0[48..56], &0x0046_0001u64.to_le_bytes());
    let i = Sqe::identify(5, CNS_CONTROLLER, 0);
    assert_eq!(
        (i.opcode(), i.dword(10), i.sgl_desc()),
        (OPC_IDENTIFY, 1, (SGL_TRANSPORT, 4096))
    );
    let q = Sqe::set_num_queues(6, 4);
    assert_eq!(
        (q.opcode(), q.dword(10), q.dword(11)),
        (OPC_SET_FEATURES, 7, 0x0003_0003)
    );
    assert_eq!(Sqe::keep_alive(7).opcode(), OPC_KEEP_ALIVE);
}

#[test]
fn connect_data_round_trips_and_bad_nqns_are_refused() {
    let host = [0xAB; 16];
    let d = connect_data(
        host,
        0xFFFF,
        "nqn.2014-08.org.nvmexpress:uuid:x",
        "nqn.2025-11.io.iolab:host",
    )
    .unwrap();
    assert_eq!(d.len(), 1024);
    assert_eq!(&d[16..18], &[0xFF, 0xFF]);
    assert_eq!(&d[256..260], b"nqn.");
    let (h, cntlid, sub, hostnqn) = parse_connect_data(&d).unwrap();
    assert_eq!((h, cntlid), (host, 0xFFFF));
    assert_eq!(sub, "nqn.2014-08.org.nvmexpress:uuid:x");
    assert_eq!(hostnqn, "nqn.2025-11.io.iolab:host");
    assert!(connect_data(host, 1, "", "h").is_err());
    assert!(connect_data(host, 1, &"n".repeat(224), "h").is_err());
}

#[test]
fn completions_and_their_status() {
    let c = Cqe {
        result: 0x1122_3344_5566_7788,
        sq_head: 3,
        sq_id: 1,
        cid: 42,
        status: Cqe::status_of(1, 0x82, true),
    };
    let b = c.encode();
    assert_eq!(&b[12..14], &42u16.to_le_bytes());
    assert_eq!(Cqe::parse(&b).unwrap(), c);
    assert_eq!(c.code(), (1, 0x82));
    assert!(c.dnr() && !c.ok());
    assert_eq!(
        status_text(1, 0x82),
        "Connect: Invalid Parameters (type 1 code 0x82)"
    );
    assert!(Cqe::success(1, 0).ok());
    // Bit 0 is the phase tag, not part of the status code.
    assert!(Cqe {
        status: 1,
        ..Cqe::success(1, 0)
    }
    .ok());
}

#[test]
fn data_pdus_and_r2t() {
    let data = vec![5u8; 1000];
    let h = DataHeader {
        cccid: 12,
        ttag: 0,
        offset: 4096,
        length: 1000,
    };
    let pdu = frame(
        PDU_C2H_DATA,
        FLAG_LAST_PDU | FLAG_SUCCESS,
        &encode_data_header(&h),
        &data,
        both(),
        0,
    )
    .unwrap();
    let (p, _) = split_pdu(&pdu, both()).unwrap().unwrap();
    assert_eq!(
        p.header.flags & (FLAG_LAST_PDU | FLAG_SUCCESS),
        FLAG_LAST_PDU | FLAG_SUCCESS
    );
    assert_eq!(parse_data_header(&p).unwrap(), h);
    assert_eq!(p.data, &data[..]);
    let lying = DataHeader { length: 999, ..h };
    let pdu = frame(
        PDU_H2C_DATA,
        0,
        &encode_data_header(&lying),
        &data,
        Digests::default(),
        0,
    )
    .unwrap();
    let (p, _) = split_pdu(&pdu, Digests::default()).unwrap().unwrap();
    assert!(parse_data_header(&p).is_err());
    let r2t = DataHeader {
        cccid: 3,
        ttag: 9,
        offset: 0,
        length: 65536,
    };
    let pdu = frame(
        PDU_R2T,
        0,
        &encode_data_header(&r2t),
        &[],
        Digests::default(),
        0,
    )
    .unwrap();
    assert_eq!(pdu.len(), 24);
    let (p, _) = split_pdu(&pdu, Digests::default()).unwrap().unwrap();
    assert_eq!(parse_data_header(&p).unwrap(), r2t);
}

#[test]
fn termination_requests_say_why() {
    let offending = [0u8; 200];
    let pdu = encode_term(PDU_C2H_TERM, 0x03, 0, &offending).unwrap();
    let (p, _) = split_pdu(&pdu, Digests::default()).unwrap().unwrap();
    assert_eq!(
        p.data.len(),
        128,
        "at most 128 bytes of the offending header"
    );
    assert_eq!(
        describe_term(&p),
        "header digest error (status 0x03, information 0)"
    );
}

#[test]
fn a_keyed_sgl_holds_address_length_and_key() {
    let s = Sqe::read(7, 1, 8, 8, 4096);
    assert_eq!(s.transfer_len(), 4096);
    let k = s.keyed(0x1122_3344_5566_7788, 4096, 0xdead_beef);
    assert_eq!(k.sgl_desc().0, SGL_KEYED);
    assert_eq!(k.keyed_desc(), (0x1122_3344_5566_7788, 4096, 0xdead_beef));
    assert_eq!(k.lba_range(), (8, 8), "the command's dwords are kept");
    let none = Sqe::keep_alive(1).keyed(0x1000, 0, 5);
    assert_eq!(none.keyed_desc(), (0, 0, 0));
}
