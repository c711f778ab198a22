//! Making the queues: checks of the configuration, then CQs, TIS, SQ (RST → RDY), RQ
//! (RST → RDY), TIR and the NIC receive steering, each onto the undo list as it is made (so a
//! failure undoes everything in reverse, and so does dropping the queues), then the parts of
//! every WQE that never change, and the RQ filled from the pool.

use super::lists::{forward_to_tir, set_wq_pages, DEST, PAGE, PAS};
use super::pool::Pool;
use super::rx::Rx;
use super::tx::Tx;
use super::wqe::*;
use super::{EthConfig, EthCounters, EthQueues};
use crate::backend::{Backend, DmaAlloc, DmaBuf};
use crate::clock::TimestampFormat;
use crate::cq::Cq;
use crate::doorbell::{SendDoorbell, WQEBB};
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::ring::{shift_of, Ring};
use crate::undo::{Kind, Undo};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::Bytes;
use mlx5_prm::{
    FlowTableType, RqMemType, RqState, SendOpcode, SqState, TircDispType, WqType,
    WqeCompletionMode, WqeCtrlSeg, WqeDataSeg, WqeEthSeg,
};

/// A work queue's ring (whole 4 KiB pages) and its doorbell record, with the ring's page
/// addresses.
fn ring_and_record<B: Backend>(hca: &Hca<B>, bytes: usize) -> Result<(DmaBuf, DmaBuf, Vec<u64>)> {
    let ring = hca.backend().dma().alloc(bytes.max(PAGE), PAGE)?;
    let pages = (0..ring.len() / PAGE)
        .map(|p| ring.iova() + (p * PAGE) as u64)
        .collect();
    let record = hca.backend().dma().alloc(64, 64)?;
    Ok((ring, record, pages))
}

/// 16-byte units in a send WQE: control, Ethernet and data segments, and one more for the
/// inline header.
pub(crate) fn ds(inline_l2: bool) -> u8 {
    if inline_l2 {
        4
    } else {
        3
    }
}

fn check(config: &EthConfig) -> Result<()> {
    let bad = |why: String| {
        Err(Error::InvalidArgument {
            what: "eth config",
            why,
        })
    };
    if !(1..=15).contains(&config.log_sq_size) || !(1..=15).contains(&config.log_rq_size) {
        return bad("log_sq_size and log_rq_size must be 1..=15".into());
    }
    let sq = 1u32 << config.log_sq_size;
    let every = u32::from(config.signal_every);
    if !every.is_power_of_two() || every > sq {
        return bad(format!(
            "signal_every {every} must be a power of two no larger than the SQ ({sq})"
        ));
    }
    if config.macs.len() > 1 << 16 {
        return bad(format!("{} MACs (at most 65536)", config.macs.len()));
    }
    Ok(())
}

