//! Reliable-connected queue pairs whose state machine is enforced at compile time.
//!
//! A `Qp<'h, B, S>` belongs to HCA `'h` and is in state `S`, one of the state types generated
//! from the spec's state machine (`spec/qp_states.yaml`, module `mlx5_prm::qp_machine`,
//! re-exported here: [`Rst`], [`Init`], [`Rtr`], [`Rts`], [`Sqer`], [`ErrState`], ...). The
//! transitions are the generated [`Transitions`] methods (`qp.rst2init(Rst2init { .. })`,
//! `qp.init2rtr(..)`, `qp.rtr2rts(..)`, `qp.to_err()`, `qp.to_rst()`, ...), each taking the
//! fields its transition requires and callable only on the states it leaves, so a QP in RST
//! has no `rtr2rts` (`ui-tests/tests/driver/qp_wrong_state.rs` is the compile-fail case); the
//! driver's part is [`typestate`], one `Handle` implementation. A refused transition gives
//! the QP back unchanged, with the error ([`NotMoved`]).
//!
//! A QP reports to CQs of its own HCA (another's is refused with [`Error::ForeignResource`])
//! and keeps them alive; work requests ([`post`]) move their regions into the QP until their
//! completion comes back through [`Qp::complete`] (or [`Qp::complete_with`], which allocates
//! nothing). Sends are posted in RTS, one at a time or a batch per doorbell
//! ([`Qp::batch`]'s typed calls, the fastest; [`Qp::post_sends`], [`Qp::post_batch`]);
//! receives in INIT, RTR and RTS.
//!
//! A move to RST (`to_rst`, from any state) starts the QP afresh, as the device does: both
//! queues at WQE 0, and the work still posted discarded without completions, its regions back
//! with the caller through [`Qp::take_discarded`]. Completions of the QP's life before the
//! reset, still in its CQs or polled and not yet handed to it, are refused from then on.
//!
//! Dropping a QP destroys it; regions still posted are dropped with it. If the destroy fails
//! the device may still use the queue, its CQs and the posted regions: all of their memory
//! is quarantined instead of freed.
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mlx5_driver::backend::sim::SimBackend;
//! use mlx5_driver::cq::Cq;
//! use mlx5_driver::qp::{self, Qp, QpConfig, Rst2init, Init2rtr, Rtr2rts, Transitions as _};
//! use mlx5_driver::{Hca, HcaConfig};
//! use mlx5_prm::{QpMtu, QpPmState, QpState};
//!
//! let (backend, _device) = SimBackend::new(mlx5_sim::Config::default());
//! let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
//! let cq = Cq::create(&hca, 6).unwrap();
//! let config = QpConfig { log_sq_size: 4, log_rq_size: 4, log_rq_stride: 1 };
//! let qp = Qp::create(&hca, &cq, &cq, &config).unwrap();
//! let qpn = qp.qpn(); // connected to itself
//! let init = Rst2init { pkey_index: 0, vhca_port_num: 1, rre: true, rwe: true, rae: false,
//!     pm_state: QpPmState::Migrated, counter_set_id: 0 };
//! let qp = qp.rst2init(init).map_err(|(e, _qp)| e).unwrap();
//! let (rmac_47_32, rmac_31_0) = qp::rmac_fields([2, 0, 0, 0, 0, 1]);
//! let rtr = Init2rtr { mtu: QpMtu::Mtu1k, log_msg_max: 20, remote_qpn: qpn, next_rcv_psn: 0,
//!     log_rra_max: 1, min_rnr_nak: 1, rmac_47_32, rmac_31_0, rgid_rip: [0; 16],
//!     src_addr_index: 0, hop_limit: 64, tclass: 0, flow_label: 0, udp_sport: 0xc000, dscp: 0,
//!     eth_prio: 0, vhca_port_num: 1, optional: Default::default() };
//! let qp = qp.init2rtr(rtr).map_err(|(e, _qp)| e).unwrap();
//! let rts = Rtr2rts { next_send_psn: 0, retry_count: 7, rnr_retry: 7, log_sra_max: 1,
//!     ack_timeout: 14, optional: Default::default() };
//! let qp = qp.rtr2rts(rts).map_err(|(e, _qp)| e).unwrap();
//! assert_eq!((qp.state(), qp.query_state().unwrap()), (QpState::Rts, QpState::Rts));
//! # }
//! ```

