//! Receive: a frame that arrives on the port is steered through the NIC receive flow tables
//! to TIRs, each of which picks an RQ (its own, or an entry of its RQ table by the RSS hash,
//! [`rss`]); the RQ's next receive WQE takes the frame, and its CQ gets the completion.
//!
//! On the way into the WQE the RQ's context may change the frame: with `vsd` clear (VLAN
//! strip enabled, mlx5e's default) an outer C-tag (0x8100) is removed and reported in the
//! CQE (`has_vlan`, `vlan_info`: its whole TCI, which mlx5e hands the stack as the tag);
//! steering has already seen the tag, as the flow tables match on it. With `scatter_fcs` the
//! frame's FCS follows it ([`fcs`]) and counts in `byte_cnt`. The checksum fields describe
//! the IP packet either way: `check_sum` is the sum over the IP packet alone (from the IP
//! header to its total length), which a removed tag in front of it and an FCS or padding
//! behind it do not touch; mlx5e adds the sum of whatever the skb holds past the IP packet
//! itself (`mlx5e_skb_csum_fixup`).
//!
//! Frames nobody takes are counted once, where Linux looks for them: a frame steering found
//! no TIR for because a table matched nothing and had no table to miss to counts in the vNIC's
//! nic_receive_steering_discard (QUERY_VNIC_ENV, ethtool's `rx_steer_missed_packets`); a
//! frame whose RQ has no receive WQE posted counts in out_of_buffer of the RQ's queue counter
//! set (`rx_out_of_buffer`, or `rx_if_down_packets` for mlx5e's drop RQ). A frame a drop rule
//! discards is counted nowhere (the rule asked for it). The vport's traffic counters count
//! every frame the port passes up, taken or not, as the vport sees them before steering.

use super::super::cqe::CqeWords;
use super::super::csum::{self, RxCsum};
use super::super::fcs;
use super::super::mem::Accessor;
use super::super::memo::{Deliveries, Steered};
use super::super::parse::{parse_into, Parsed};
use super::super::rq::{self, Peeked, ScatterError, Target};
use super::super::rss::{self, Delivery};
use super::super::steer::{steer, Destinations};
use super::super::{cq, Side};
use mlx5_prm::{
    Cqe64, CqeL3HdrType, CqeL4HdrType, CqeOpcode, CqeSyndrome, FlowTableType, RqState, WqType,
};

/// The EtherType of a C-tag (IEEE 802.1Q), the tag an RQ strips.
const C_TAG: [u8; 2] = [0x81, 0x00];
/// Where a frame's outer EtherType (or tag protocol) and a tag's TCI are.
const ETHERTYPE_AT: usize = 12;
const TAG_LEN: usize = 4;

/// A frame arrives on the port: steered from the NIC receive root table to RQs. True when at
/// least one RQ took it; otherwise it is counted as dropped.
pub(crate) fn receive(side: &mut Side<'_>, frame: &[u8]) -> bool {
    let delivered = side.m.port.oper_up() && {
        side.m.port.counters.received(frame);
        side.m.vport_counters.received(frame);
        steer_and_deliver(side, frame)
    };
    if delivered {
        side.m.stats.rx_frames += 1;
    } else {
        side.m.stats.rx_dropped += 1;
    }
    delivered
}

fn steer_and_deliver(side: &mut Side<'_>, frame: &[u8]) -> bool {
    // Steered like the last frame when its headers are the same and no command ran since
    // (see `Steered`): the root table is then the one it was steered from, as only commands
    // change the roots.
    let generation = side.m.generation;
    let known = matches!(&side.m.steered, Some((g, s)) if *g == generation && s.same_frame(frame));
    if !known {
        let Some(&root) = side.m.flow.roots.get(&FlowTableType::NicRx.raw()) else {
            // No root table: nothing can match.
            side.m.vnic.steering_discard(1);
            return false;
        };
        let s = steer_frame(side, root, frame);
        side.m.steered = Some((generation, s));
    }
    let Some((_, s)) = &side.m.steered else {
        return false;
    };
    let (l3, l4, n) = (s.l3, s.l4, s.to.len());
    let Some(&first) = s.to.first() else {
        if s.missed {
            side.m.vnic.steering_discard(1);
        }
        return false;
    };
    // A frame the parser found no IPv4 or IPv6 header in gets no sums: its CQE says "not IP"
    // (l3_hdr_type 0), and the sums would contradict it. This also spares the checksum
    // code's own header walk for every non-IP frame.
    let sums = if l3 == CqeL3HdrType::None {
        RxCsum::default()
    } else {
        csum::rx(frame)
    };
    let mut delivered = deliver(side, first, frame, (l3, l4), sums);
    // Frames a rule sends to several TIRs: one copy per RQ.
    for k in 1..n {
        let Some(&d) = side.m.steered.as_ref().and_then(|(_, s)| s.to.get(k)) else {
            break;
        };
        delivered |= deliver(side, d, frame, (l3, l4), sums);
    }
    delivered
}

/// Parses `frame`, steers it from table `root`, and finds the RQ each TIR picks.
fn steer_frame(side: &Side<'_>, root: u32, frame: &[u8]) -> Steered {
    let mut parsed = Parsed::new();
    parse_into(frame, &mut parsed);
    let mut tirs = Destinations::new();
    let missed = steer(side.m, root, &parsed.key, &mut tirs);
    let mut to = Deliveries::new();
    let mut fields = None;
    for &(tir, tag) in tirs.iter() {
        if let Some(d) = rss::dispatch(side.m, tir, tag, frame, &mut fields) {
            to.push(d);
        }
    }
    Steered::new(frame, (parsed.l3, parsed.l4), to, missed)
}