impl<'p, B: Backend> EthQueues<'p, B> {
    /// Creates the queues on the pool's HCA, their CQs (completion events to the HCA's EQ),
    /// a TIS and a TIR in the HCA's transport domain, a NIC receive root flow table steering
    /// `config.macs` to the TIR; fills the RQ from `pool`. On failure everything made so far
    /// is undone, in reverse.
    ///
    /// The NIC has one receive root flow table, so an HCA has one set of queues at a time:
    /// while one lives, another `create` on the same HCA (from any pool) is refused with
    /// [`Error::Claimed`] before anything reaches the device.
    ///
    /// The SQ and RQ stamp their completions in the format the driver prefers on this device
    /// ([`TimestampFormat::preferred`]: real time when the device offers it, as Linux's
    /// mlx5e); [`EthQueues::create_with_format`] picks another.
    pub fn create(pool: &'p Pool<'p, B>, config: &EthConfig) -> Result<EthQueues<'p, B>> {
        let format = TimestampFormat::preferred(&pool.hca().info().caps());
        EthQueues::create_with_format(pool, config, format)
    }

    /// As [`EthQueues::create`], with the SQ's and RQ's completions stamped in `format`
    /// (their contexts' ts_format). A format the device does not offer is refused by the
    /// device (its BAD_PARAM comes back as [`Error::Command`]).
    pub fn create_with_format(
        pool: &'p Pool<'p, B>,
        config: &EthConfig,
        format: TimestampFormat,
    ) -> Result<EthQueues<'p, B>> {
        check(config)?;
        let hca = pool.hca();
        // One set of steered queues per HCA: the NIC has one receive root table.
        let rx_root = hca.claim_rx_root()?;
        let (pd, uar, td) = {
            let info = hca.info();
            (info.pd, info.uar, info.transport_domain)
        };
        // The CQs outlive the undo list (dropped after it, on failure too): the queues that
        // report to them go first.
        let tx_cq = Cq::create(hca, config.log_sq_size)?;
        let rx_cq = Cq::create(hca, config.log_rq_size)?;
        let mut undo = Undo::new();
        // If a queue cannot be destroyed, the device may still write the pool's buffers and
        // the CQs.
        undo.uses(move || pool.taint());
        let (a, b) = (tx_cq.shared().clone(), rx_cq.shared().clone());
        undo.uses(move || {
            a.taint();
            b.taint();
        });
        let (tx_cqn, rx_cqn) = (tx_cq.cqn(), rx_cq.cqn());

        // Every command below names only memory this function allocated and hands to the
        // undo list with the object that uses it (freed only after that object's destroy
        // succeeded, quarantined otherwise), or none; each object made goes on the list at
        // once, so an early return destroys it, in reverse order of making.

        // Transmit: TIS, SQ (RST → RDY).
        // SAFETY: a TIS on the HCA's transport domain names no memory; on the undo list.
        let tisn =
            unsafe { hca.run::<CreateTis>(0, |i| i.ctx_mut().set_transport_domain(td)) }?.tisn();
        undo.push(hca, Kind::Tis(tisn), Vec::new());
        let sq_entries = 1usize << config.log_sq_size;
        let (sq_ring, sq_record, sq_pages) = ring_and_record(hca, sq_entries * WQEBB)?;
        // SAFETY: the memory is kept by the SQ's object in the undo list, which the queues
        // hold as long as the rings.
        let (sq_wqes, sq_rec) =
            unsafe { (Ring::over(&sq_ring, sq_entries), Ring::over(&sq_record, 1)) };
        let sq_dbr = sq_record.iova();
        // SAFETY: the SQ's ring and doorbell record, kept by its object on the undo list.
        let sqn = unsafe {
            hca.run_extra::<CreateSq>(0, sq_pages.len() * PAS, 0, |i| {
                let mut c = i.ctx_mut();
                c.set_state(SqState::Rst);
                c.set_ts_format(format.ts_format());
                c.try_set_cqn(tx_cqn)?;
                c.set_flush_in_error_en(true);
                c.set_tis_lst_sz(1);
                c.try_set_tis_num_0(tisn)?;
                let mut w = c.wq_mut();
                w.set_wq_type(WqType::Cyclic);
                w.try_set_pd(pd)?;
                w.try_set_uar_page(uar)?;
                w.set_dbr_addr(sq_dbr);
                w.set_log_wq_stride(6);
                w.set_log_wq_pg_sz(0);
                w.try_set_log_wq_sz(config.log_sq_size)?;
                set_wq_pages(&mut w, &sq_pages)
            })
        }?
        .sqn();
        undo.push(hca, Kind::Sq(sqn), vec![sq_ring, sq_record]);
        // SAFETY: readies the SQ just made (its memory is on the undo list).
        unsafe {
            hca.run::<ModifySq>(0, |i| {
                i.set_sqn(sqn);
                i.set_sq_state(SqState::Rst);
                i.ctx_mut().set_state(SqState::Rdy);
            })
        }?;

        // Receive: RQ (RST → RDY), TIR.
        let rq_entries = 1usize << config.log_rq_size;
        let (rq_ring, rq_record, rq_pages) = ring_and_record(hca, rq_entries * RQ_STRIDE)?;
        // SAFETY: as for the SQ.
        let (rq_wqes, rq_rec) =
            unsafe { (Ring::over(&rq_ring, rq_entries), Ring::over(&rq_record, 1)) };
        let rq_dbr = rq_record.iova();
        // SAFETY: the RQ's ring and doorbell record, kept by its object on the undo list.
        let rqn = unsafe {
            hca.run_extra::<CreateRq>(0, rq_pages.len() * PAS, 0, |i| {
                let mut c = i.ctx_mut();
                c.set_state(RqState::Rst);
                c.set_mem_rq_type(RqMemType::MemoryRqInline);
                c.set_ts_format(format.ts_format());
                c.try_set_cqn(rx_cqn)?;
                let mut w = c.wq_mut();
                w.set_wq_type(WqType::Cyclic);
                w.try_set_pd(pd)?;
                w.set_dbr_addr(rq_dbr);
                w.set_log_wq_stride(RQ_STRIDE.trailing_zeros() as u8);
                w.set_log_wq_pg_sz(0);
                w.try_set_log_wq_sz(config.log_rq_size)?;
                set_wq_pages(&mut w, &rq_pages)
            })
        }?
        .rqn();
        undo.push(hca, Kind::Rq(rqn), vec![rq_ring, rq_record]);
        // SAFETY: readies the RQ just made. The device writes frames only to buffers posted
        // later, which the pool keeps (tainted, so quarantined, if a destroy fails).
        unsafe {
            hca.run::<ModifyRq>(0, |i| {
                i.set_rqn(rqn);
                i.set_rq_state(RqState::Rst);
                i.ctx_mut().set_state(RqState::Rdy);
            })
        }?;
        // SAFETY: a TIR over the RQ just made names no memory; on the undo list.
        let tirn = unsafe {
            hca.run_extra::<CreateTir>(0, 0, 0, |i| {
                let mut c = i.ctx_mut();
                c.try_set_transport_domain(td)?;
                c.set_disp_type(TircDispType::Direct);
                c.try_set_inline_rqn(rqn)?;
                Ok(())
            })
        }?
        .tirn();
        undo.push(hca, Kind::Tir(tirn), Vec::new());

        // Steering: a root table with one group matching on the destination MAC (or on
        // nothing, when every frame is wanted) and an entry per MAC forwarding to the TIR.
        let entries = config.macs.len().max(1) as u32;
        let log_size = entries.next_power_of_two().trailing_zeros() as u8;
        // SAFETY: steering objects name no memory; each goes on the undo list.
        let table = unsafe {
            hca.run::<CreateFlowTable>(0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.flow_table_context_mut().set_log_size(log_size);
            })
        }?
        .table_id();
        undo.push(hca, Kind::FlowTable(table), Vec::new());
        let by_mac = !config.macs.is_empty();
        // SAFETY: as for the table.
        let group = unsafe {
            hca.run::<CreateFlowGroup>(0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.set_table_id(table);
                i.set_start_flow_index(0);
                i.set_end_flow_index(entries - 1);
                if by_mac {
                    i.set_match_criteria_enable(1); // outer headers
                    let mut c = i.match_criteria_mut();
                    let mut h = c.outer_headers_mut();
                    h.set_dmac_47_16(u32::MAX);
                    h.set_dmac_15_0(u16::MAX);
                }
            })
        }?
        .group_id();
        undo.push(hca, Kind::FlowGroup { table, group }, Vec::new());
        for index in 0..entries {
            let mac = config.macs.get(index as usize).copied();
            // SAFETY: as for the table; the entry forwards to the TIR just made.
            unsafe {
                hca.run_extra::<SetFte>(0, DEST, 0, |i| {
                    i.set_table_type(FlowTableType::NicRx);
                    i.set_table_id(table);
                    i.set_flow_index(index);
                    let mut f = i.flow_context_mut();
                    f.set_group_id(group);
                    if let Some(mac) = mac {
                        let mut v = f.match_value_mut();
                        let mut h = v.outer_headers_mut();
                        h.set_dmac_47_16(u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]));
                        h.set_dmac_15_0(u16::from_be_bytes([mac[4], mac[5]]));
                    }
                    forward_to_tir(&mut f, tirn)
                })
            }?;
            undo.push(hca, Kind::Fte { table, index }, Vec::new());
        }
        // SAFETY: names no memory; makes the table just built the NIC receive root, which
        // `rx_root` claims for these queues alone.
        unsafe {
            hca.run::<SetFlowTableRoot>(0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.set_table_id(table);
            })
        }?;

        let bufs = pool.bufs();
        let mut q = EthQueues {
            hca,
            pool,
            bufs,
            tx: Tx {
                sqn,
                wqes: sq_wqes,
                record: sq_rec,
                cq: tx_cq,
                mask: sq_entries as u32 - 1,
                run_mask: run_mask(sq_entries as u32 - 1),
                pi: 0,
                ci: 0,
                slots: vec![0; sq_entries].into_boxed_slice(),
                doorbell: SendDoorbell::new(uar),
                inline_l2: config.inline_l2,
                every: u32::from(config.signal_every),
                ctrl_dw1: (sqn << shift_of(WqeCtrlSeg::QPN))
                    | (u32::from(ds(config.inline_l2)) << shift_of(WqeCtrlSeg::DS)),
            },
            rx: Rx {
                rqn,
                wqes: rq_wqes,
                record: rq_rec,
                cq: rx_cq,
                mask: rq_entries as u32 - 1,
                run_mask: run_mask(rq_entries as u32 - 1),
                pi: 0,
                ci: 0,
                slots: vec![0; rq_entries].into_boxed_slice(),
            },
            objects: undo,
            tirn,
            counters: EthCounters::default(),
            config: config.clone(),
            format,
            _rx_root: rx_root,
        };
        q.prefill(config.signal_every);
        q.refill(0);
        Ok(q)
    }

    /// Writes the parts of every WQE that never change.
    fn prefill(&mut self, signal_every: u16) {
        let every = u32::from(signal_every);
        let ds = ds(self.tx.inline_l2);
        for slot in 0..=self.tx.mask {
            let wqe = self.tx.wqes.slot(slot);
            let mut ctrl = WqeCtrlSeg::new_unchecked(wqe.sub(0, 16));
            ctrl.set_opcode(SendOpcode::Send);
            ctrl.set_qpn(self.tx.sqn);
            ctrl.set_ds(ds);
            ctrl.set_ce(if slot % every == every - 1 {
                WqeCompletionMode::CqUpdate
            } else {
                WqeCompletionMode::OnError
            });
            if self.tx.inline_l2 {
                WqeEthSeg::new_unchecked(wqe.sub(16, 16)).set_inline_hdr_sz(INLINE_L2 as u16);
            }
            let data_at = 16 * (ds as usize - 1);
            WqeDataSeg::new_unchecked(wqe.sub(data_at, 16)).set_lkey(self.bufs.lkey);
        }
        for slot in 0..=self.rx.mask {
            let mut d = WqeDataSeg::new_unchecked(self.rx.wqes.slot(slot));
            d.set_byte_count(self.bufs.buf_size);
            d.set_lkey(self.bufs.lkey);
        }
    }
}