mod batch;
mod complete;
pub mod post;
pub mod typestate;
mod wqe;

pub use batch::SendBatch;
pub use mlx5_prm::qp_machine::{
    ErrState, Init, Init2init, Init2initOptional, Init2rtr, Init2rtrOptional, Machine, Rst,
    Rst2init, Rtr, Rtr2rts, Rtr2rtsOptional, Rts, Rts2rts, Rts2rtsOptional, Sqd, Sqer, Sqer2rts,
    Sqer2rtsOptional, Suspended, ToErr, ToRst, Transitions,
};
pub use post::{
    AcceptsReceives, AcceptsSends, RemoteAddr, SendOp, SendRequest, MAX_INLINE, MAX_INLINE_RDMA,
};
pub use typestate::{rmac_fields, NotMoved};

use crate::backend::{Backend, DmaAlloc};
use crate::clock::TimestampFormat;
use crate::cq::{Completion, Cq, Shared};
use crate::doorbell::{SendDoorbell, WQEBB};
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::mr::Region;
use crate::ring::Ring;
use crate::undo::{Kind, Object};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{CreateQpOut, QpDoorbellRecord, QpPmState, QpRqType, QpServiceType};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

/// Geometry of a new QP.
#[derive(Debug, Clone)]
pub struct QpConfig {
    /// log2 of the send queue's WQEBBs (64 bytes each).
    pub log_sq_size: u8,
    /// log2 of the receive queue's entries.
    pub log_rq_size: u8,
    /// log2 of a receive entry's size in 16-byte units (scatter entries per receive).
    pub log_rq_stride: u8,
}

/// A queue pair of HCA `'h` in state `S`. (Boxed inside, so moving it between states is
/// cheap.)
pub struct Qp<'h, B: Backend, S> {
    inner: Box<Inner<'h, B>>,
    _state: PhantomData<S>,
}

/// What a QP is, whatever its state. Fields drop in order: the QP (destroyed by `Drop`),
/// then the regions still posted, then the CQs.
struct Inner<'h, B: Backend> {
    /// The QP object; memory: 0 the buffer (RQ then SQ), 1 the doorbell record.
    object: Object<'h, B>,
    qpn: u32,
    config: QpConfig,
    /// The format of its CQE timestamps (send and receive).
    format: TimestampFormat,
    work: Work<'h, B>,
    send_cq: Arc<Shared<'h, B>>,
    recv_cq: Arc<Shared<'h, B>>,
}

/// The rings' counters and the work requests the device holds: everything posting needs,
/// computed once at creation so that a post reads it instead of deriving it (the send queue's
/// place in the buffer, its doorbell record).
struct Work<'h, B: Backend> {
    /// The send doorbell (UAR page, next BlueFlame half).
    doorbell: SendDoorbell,
    /// Word access to the send queue: the QP buffer's WQEBBs after the receive queue (the
    /// memory is `object`'s, which the QP holds as long as this).
    wqes: Ring<WQEBB>,
    /// Word access to the doorbell record (likewise).
    record: Ring<8>,
    /// Send WQEBBs posted and completed (free-running; the doorbell record and the WQE index
    /// take their low 16 bits). Every request this driver posts is one WQEBB, so these also
    /// count requests, and `sq_pi - sq_ci` is the number outstanding.
    sq_pi: u32,
    sq_ci: u32,
    /// Receive WQEs posted (free-running; the doorbell record takes its low 16 bits, and the
    /// receive at the head of `recvs` is WQE `rq_pi - recvs.len()`).
    rq_pi: u32,
    /// Copy single-WQEBB requests whole into the BlueFlame register (saves the device a read).
    blueflame: bool,
    /// The outstanding sends by slot (`counter & mask`, as the WQEs): a posted request's
    /// identifier and region wait in the slot of its WQE until the completion that covers it.
    /// Slots outside `sq_ci..sq_pi` hold no region.
    sends: Box<[PostedSend<'h, B>]>,
    recvs: VecDeque<PostedRecv<'h, B>>,
    /// The send and the receive CQ's [`Shared::produced`] when the QP last started afresh
    /// (created or reset): completions from before it are of an earlier life.
    send_fence: u64,
    recv_fence: u64,
    /// Work a reset discarded, until the caller takes it ([`Qp::take_discarded`]).
    discarded: Vec<Done<'h, B>>,
}

