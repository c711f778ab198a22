//! The Ethernet path: SQ objects transmit SEND WQEs with an Ethernet segment (inline headers,
//! then gathered data) as frames on the port, and frames that arrive on the port are steered
//! through the NIC receive flow tables to a TIR, its RQ, and a receive WQE.

use super::mem::{self, Access, Accessor};
use super::rq::{self, ScatterError, Target};
use super::sendq::{self, Piece, DS};
use super::{cq, Side};
use crate::exec::flow::{Dest, ACTION_DROP, ACTION_FWD, CRITERIA_PARTS};
use crate::exec::tir::TirTarget;
use crate::model::Model;
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{
    CqeL3HdrType, CqeL4HdrType, CqeOpcode, CqeSyndrome, FlowTableType, FteMatchSetLyr24, RqState,
    SendOpcode, SqState, WqType,
};

/// Largest frame an SQ sends (there is no LSO in the model).
pub(crate) const MAX_FRAME: usize = 64 * 1024;
/// Byte offset of inline_hdr_sz inside the Ethernet segment, and of its first two bytes.
const INLINE_HDR_SZ: usize = 12;
const INLINE_HDR_START: usize = 14;
/// Bytes of the inline header that fit in the Ethernet segment itself.
const INLINE_IN_ESEG: usize = 2;
/// Nesting of flow tables the steering follows before giving up (loops are dropped).
const MAX_STEERING_DEPTH: u32 = 16;
/// Size of fte_match_param: seven parts of 64 bytes.
pub(crate) const MATCH_PARAM: usize = 512;
const PART: usize = 64;

/// Runs SQ object `sqn` (state RDY; in ERR its WQEs are flushed) up to the send counter of
/// its doorbell record.
pub(crate) fn run(side: &mut Side<'_>, sqn: u32, bf: Option<&[u8]>) {
    let mut bf = bf;
    let mut done: u32 = 0;
    loop {
        let Ok(sq) = side.m.sqs.get(sqn) else {
            return;
        };
        let flushing = match sq.ctx.state() {
            Ok(SqState::Rdy) => false,
            Ok(SqState::Err) => true,
            _ => return,
        };
        let wq = sq.ctx.wq();
        let log = wq.log_wq_sz();
        let size = 1u32 << log.min(16);
        let Some(pc) = sendq::counter(side.dma, wq.dbr_addr()) else {
            side.m.dma_faults += 1;
            return;
        };
        let ci = sq.ci;
        let pending = pc.wrapping_sub(ci);
        if pending == 0 || u32::from(pending) > size || done >= size {
            return;
        }
        let copy = bf
            .take()
            .filter(|b| sendq::index_of(b) == Some(ci) && b.len() >= sendq::ds(b).max(1) * DS);
        let wqe = match copy {
            Some(b) => {
                side.m.stats.blueflame_wqes += 1;
                Some(b.to_vec())
            }
            None => sendq::read(side.dma, &sq.ring, 0, log, ci),
        };
        let Some(wqe) = wqe else {
            side.m.dma_faults += 1;
            return;
        };
        let (cqn, flush_cqes) = (sq.cqn, sq.ctx.flush_in_error_en());
        if flushing {
            if flush_cqes {
                let e = cq::err_cqe(
                    CqeOpcode::ReqErr,
                    CqeSyndrome::WrFlushErr,
                    sqn,
                    ci,
                    sendq::opcode(&wqe),
                );
                cq::post(side, cqn, e);
            }
        } else {
            execute(side, sqn, &wqe, ci);
        }
        let n = sendq::wqebbs(&wqe);
        if let Ok(sq) = side.m.sqs.get_mut(sqn) {
            sq.ci = ci.wrapping_add(n);
        }
        done += u32::from(n);
    }
}

/// Executes one WQE of an SQ in RDY: NOP, or SEND with an Ethernet segment.
fn execute(side: &mut Side<'_>, sqn: u32, wqe: &[u8], index: u16) {
    let Ok(sq) = side.m.sqs.get(sqn) else {
        return;
    };
    let who = Accessor {
        pd: sq.pd,
        rlky: sq.ctx.rlky(),
    };
    let cqn = sq.cqn;
    let opcode = sendq::opcode(wqe);
    let ce = (wqe[11] >> 2) & 0x3;
    let end = sendq::ds(wqe) * DS;
    let result = match SendOpcode::from_raw(opcode.into()) {
        _ if end < DS => Err(CqeSyndrome::LocalQpOpErr),
        Some(SendOpcode::Nop) => Ok(()),
        Some(SendOpcode::Send) => frame(side, who, wqe, end).map(|f| {
            side.m.stats.tx_frames += 1;
            if side.m.port.oper_up() {
                side.m.outbox.push(f);
            }
        }),
        _ => Err(CqeSyndrome::LocalQpOpErr),
    };
    match result {
        Ok(()) if ce >= 2 => {
            let mut c = cq::cqe(CqeOpcode::Req, sqn, index);
            c.set_s_wqe_opcode(opcode);
            cq::post(side, cqn, *c.storage());
        }
        Ok(()) => {}
        Err(syndrome) => {
            let e = cq::err_cqe(CqeOpcode::ReqErr, syndrome, sqn, index, opcode);
            cq::post(side, cqn, e);
            if let Ok(sq) = side.m.sqs.get_mut(sqn) {
                sq.ctx.set_state(SqState::Err);
            }
        }
    }
}

