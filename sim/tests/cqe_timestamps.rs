//! CQE timestamps: send and receive completions carry the device's free-running clock, the
//! same counter the initialization segment's internal timer (0x1000) shows, in the format the
//! capabilities advertise (sq_ts_format and rq_ts_format: free-running). A driver converting
//! a timestamp with the timer it reads (Linux's timecounter) must find it between two reads
//! of the timer taken around the traffic.

mod common;

use common::dp::Node;
use common::eth::{l2, Eth};
use mlx5_prm::cmd::{self, QueryHcaCapOpMod};
use mlx5_prm::{CmdHcaCap, CqeOpcode, ErrCqe, HcaTsFormatCap};

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

/// The internal timer as Linux reads it: high, low, high again (a carry between the reads
/// is retried).
fn timer(e: &Eth) -> u64 {
    let dev = e.n.dev();
    loop {
        let h = dev.read32(0x1000);
        let l = dev.read32(0x1004);
        if dev.read32(0x1000) == h {
            return (u64::from(h) << 32) | u64::from(l);
        }
    }
}

#[test]
fn send_and_receive_cqes_carry_the_internal_timer() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let r =
        e.n.host
            .simple::<cmd::QueryHcaCap>(QueryHcaCapOpMod::GeneralCur)
            .ok();
    let g = CmdHcaCap::new_unchecked(&r.out[0x10..0x110]);
    assert_eq!(g.sq_ts_format(), Ok(HcaTsFormatCap::FreeRunning));
    assert_eq!(g.rq_ts_format(), Ok(HcaTsFormatCap::FreeRunning));
    let khz = u64::from(g.device_frequency_khz());
    assert!(khz > 0);

    e.n.dev().loopback(true);
    for k in 0..4 {
        e.post_recv(k * 2048, 2048);
    }
    let before = timer(&e);
    std::thread::sleep(std::time::Duration::from_millis(2));
    e.send(&l2(MAC_A, MAC_B), 0x8000, 100);
    let tx = e.scq.expect(CqeOpcode::Req).timestamp();
    let rx = e.rcq.expect(CqeOpcode::RespSend).timestamp();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let after = timer(&e);
    assert!(
        before < tx && tx <= rx && rx < after,
        "timer {before} .. {after}, tx {tx}, rx {rx}"
    );
    // The 2 ms slept on each side are ticks of the advertised frequency.
    assert!(tx - before >= 2 * khz && after - rx >= 2 * khz);

    // Later traffic is later on the clock.
    std::thread::sleep(std::time::Duration::from_millis(1));
    e.send(&l2(MAC_A, MAC_B), 0x8000, 100);
    let tx2 = e.scq.expect(CqeOpcode::Req).timestamp();
    let rx2 = e.rcq.expect(CqeOpcode::RespSend).timestamp();
    assert!(tx2 >= rx + khz && rx2 >= tx2, "{tx2} {rx2} after {rx}");
}

#[test]
fn an_error_cqe_keeps_its_syndrome_where_the_timestamp_would_be() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.n.dev().loopback(true);
    e.post_recv(0, 16); // too short for the frame
    e.send(&l2(MAC_A, MAC_B), 0x8000, 100);
    e.scq.expect(CqeOpcode::Req);
    let c: ErrCqe<[u8; 64]> = e.rcq.expect_err(CqeOpcode::RespErr, 0x1);
    assert_eq!(
        &c.storage()[0x30..0x34],
        &[0; 4],
        "nothing in the high word"
    );
}