/// The TCI of the frame's outer tag when it is a C-tag.
fn c_tag(frame: &[u8]) -> Option<u16> {
    match frame.get(ETHERTYPE_AT..ETHERTYPE_AT + TAG_LEN)? {
        [p0, p1, t0, t1] if [*p0, *p1] == C_TAG => Some(u16::from_be_bytes([*t0, *t1])),
        _ => None,
    }
}

/// What the RQ gets of `frame`: without the C-tag when `strip`, with the FCS when `fcs`,
/// built in `out` (cleared first).
fn rebuild(out: &mut Vec<u8>, frame: &[u8], strip: bool, with_fcs: bool) {
    out.clear();
    if strip {
        out.extend_from_slice(&frame[..ETHERTYPE_AT]);
        out.extend_from_slice(&frame[ETHERTYPE_AT + TAG_LEN..]);
    } else {
        out.extend_from_slice(frame);
    }
    if with_fcs {
        out.extend_from_slice(&fcs::fcs(frame));
    }
}

/// Scatters what the RQ gets of a frame it changes ([`rebuild`], in the model's buffer, kept
/// for the next frame). Returns the bytes written. Kept out of [`deliver`], whose common frame
/// goes in as it came.
#[inline(never)]
fn scatter_rebuilt(
    side: &mut Side<'_>,
    who: Accessor,
    sges: &[rq::Sge],
    frame: &[u8],
    (strip, with_fcs): (bool, bool),
) -> Result<usize, ScatterError> {
    let mut buffer = std::mem::take(&mut side.m.rx_buffer);
    rebuild(&mut buffer, frame, strip, with_fcs);
    let scattered = rq::scatter(side.m, side.dma, who, sges, &buffer);
    let len = buffer.len();
    side.m.rx_buffer = buffer;
    scattered.map(|()| len)
}

/// Puts a frame into the next receive WQE of RQ `d.rqn` and writes its CQE.
fn deliver(
    side: &mut Side<'_>,
    d: Delivery,
    frame: &[u8],
    (l3, l4): (CqeL3HdrType, CqeL4HdrType),
    sums: RxCsum,
) -> bool {
    let Ok(rq) = side.m.rqs.get(d.rqn) else {
        return false;
    };
    if rq.ctx.state() != Ok(RqState::Rdy) || rq.ctx.wq().wq_type() != Ok(WqType::Cyclic) {
        return false;
    }
    let (cqn, stamp, who) = (
        rq.cqn,
        rq.stamp,
        Accessor {
            pd: rq.pd,
            rlky: rq.ctx.rlky(),
        },
    );
    let tag = if rq.ctx.vsd() { None } else { c_tag(frame) };
    let with_fcs = rq.ctx.scatter_fcs();
    let t = Target::Rq(d.rqn);
    let mut sges = rq::Sges::new();
    let index = match rq::peek_rq(rq, d.rqn, side.dma, &mut side.memo, &mut sges) {
        Peeked::Posted(index) => index,
        Peeked::Empty => {
            let set = rq.ctx.counter_set_id();
            crate::exec::counters::out_of_buffer(side.m, set);
            return false;
        }
        Peeked::Fault => {
            side.m.dma_faults += 1;
            return false;
        }
    };
    let scattered = if tag.is_some() || with_fcs {
        scatter_rebuilt(side, who, &sges, frame, (tag.is_some(), with_fcs))
    } else {
        rq::scatter(side.m, side.dma, who, &sges, frame).map(|()| frame.len())
    };
    let len = match scattered {
        Ok(len) => len,
        Err(ScatterError::TooLong) => {
            rq::fail(side, t, index, CqeSyndrome::LocalLengthErr);
            return false;
        }
        Err(ScatterError::Protection) => {
            rq::fail(side, t, index, CqeSyndrome::LocalProtErr);
            rq::rq_error(side, d.rqn);
            return false;
        }
    };
    rq::consume(side.m, t);
    let mut c = CqeWords::new(CqeOpcode::RespSend, d.flow_tag, index);
    c.set_rx(len as u32, l3, l4);
    c.set(Cqe64::CHECK_SUM, sums.check_sum.into());
    c.set(Cqe64::L3_OK, sums.l3_ok.into());
    c.set(Cqe64::L4_OK, sums.l4_ok.into());
    c.set(Cqe64::RSS_HASH_RESULT, d.hash.value.into());
    c.set(Cqe64::RSS_HASH_TYPE, d.hash.kind.into());
    if let Some(tci) = tag {
        c.set(Cqe64::HAS_VLAN, 1);
        c.set(Cqe64::VLAN_INFO, tci.into());
    }
    cq::post_words(side, cqn, stamp, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_outer_c_tag_is_stripped() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x81, 0x00, 0xa0, 0x2a, 0x08, 0x00, 0x45]);
        assert_eq!(c_tag(&f), Some(0xa02a));
        assert_eq!(c_tag(&f[..15]), None, "the TCI cut short");
        let mut s = f.clone();
        s[12] = 0x88;
        s[13] = 0xa8;
        assert_eq!(c_tag(&s), None, "an S-tag stays");
        let mut out = vec![9; 3];
        rebuild(&mut out, &f, true, false);
        assert_eq!(&out[12..], &[0x08, 0x00, 0x45]);
        rebuild(&mut out, &f, false, true);
        assert_eq!(out.len(), f.len() + 4);
        assert_eq!(&out[f.len()..], &fcs::fcs(&f));
    }
}