/// Builds the frame of a SEND WQE: the inline headers of the Ethernet segment (inline_hdr_sz
/// bytes: two in the segment, the rest in the following 16-byte units), then the gather list.
fn frame(
    side: &mut Side<'_>,
    who: Accessor,
    wqe: &[u8],
    end: usize,
) -> Result<Vec<u8>, CqeSyndrome> {
    let eseg = DS;
    if end < eseg + DS {
        return Err(CqeSyndrome::LocalQpOpErr);
    }
    let hdr = usize::from(u16::from_be_bytes([
        wqe[eseg + INLINE_HDR_SZ],
        wqe[eseg + INLINE_HDR_SZ + 1],
    ]));
    let mut f = Vec::with_capacity(hdr.min(MAX_FRAME));
    let first = hdr.min(INLINE_IN_ESEG);
    f.extend_from_slice(&wqe[eseg + INLINE_HDR_START..eseg + INLINE_HDR_START + first]);
    let rest = hdr - first;
    let after = eseg + DS;
    if rest > end.saturating_sub(after) {
        return Err(CqeSyndrome::LocalQpOpErr);
    }
    f.extend_from_slice(&wqe[after..after + rest]);
    let data = after + rest.div_ceil(DS) * DS;
    let pieces = sendq::gather_list(wqe, data, end).ok_or(CqeSyndrome::LocalQpOpErr)?;
    let total: usize = f.len()
        + pieces
            .iter()
            .map(|p| match p {
                Piece::Inline(r) => r.len(),
                Piece::Data { len, .. } => *len as usize,
            })
            .sum::<usize>();
    if total > MAX_FRAME {
        return Err(CqeSyndrome::LocalLengthErr);
    }
    for p in pieces {
        match p {
            Piece::Inline(r) => f.extend_from_slice(&wqe[r]),
            Piece::Data { len, lkey, addr } => {
                let e = mem::resolve(side.m, lkey, who, addr, len.into(), Access::LocalRead)
                    .map_err(|_| CqeSyndrome::LocalProtErr)?;
                if !mem::read(side.dma, &e, &mut f) {
                    side.m.dma_faults += 1;
                    return Err(CqeSyndrome::LocalProtErr);
                }
            }
        }
    }
    Ok(f)
}

/// What the parser learned about a frame.
struct Parsed {
    /// The frame as fte_match_param would see it: outer headers filled in, the rest 0.
    key: [u8; MATCH_PARAM],
    l3: CqeL3HdrType,
    l4: CqeL4HdrType,
}

