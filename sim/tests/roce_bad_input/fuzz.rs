//! Arbitrary frames into the RoCE receive path of a device whose RC QP is in RTS over
//! RoCEv2 (see `dut.rs`): the program shared by the `roce_rx` cargo-fuzz target
//! (`sim/fuzz/fuzz_targets/roce_rx.rs`) and the bounded property test in
//! `roce_bad_input.rs`.
//!
//! Most of an input becomes packets that pass the gates a random frame would stop at (our
//! MAC and address, UDP 4791, lengths, ICRC): the input chooses the opcode, QPN, PSN (near
//! the expected one), extended header fields (near the memory region, or anything) and
//! payload length, and the harness writes the headers and the ICRC. A flag leaves a frame
//! corrupted after the ICRC is computed, and one op hands a frame over byte for byte. Between
//! frames the input may tick the device (timers, RNR waits, flushes), post receive WQEs,
//! post sends on the QP (so that ACKs, NAKs and read responses find something outstanding),
//! or take the QP back to RTS.
//!
//! Input format, op by op (a byte `k`, the fields after it; missing bytes read as 0):
//! `k % 16`: 0 a raw frame (u16 length % 1600, the bytes); 1 tick; 2 post a receive WQE;
//! 3 reconnect the QP; 4 post a send (u8 kind: send, RDMA read, RDMA write); anything else
//! a packet: u8 flags (bit 0 raw opcode, 1 raw QPN, 2 corrupt after sealing, 3 AckReq,
//! 4 SE, 5 raw extended-header fields), u8 opcode, [u32 QPN], i8 PSN step (from a running
//! guess of the next request PSN, or of the next response PSN for response opcodes; step 0
//! moves the guess on), the extended
//! header fields, u16 payload length % 2200, then on corruption u16 offset and u8 XOR.
//!
//! Checked after every input: nothing panicked, no DMA write left guest RAM or the memory
//! region (canaries), and the device still answers: the QP, reset and reconnected, ACKs a
//! good send and delivers it.

#![allow(dead_code)]

use super::dut::{Dut, ALL, DUT, FIRST_PSN, MR_LEN, PEER, SEND_PSN};
use super::frame::{self, op, syn, Pkt};
use super::rig::with_rig;
use mlx5_prm::SendOpcode;

/// Most ops one input runs.
const MAX_OPS: usize = 32;

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) << 8 | u16::from(self.u8())
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) << 16 | u32::from(self.u16())
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) << 32 | u64::from(self.u32())
    }
}

/// The RC opcodes, for inputs that pick one by index.
const OPCODES: [u8; 23] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17,
];

/// Runs one input and checks the device afterwards.
pub fn run(data: &[u8]) {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        // A short local ACK timeout, so ticks can see the requester's timer run out.
        d.ack_timeout.set(1);
        d.reconnect();
        let mut c = Cursor(data);
        // Where the PSNs of requests (the responder's) and responses (the requester's) go.
        let mut guess = [FIRST_PSN, SEND_PSN];
        for _ in 0..MAX_OPS {
            if c.0.is_empty() {
                break;
            }
            match c.u8() % 16 {
                0 => {
                    let n = usize::from(c.u16()) % 1600;
                    let f = c.bytes(n).to_vec();
                    rig.dev.receive_frame(&f);
                }
                1 => rig.dev.tick(),
                2 => d.post_recv(),
                3 => d.reconnect(),
                4 => post_send(&d, c.u8()),
                _ => {
                    let f = packet(&d, &mut c, &mut guess);
                    rig.dev.receive_frame(&f);
                }
            }
            // What the device sent goes nowhere; completions are reaped, receives reposted.
            rig.tap.take();
            while d.scq.poll(rig).is_some() {}
            let mut reaped = 0;
            while d.rcq.poll(rig).is_some() && reaped < 64 {
                reaped += 1;
            }
            for _ in 0..reaped.min(16) {
                d.post_recv();
            }
        }
        check(&d);
    });
}