/// What a send slot holds while its request is outstanding.
struct PostedSend<'h, B: Backend> {
    id: u64,
    region: Option<Region<'h, B>>,
}

struct PostedRecv<'h, B: Backend> {
    id: u64,
    region: Region<'h, B>,
}

/// A finished work request: its identifier, its buffer back, and how it ended.
#[derive(Debug)]
pub struct Done<'h, B: Backend> {
    /// The caller's identifier.
    pub id: u64,
    /// The buffer, back in the caller's hands.
    pub region: Option<Region<'h, B>>,
    /// The completion (`None` for unsignaled requests finished by a later one, and for work
    /// a reset discarded).
    pub completion: Option<Completion>,
}

impl<B: Backend> Inner<'_, B> {
    /// Destroys the QP (once). On failure the device may still use everything the QP names:
    /// its CQs and the regions posted to it are marked for quarantine.
    fn destroy(&mut self) -> Result<()> {
        let r = self.object.destroy();
        if r.is_err() {
            self.send_cq.taint();
            self.recv_cq.taint();
            for s in self.work.sends.iter() {
                if let Some(region) = &s.region {
                    region.taint();
                }
            }
            for r in &self.work.recvs {
                r.region.taint();
            }
        }
        r
    }
}

impl<'h, B: Backend> Inner<'h, B> {
    /// Starts the queues afresh after the device moved the QP to RST: the device starts again
    /// at WQE 0 of each queue and no longer holds the work posted before (a reset discards it
    /// without completions), so the counters and the doorbell record go back to 0 (else the
    /// device would take stale WQEs, naming regions the caller has back, for new ones), the
    /// work still posted moves to `discarded` (sends, then receives, each in posting order),
    /// and the fences move past every CQE the QP's earlier life wrote.
    fn reset(&mut self) {
        let work = &mut self.work;
        let mask = work.sends.len() - 1;
        let mut ci = work.sq_ci;
        while ci != work.sq_pi {
            let slot = &mut work.sends[ci as usize & mask];
            work.discarded.push(Done {
                id: slot.id,
                region: slot.region.take(),
                completion: None,
            });
            ci = ci.wrapping_add(1);
        }
        let recvs = work.recvs.drain(..).map(|p| Done {
            id: p.id,
            region: Some(p.region),
            completion: None,
        });
        work.discarded.extend(recvs);
        (work.sq_pi, work.sq_ci, work.rq_pi) = (0, 0, 0);
        let mut record = QpDoorbellRecord::new_unchecked(self.object.memory(1).slice(0, 8));
        record.set_receive_counter(0);
        record.set_send_counter(0);
        work.send_fence = self.send_cq.produced();
        work.recv_fence = self.recv_cq.produced();
    }
}