/// Parses the L2, L3 and L4 headers of a frame into the outer headers of a match key.
fn parse(frame: &[u8]) -> Parsed {
    let mut key = [0u8; MATCH_PARAM];
    let mut l3 = CqeL3HdrType::None;
    let mut l4 = CqeL4HdrType::None;
    let mut addrs: Vec<(usize, &[u8])> = Vec::new();
    let mut h = FteMatchSetLyr24::new_unchecked(&mut key[..PART]);
    let b = |at: usize, n: usize| frame.get(at..at + n);
    if let (Some(d), Some(s)) = (b(0, 6), b(6, 6)) {
        h.set_dmac_47_16(d.read_be32(0));
        h.set_dmac_15_0(u16::from_be_bytes([d[4], d[5]]));
        h.set_smac_47_16(s.read_be32(0));
        h.set_smac_15_0(u16::from_be_bytes([s[4], s[5]]));
    }
    let mut at = 12;
    let mut ethertype = b(at, 2).map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
    if ethertype == 0x8100 {
        if let Some(tci) = b(at + 2, 2) {
            let tci = u16::from_be_bytes([tci[0], tci[1]]);
            h.set_cvlan_tag(true);
            h.set_first_prio((tci >> 13) as u8);
            h.set_first_cfi(tci >> 12 & 1 == 1);
            h.set_first_vid(tci & 0xfff);
        }
        at += 4;
        ethertype = b(at, 2).map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
    }
    h.set_ethertype(ethertype);
    let ip = at + 2;
    let (proto, l4_at) = match ethertype {
        0x0800 => match b(ip, 20) {
            Some(v4) => {
                l3 = CqeL3HdrType::Ipv4;
                h.set_ip_version(4);
                h.set_ttl_hoplimit(v4[8]);
                h.set_ip_protocol(v4[9]);
                h.set_ip_dscp(v4[1] >> 2);
                h.set_ip_ecn(v4[1] & 3);
                h.set_ipv4_ihl(v4[0] & 0xf);
                // IPv4 addresses sit in the last 4 bytes of the 16-byte address fields.
                let src = FteMatchSetLyr24::SRC_IPV4_SRC_IPV6.bit_offset / 8 + 12;
                let dst = FteMatchSetLyr24::DST_IPV4_DST_IPV6.bit_offset / 8 + 12;
                let frag = u16::from_be_bytes([v4[6], v4[7]]) & 0x3fff != 0;
                h.set_frag(frag);
                addrs.push((src, &v4[12..16]));
                addrs.push((dst, &v4[16..20]));
                (Some(v4[9]), ip + usize::from(v4[0] & 0xf) * 4)
            }
            None => (None, 0),
        },
        0x86dd => match b(ip, 40) {
            Some(v6) => {
                l3 = CqeL3HdrType::Ipv6;
                h.set_ip_version(6);
                h.set_ip_protocol(v6[6]);
                h.set_ttl_hoplimit(v6[7]);
                let src = FteMatchSetLyr24::SRC_IPV4_SRC_IPV6.bit_offset / 8;
                let dst = FteMatchSetLyr24::DST_IPV4_DST_IPV6.bit_offset / 8;
                addrs.push((src, &v6[8..24]));
                addrs.push((dst, &v6[24..40]));
                (Some(v6[6]), ip + 40)
            }
            None => (None, 0),
        },
        _ => (None, 0),
    };
    if let (Some(proto @ (6 | 17)), Some(ports)) = (proto, b(l4_at, 4)) {
        let (sport, dport) = (
            u16::from_be_bytes([ports[0], ports[1]]),
            u16::from_be_bytes([ports[2], ports[3]]),
        );
        if proto == 6 {
            h.set_tcp_sport(sport);
            h.set_tcp_dport(dport);
            let flags = b(l4_at + 12, 2).map_or(0, |f| u16::from_be_bytes([f[0], f[1]]) & 0x1ff);
            h.set_tcp_flags(flags);
            l4 = if flags & 0x10 == 0 {
                CqeL4HdrType::TcpNoAck
            } else {
                CqeL4HdrType::TcpAckAndData
            };
        } else {
            h.set_udp_sport(sport);
            h.set_udp_dport(dport);
            l4 = CqeL4HdrType::Udp;
        }
    }
    for (at, bytes) in addrs {
        key[at..at + bytes.len()].copy_from_slice(bytes);
    }
    Parsed { key, l3, l4 }
}

/// True when `key` matches `value` under the group's mask, in the parts it enables.
fn matches(key: &[u8], enable: u8, mask: &[u8], value: &[u8]) -> bool {
    (0..7)
        .filter(|part| enable >> part & 1 == 1)
        .flat_map(|part| part * PART..(part + 1) * PART)
        .all(|i| {
            let (k, m, v) = (
                key.get(i).copied().unwrap_or(0),
                mask.get(i).copied().unwrap_or(0),
                value.get(i).copied().unwrap_or(0),
            );
            k & m == v & m
        })
}

/// Steers `key` through flow table `table` (and tables it forwards or misses to): the TIRs the
/// frame goes to, with the flow tag of the entry that sent it there. Entries are tried in
/// index order; the first that matches decides (drop, or forward to its destinations); an
/// entry that only allows is passed over; with no match the table's miss action applies
/// (default: drop).
fn steer(m: &Model, table: u32, key: &[u8], depth: u32, out: &mut Vec<(u32, u32)>) {
    if depth > MAX_STEERING_DEPTH {
        return;
    }
    let Ok(t) = m.flow.tables.get(table) else {
        return;
    };
    for fte in t.entries.values() {
        let Ok(group) = m.flow.groups.get(fte.group) else {
            continue;
        };
        if !matches(
            key,
            group.criteria_enable & CRITERIA_PARTS,
            &group.criteria,
            &fte.value,
        ) {
            continue;
        }
        if fte.action & ACTION_DROP != 0 {
            return;
        }
        if fte.action & ACTION_FWD != 0 {
            for d in &fte.dests {
                match *d {
                    Dest::Tir(tir) => out.push((tir, fte.flow_tag)),
                    Dest::Table(next) => steer(m, next, key, depth + 1, out),
                }
            }
            return;
        }
    }
    if let Some(miss) = t.miss {
        steer(m, miss, key, depth + 1, out);
    }
}