/// One packet from the input.
fn packet(d: &Dut<'_>, c: &mut Cursor<'_>, guess: &mut [u32; 2]) -> Vec<u8> {
    let flags = c.u8();
    let opcode = if flags & 1 != 0 {
        c.u8()
    } else {
        OPCODES[usize::from(c.u8()) % OPCODES.len()]
    };
    let dqpn = if flags & 2 != 0 {
        c.u32() & 0xff_ffff
    } else {
        d.qpn
    };
    let step = c.u8() as i8;
    let guess = &mut guess[usize::from((0x0d..=0x12).contains(&opcode))];
    let psn = guess.wrapping_add(step as i32 as u32) & 0xff_ffff;
    if step == 0 {
        *guess = (*guess + 1) & 0xff_ffff;
    }
    let mut p = Pkt::new(opcode, dqpn, psn);
    p.ack_req = flags & 8 != 0;
    p.se = flags & 16 != 0;
    let raw = flags & 32 != 0;
    let addr = |c: &mut Cursor<'_>| {
        if raw {
            c.u64()
        } else {
            (d.mr_va - 64).wrapping_add(u64::from(c.u16()) % (MR_LEN + 128))
        }
    };
    match opcode {
        op::WRITE_FIRST | op::WRITE_ONLY | 0x0b | op::READ_REQUEST => {
            let va = addr(c);
            let (rkey, len) = if raw {
                (c.u32(), c.u32())
            } else {
                (d.rkey, u32::from(c.u16()) % 4500)
            };
            p = p.reth(va, rkey, len);
        }
        op::COMPARE_SWAP | op::FETCH_ADD => {
            let va = addr(c);
            let rkey = if raw { c.u32() } else { d.rkey };
            p = p.atomic(va, rkey, c.u64(), c.u64());
        }
        op::READ_RESPONSE_FIRST
        | op::READ_RESPONSE_LAST
        | op::READ_RESPONSE_ONLY
        | op::ACKNOWLEDGE => {
            p = p.aeth(c.u8(), c.u32());
        }
        op::ATOMIC_ACKNOWLEDGE => {
            p = p.aeth(c.u8(), c.u32());
            p.ext.extend_from_slice(&c.u64().to_be_bytes());
        }
        _ if flags & 1 != 0 => {
            let n = usize::from(c.u8() % 48);
            p.ext = c.bytes(n).to_vec();
        }
        _ => {}
    }
    if matches!(opcode, 0x03 | 0x05 | 0x09 | 0x0b | 0x16 | 0x17) {
        p.ext.extend_from_slice(&c.u32().to_be_bytes());
    }
    let n = usize::from(c.u16()) % 2200;
    p.payload = (0..n).map(|i| (i as u8) ^ opcode).collect();
    let mut f = frame::wrap(&PEER, &DUT, 0xc0de, &p.transport());
    if flags & 4 != 0 {
        let at = usize::from(c.u16()) % f.len();
        f[at] ^= c.u8().max(1);
    }
    f
}

/// A send WQE on the QP: SEND of 16 inline-free bytes, an RDMA read, or an RDMA write.
fn post_send(d: &Dut<'_>, kind: u8) {
    let data = |len: u32, addr: u64| {
        let mut s = [0u8; 16];
        s[..4].copy_from_slice(&len.to_be_bytes());
        s[4..8].copy_from_slice(&d.lkey.to_be_bytes());
        s[8..].copy_from_slice(&addr.to_be_bytes());
        s
    };
    let raddr = {
        let mut s = [0u8; 16];
        s[..8].copy_from_slice(&0x7000_0000u64.to_be_bytes());
        s[8..12].copy_from_slice(&0x1234u32.to_be_bytes());
        s
    };
    // The last receive slot's buffer: sends read it, reads land in it.
    let buf = d.recv + 15 * super::dut::RECV_LEN as u64;
    match kind % 3 {
        0 => d.post_send(SendOpcode::Send, &data(16, buf)),
        1 => d.post_send(SendOpcode::RdmaRead, &[raddr, data(2048, buf)].concat()),
        _ => d.post_send(SendOpcode::RdmaWrite, &[raddr, data(1500, buf)].concat()),
    }
}

/// The checks after an input.
fn check(d: &Dut<'_>) {
    let rig = d.rig;
    assert!(rig.guards_intact(), "a DMA write outside guest RAM");
    assert!(
        d.mr_guards_intact(),
        "a remote write outside the memory region"
    );
    d.reconnect();
    rig.tap.take();
    let good = Pkt::new(op::SEND_ONLY, d.qpn, FIRST_PSN).payload(b"still answering");
    rig.dev.receive_frame(&frame::build(&PEER, &DUT, &good));
    let acks: Vec<_> = rig
        .tap
        .take()
        .iter()
        .filter_map(|f| frame::parse(f))
        .filter(|s| s.opcode == op::ACKNOWLEDGE)
        .map(|s| (s.aeth, s.psn, s.icrc_ok))
        .collect();
    assert_eq!(
        acks,
        [(Some((syn::ACK, 1)), FIRST_PSN, true)],
        "the good send's ACK"
    );
    let e = d.rcq.poll(rig).expect("the good send's CQE");
    assert_eq!(e[63] >> 4, 2, "a responder send CQE");
}