impl<B: Backend> Drop for Inner<'_, B> {
    fn drop(&mut self) {
        if let Err(e) = self.destroy() {
            log::warn!("destroying QP 0x{:x} on drop: {e}", self.qpn);
        }
    }
}

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.inner.qpn
    }

    /// The HCA it belongs to.
    pub fn hca(&self) -> &'h Hca<B> {
        self.inner.object.hca()
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &QpConfig {
        &self.inner.config
    }

    /// The format of the QP's CQE timestamps, send and receive: convert them with
    /// [`Clock::cqe_time_in`](crate::clock::Clock::cqe_time_in).
    pub fn ts_format(&self) -> TimestampFormat {
        self.inner.format
    }

    fn into_state<T>(self) -> Qp<'h, B, T> {
        Qp {
            inner: self.inner,
            _state: PhantomData,
        }
    }

    /// Bytes of the receive queue, at the start of the buffer (the send queue follows).
    #[cfg(all(test, feature = "sim"))]
    fn rq_bytes(&self) -> usize {
        rq_bytes(&self.inner.config)
    }

    /// Turns BlueFlame copies on or off: with it on, a request that fits one WQEBB is copied
    /// whole to the BlueFlame register instead of ringing with its first 8 bytes.
    pub fn set_blueflame(&mut self, on: bool) {
        self.inner.work.blueflame = on;
    }

    /// Sends outstanding and receives posted.
    pub fn outstanding(&self) -> (usize, usize) {
        let w = &self.inner.work;
        (w.sq_pi.wrapping_sub(w.sq_ci) as usize, w.recvs.len())
    }

    /// The work requests that moves to RST discarded, with their regions, since the last call:
    /// the sends outstanding, then the receives posted, each in the order they were posted
    /// (none carries a completion). The device no longer holds them; left here, they are
    /// dropped with the QP.
    pub fn take_discarded(&mut self) -> Vec<Done<'h, B>> {
        std::mem::take(&mut self.inner.work.discarded)
    }

    /// The state the device reports (QUERY_QP).
    pub fn query_state(&self) -> Result<mlx5_prm::QpState> {
        let qpn = self.inner.qpn;
        let out = self.hca().query::<QueryQp>(0, |i| i.set_qpn(qpn))?;
        let ctx = out.qpc();
        ctx.state().map_err(|e| Error::BadDeviceValue {
            command: QueryQp::NAME,
            what: e.to_string(),
        })
    }

    /// Destroys the QP and frees its buffers; regions still posted are dropped with it. If
    /// the destroy fails, the memory the device may still use (the QP's, its CQs', the posted
    /// regions') is quarantined and the error returned. (Dropping the QP does the same,
    /// logging the failure.)
    pub fn destroy(mut self) -> Result<()> {
        self.inner.destroy()
    }
}