/// A frame arrives on the port: steered from the NIC receive root table to TIRs, each
/// delivering it to its RQ (a direct TIR's inline RQ, or the first RQ of an indirect TIR's
/// RQT). True when at least one RQ took it; otherwise it is counted as dropped.
pub(crate) fn receive(side: &mut Side<'_>, frame: &[u8]) -> bool {
    let delivered = side.m.port.oper_up() && steer_and_deliver(side, frame);
    if delivered {
        side.m.stats.rx_frames += 1;
    } else {
        side.m.stats.rx_dropped += 1;
    }
    delivered
}

fn steer_and_deliver(side: &mut Side<'_>, frame: &[u8]) -> bool {
    let Some(&root) = side.m.flow.roots.get(&FlowTableType::NicRx.raw()) else {
        return false;
    };
    let parsed = parse(frame);
    let mut tirs = Vec::new();
    steer(side.m, root, &parsed.key, 0, &mut tirs);
    let mut delivered = false;
    for (tir, tag) in tirs {
        let rqn = match side.m.tirs.get(tir).map(|t| t.target) {
            Ok(TirTarget::Rq(rqn)) => rqn,
            Ok(TirTarget::Rqt(rqt)) => {
                match side.m.rqts.get(rqt).ok().and_then(|t| t.rqs.first()) {
                    Some(&rqn) => rqn,
                    None => continue,
                }
            }
            Err(_) => continue,
        };
        delivered |= deliver(side, rqn, frame, tag, &parsed);
    }
    delivered
}

/// Puts a frame into the next receive WQE of RQ `rqn` and writes its CQE.
fn deliver(side: &mut Side<'_>, rqn: u32, frame: &[u8], flow_tag: u32, parsed: &Parsed) -> bool {
    let Ok(rq) = side.m.rqs.get(rqn) else {
        return false;
    };
    if rq.ctx.state() != Ok(RqState::Rdy) || rq.ctx.wq().wq_type() != Ok(WqType::Cyclic) {
        return false;
    }
    let (cqn, who) = (
        rq.cqn,
        Accessor {
            pd: rq.pd,
            rlky: rq.ctx.rlky(),
        },
    );
    let t = Target::Rq(rqn);
    let Some(posted) = rq::peek(side.m, side.dma, t) else {
        return false;
    };
    match rq::scatter(side.m, side.dma, who, &posted.sges, frame) {
        Ok(()) => {}
        Err(ScatterError::TooLong) => {
            rq::fail(side, t, posted.index, CqeSyndrome::LocalLengthErr);
            return false;
        }
        Err(ScatterError::Protection) => {
            rq::fail(side, t, posted.index, CqeSyndrome::LocalProtErr);
            rq::rq_error(side, rqn);
            return false;
        }
    }
    rq::consume(side.m, t);
    let mut c = cq::cqe(CqeOpcode::RespSend, flow_tag, posted.index);
    c.set_byte_cnt(frame.len() as u32);
    c.set_l3_hdr_type(parsed.l3);
    c.set_l4_hdr_type(parsed.l4);
    c.set_l2_ok(true);
    cq::post(side, cqn, *c.storage())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vlan_ipv4_udp() {
        let mut f = vec![0u8; 64];
        f[..6].copy_from_slice(&[0x02, 1, 2, 3, 4, 5]);
        f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        f[14..16].copy_from_slice(&((5u16 << 13) | 42).to_be_bytes());
        f[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
        f[18] = 0x45;
        f[27] = 17;
        f[30..34].copy_from_slice(&[10, 0, 0, 1]);
        f[38..40].copy_from_slice(&4791u16.to_be_bytes());
        let p = parse(&f);
        let h = FteMatchSetLyr24::new_unchecked(&p.key[..PART]);
        assert_eq!((h.dmac_47_16(), h.dmac_15_0()), (0x0201_0203, 0x0405));
        assert_eq!(
            (h.first_vid(), h.first_prio(), h.cvlan_tag()),
            (42, 5, true)
        );
        assert_eq!(
            (h.ethertype(), h.ip_version(), h.ip_protocol()),
            (0x0800, 4, 17)
        );
        assert_eq!(h.udp_sport(), 4791);
        assert_eq!(&p.key[0x2c..0x30], &[10, 0, 0, 1]);
        assert_eq!((p.l3, p.l4), (CqeL3HdrType::Ipv4, CqeL4HdrType::Udp));
        // Truncated frames parse as far as they go.
        let _ = parse(&f[..3]);
        let _ = parse(&[]);
    }
}