impl<'h, B: Backend> Qp<'h, B, Rst> {
    /// Creates an RC QP reporting sends to `send_cq` and receives to `recv_cq` (which must be
    /// CQs of `hca`): a receive queue followed by a send queue in one page-aligned buffer, and
    /// a doorbell record. Its completions are stamped in the format the driver prefers on
    /// this device ([`TimestampFormat::preferred`]: real time when the device offers it);
    /// [`Qp::create_with_format`] picks another.
    pub fn create(
        hca: &'h Hca<B>,
        send_cq: &Cq<'h, B>,
        recv_cq: &Cq<'h, B>,
        config: &QpConfig,
    ) -> Result<Qp<'h, B, Rst>> {
        let format = TimestampFormat::preferred(&hca.info().caps());
        Qp::create_with_format(hca, send_cq, recv_cq, config, format)
    }

    /// As [`Qp::create`], with the completions stamped in `format` (qpc.ts_format). A format
    /// the device does not offer QPs is refused by the device
    /// ([`Error::Command`]).
    pub fn create_with_format(
        hca: &'h Hca<B>,
        send_cq: &Cq<'h, B>,
        recv_cq: &Cq<'h, B>,
        config: &QpConfig,
        format: TimestampFormat,
    ) -> Result<Qp<'h, B, Rst>> {
        for cq in [send_cq, recv_cq] {
            if !std::ptr::eq(cq.hca(), hca) {
                return Err(Error::ForeignResource {
                    what: "cq",
                    owner: "HCA",
                });
            }
        }
        if config.log_sq_size > 15 || config.log_rq_size > 15 || config.log_rq_stride > 6 {
            return Err(Error::InvalidArgument {
                what: "qp config",
                why: format!("{config:?} (log sizes up to 15, stride up to 6)"),
            });
        }
        let rq_bytes = rq_bytes(config);
        let sq_entries = 1usize << config.log_sq_size;
        let sq_bytes = sq_entries * WQEBB;
        let bytes = (rq_bytes + sq_bytes).div_ceil(4096) * 4096;
        let be = hca.backend();
        // Until the QP exists the memory is only the driver's: freed (dropped) on error.
        let buf = be.dma().alloc(bytes, 4096)?;
        let dbrec = be.dma().alloc(64, 64)?;
        let pages: Vec<u64> = (0..bytes / 4096)
            .map(|p| buf.iova() + (p * 4096) as u64)
            .collect();
        let (pd, uar, dbr) = (hca.info().pd, hca.info().uar, dbrec.iova());
        let (scq, rcq) = (send_cq.cqn(), recv_cq.cqn());
        let c = config.clone();
        // SAFETY: the memory named is `buf` and `dbrec`, which the QP's object keeps until
        // DESTROY_QP succeeds (quarantined otherwise); its CQs are checked to be this HCA's
        // and outlive it (the QP borrows them).
        let out = unsafe {
            hca.run_extra::<CreateQp>(0, pages.len() * 8, 0, |i| {
                let mut q = i.qpc_mut();
                q.set_st(QpServiceType::Rc);
                q.set_pm_state(QpPmState::Migrated);
                q.try_set_pd(pd)?;
                q.try_set_uar_page(uar)?;
                q.try_set_log_sq_size(c.log_sq_size)?;
                q.try_set_log_rq_size(c.log_rq_size)?;
                q.try_set_log_rq_stride(c.log_rq_stride)?;
                q.set_rq_type(QpRqType::Regular);
                q.try_set_cqn_snd(scq)?;
                q.try_set_cqn_rcv(rcq)?;
                q.set_log_page_size(0);
                q.set_dbr_addr(dbr);
                q.set_ts_format(format.ts_format());
                for (k, p) in pages.iter().enumerate() {
                    i.set_pas(k, *p)?;
                }
                Ok(())
            })
        }?;
        let qpn = out.qpn();
        // SAFETY: the memory is kept by the QP's object, which `Inner` holds for as long as
        // the rings (and which outlives every use: posting borrows the QP).
        let (wqes, record) = unsafe {
            (
                Ring::over_at(&buf, rq_bytes, sq_entries),
                Ring::over(&dbrec, 1),
            )
        };
        Ok(Qp {
            inner: Box::new(Inner {
                object: Object::new(hca, Kind::Qp(qpn), vec![buf, dbrec]),
                qpn,
                config: config.clone(),
                format,
                work: Work {
                    doorbell: SendDoorbell::new(uar),
                    wqes,
                    record,
                    sq_pi: 0,
                    sq_ci: 0,
                    rq_pi: 0,
                    blueflame: false,
                    sends: (0..sq_entries)
                        .map(|_| PostedSend {
                            id: 0,
                            region: None,
                        })
                        .collect(),
                    recvs: VecDeque::new(),
                    send_fence: send_cq.shared().produced(),
                    recv_fence: recv_cq.shared().produced(),
                    discarded: Vec::new(),
                },
                send_cq: send_cq.shared().clone(),
                recv_cq: recv_cq.shared().clone(),
            }),
            _state: PhantomData,
        })
    }
}

/// Bytes of a receive queue of `config`'s geometry.
fn rq_bytes(config: &QpConfig) -> usize {
    (1usize << config.log_rq_size) * (16usize << config.log_rq_stride)
}

const _: () = assert!(<CreateQpOut<[u8; 16]> as View<[u8; 16]>>::SIZE == 16);

#[cfg(all(test, feature = "sim"))]
mod tests;
