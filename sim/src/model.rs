//! The device's mutable state behind the command interface: the function's life cycle,
//! capabilities in force, firmware pages, every object table, the port and vport, and the
//! command log. One lock guards it all, so every command executes atomically.

use crate::bar;
use crate::budget::Budget;
use crate::caps::Caps;
use crate::clock::Clock;
use crate::config::Config;
use crate::config::RcTransport;
use crate::datapath::memo::Steered;
use crate::datapath::pending::Pending;
use crate::datapath::roce::{Loopback, RoceStats};
use crate::datapath::sendq::Wqe;
use crate::events::Eq;
use crate::exec::{
    counters::{PortCounters, QCounter, VnicCounters, VportCounters},
    cq::Cq,
    flow::FlowTables,
    mkey::Mkey,
    qp::Qp,
    reg::RegisterState,
    tir::{Rqt, Tir, Tis},
    wq::{Rq, Sq},
};
use crate::frames::Frames;
use crate::irq::Interrupts;
use crate::observe::Unimplemented;
use crate::pages::PagePool;
use crate::record::CommandLog;
use crate::roce_addr::RoceAddrTable;
use crate::syndrome as s;
use crate::table::{Table, TableErrors};
use mlx5_prm::CmdHcaCap;

/// Where the function is in its life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hca {
    /// After reset or DISABLE_HCA.
    Disabled,
    /// After ENABLE_HCA (or TEARDOWN_HCA): pages and capabilities can be negotiated.
    Enabled,
    /// After INIT_HCA: objects can be created.
    Initialized,
}

/// The Ethernet port and the function's NIC vport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Port {
    /// The link (cable, peer) is up.
    pub link_up: bool,
    /// PAOS admin_status: the driver wants the port up.
    pub admin_up: bool,
    /// PMTU admin_mtu (bytes, whole L2 frame).
    pub admin_mtu: u16,
    /// PTYS eth_proto_admin.
    pub eth_proto_admin: u32,
    /// NIC vport context fields.
    pub vport_mtu: u16,
    pub roce_en: bool,
    pub min_wqe_inline_mode: u8,
    pub promisc: (bool, bool, bool),
    pub disable_local_lb: (bool, bool),
    pub mac: u64,
    pub node_guid: u64,
    pub port_guid: u64,
    /// PAOS event generation mode (e).
    pub paos_events: u8,
    /// PFCC global pause: (send, obey).
    pub pause: (bool, bool),
    /// PPLM fec_override_admin for 10/40, 25, 50 and 100 Gb/s (0: the firmware's choice).
    pub fec_admin: [u16; 4],
    /// The module in the cage (MCIA reads it); `None`: the cage is empty.
    pub module: Option<std::sync::Arc<crate::module_eeprom::ModuleEeprom>>,
    /// What the port carried (PPCNT).
    pub counters: PortCounters,
}

/// Largest MTU the port takes (PMTU max_mtu).
pub(crate) const PORT_MAX_MTU: u16 = 9978;
/// Link modes the port supports (PTYS eth_proto_capability): 10G, 25G, 40G, 50G and 100G
/// copper and optics, as bit positions of the Ethernet protocol mask.
pub(crate) const ETH_PROTO_CAPABILITY: u32 = (1 << 6)
    | (1 << 12)
    | (1 << 13)
    | (1 << 18)
    | (1 << 20)
    | (1 << 21)
    | (1 << 27)
    | (1 << 29)
    | (1 << 30);
/// The mode the link runs at while up: 100GBASE-SR4, the module's (module_eeprom.rs).
pub(crate) const ETH_PROTO_OPER: u32 = 1 << 21;

impl Port {
    fn new() -> Port {
        Port {
            link_up: true,
            admin_up: true,
            admin_mtu: 1522,
            eth_proto_admin: ETH_PROTO_CAPABILITY,
            vport_mtu: 1500,
            roce_en: false,
            min_wqe_inline_mode: 0,
            promisc: (false, false, false),
            disable_local_lb: (false, false),
            // A locally administered unicast address: 02:4d:4c:58:35:00 ("MLX5").
            mac: 0x0000_024d_4c58_3500,
            node_guid: 0x024d_4cff_fe58_3500,
            port_guid: 0x024d_4cff_fe58_3500,
            paos_events: 0,
            pause: (false, false),
            fec_admin: [0; 4],
            module: Some(std::sync::Arc::new(
                crate::module_eeprom::ModuleEeprom::qsfp28_sr4(),
            )),
            counters: PortCounters::default(),
        }
    }

    /// The operational state: up when both the driver and the link want it.
    pub fn oper_up(&self) -> bool {
        self.link_up && self.admin_up
    }
}

/// Doorbell values last written to one UAR page, kept for inspection and for the data path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UarState {
    /// Last 64-bit CQ doorbell (high dword sn/cmd/ci, low dword cqn).
    pub cq_doorbell: Option<u64>,
    /// High dword of a 64-bit doorbell written as two 32-bit halves, until the low one comes.
    pub pending_high: Option<u32>,
    /// Last BlueFlame / send doorbell (first 8 bytes of the control segment).
    pub bf_doorbell: Option<u64>,
}

/// [`UarState`] by UAR index, in a vector indexed by it: a send doorbell records its value
/// here, and a map lookup per doorbell was a visible part of a doorbell's cost. UAR indices
/// are below [`bar::LAST_UAR`](crate::bar::LAST_UAR), so the vector stays small.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UarStates(Vec<UarState>);

impl UarStates {
    /// The state of UAR page `index`, created empty if there is none yet.
    pub fn entry(&mut self, index: u32) -> &mut UarState {
        let i = index as usize;
        if i >= self.0.len() {
            self.0.resize(i + 1, UarState::default());
        }
        &mut self.0[i]
    }

    /// The state of UAR page `index`, if anything was written to it.
    pub fn get(&self, index: u32) -> Option<&UarState> {
        self.0.get(index as usize)
    }

    /// Forgets what was written to UAR page `index` (it was freed).
    pub fn remove(&mut self, index: u32) {
        if let Some(s) = self.0.get_mut(index as usize) {
            *s = UarState::default();
        }
    }

    /// Forgets every page's state.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// Counters of the data path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DataStats {
    /// Frames SQs sent (whether or not anything was at the other end).
    pub tx_frames: u64,
    /// Of those, frames the port discarded because its link was down (PPCNT's RFC 2863
    /// `if_out_discards`, Linux's `tx_discards_phy`).
    pub tx_discarded: u64,
    /// Frames received and delivered to at least one RQ.
    pub rx_frames: u64,
    /// Frames received and dropped: port down, no steering match, no receive WQE, ...
    pub rx_dropped: u64,
    /// Send doorbells naming no queue of the UAR page they were written to.
    pub doorbells_ignored: u64,
    /// CQEs not written because the CQ was gone, in error or full.
    pub cqes_dropped: u64,
    /// WQEs executed from a BlueFlame copy rather than read from the ring.
    pub blueflame_wqes: u64,
}

/// Handle ranges of the object tables. The ranges differ per kind so that a driver that
/// passes one kind's number where another belongs gets BAD_RES instead of a silent match.
pub(crate) mod handles {
    pub const PD: (u32, u32) = (0x11, 0xff_ffff);
    pub const TD: (u32, u32) = (0x21, 0xff_ffff);
    pub const EQ: (u32, u32) = (0, 0xff);
    pub const CQ: (u32, u32) = (0x401, 0xff_ffff);
    pub const MKEY: (u32, u32) = (0x801, 0xff_ffff);
    pub const QP: (u32, u32) = (0xc02, 0xff_ffff);
    pub const SQ: (u32, u32) = (0x1001, 0xff_ffff);
    pub const RQ: (u32, u32) = (0x1401, 0xff_ffff);
    pub const TIS: (u32, u32) = (0x1801, 0xff_ffff);
    pub const TIR: (u32, u32) = (0x1c01, 0xff_ffff);
    pub const RQT: (u32, u32) = (0x2001, 0xff_ffff);
    /// counter_set_id is 8 bits, and 0 means "no counter set".
    pub const Q_COUNTER: (u32, u32) = (1, 0xff);
}

fn table<T>(range: (u32, u32), unknown: u32, busy: u32, limit: u32) -> Table<T> {
    Table::new(
        range.0,
        range.1,
        TableErrors {
            unknown,
            busy,
            limit,
        },
    )
}

/// All mutable device state.
pub(crate) struct Model {
    pub hca: Hca,
    pub issi: u16,
    /// The profile the device was built with (maxima, reset values, settable fields).
    pub profile: Caps,
    /// Capability pages in force: general, Ethernet offloads, RoCE.
    pub cur: Caps,
    pub pages: PagePool,
    pub uars: Table<()>,
    pub pds: Table<()>,
    pub tds: Table<()>,
    pub eqs: Table<Eq>,
    pub cqs: Table<Cq>,
    pub mkeys: Table<Mkey>,
    pub qps: Table<Qp>,
    pub sqs: Table<Sq>,
    pub rqs: Table<Rq>,
    pub tises: Table<Tis>,
    pub tirs: Table<Tir>,
    pub rqts: Table<Rqt>,
    /// Queue counter sets (ALLOC_Q_COUNTER).
    pub qcounters: Table<QCounter>,
    /// What the objects keep of the guest's choosing (page lists, translations, RQT entries,
    /// flow criteria), against the model-wide budget (see `budget`).
    pub storage: Budget,
    /// The vport's traffic counters (QUERY_VPORT_COUNTER).
    pub vport_counters: VportCounters,
    /// The vNIC's diagnostic counters (QUERY_VNIC_ENV).
    pub vnic: VnicCounters,
    pub flow: FlowTables,
    pub port: Port,
    /// The registers' own state (host endianness, the DTOR timeouts).
    pub registers: RegisterState,
    /// Commands, capability types and registers asked for that the model does not have.
    pub unimplemented: Unimplemented,
    /// TEARDOWN_HCA prepare_fast_teardown ran: the teardown happens when the driver sets
    /// the NIC interface to disabled.
    pub fast_teardown_prepared: bool,
    pub driver_version: Option<[u8; 64]>,
    pub uar_state: UarStates,
    /// Interrupts raised, by MSI-X vector, and those not yet handed to the host's sink.
    pub interrupts: Interrupts,
    /// The function's MSI-X vectors ([`Config::msix_vectors`]).
    pub msix_vectors: u16,
    /// Device DMA accesses that hit unmapped memory (a driver bug on real hardware).
    pub dma_faults: u64,
    /// The command log (bounded).
    pub records: CommandLog,
    /// Data path counters.
    pub stats: DataStats,
    /// Frames the SQs sent while the model was locked, delivered to the link once it is not.
    pub outbox: Frames,
    /// The buffer SQ runs read WQEs into, kept between runs.
    pub wqe_buffer: Option<Box<Wqe>>,
    /// Where a received frame is rebuilt when its RQ changes it (a stripped VLAN tag, an
    /// appended FCS), kept between frames.
    pub rx_buffer: Vec<u8>,
    /// Commands executed so far: what the data path remembers of state commands set up (how
    /// a frame is steered) holds only while this is unchanged.
    pub generation: u64,
    /// How the last frame received was steered, and at which generation (see `Steered`).
    pub steered: Option<(u64, Steered)>,
    /// Objects with work the device does on its own (see `datapath::pending`).
    pub pending: Pending,
    /// The free-running clock of the internal timer, which CQE timestamps count.
    pub clock: Clock,
    /// Its ticks as read at the first completion of the current session (see
    /// `datapath::Side::now`); forgotten when the next session locks the model.
    pub clock_reading: Option<u64>,
    /// The port's RoCE address (GID) table (SET_ROCE_ADDRESS).
    pub roce_addrs: RoceAddrTable,
    /// How RC QPs reach their peers.
    pub rc_transport: RcTransport,
    /// What the RoCE transport counts of the device.
    pub roce_stats: RoceStats,
    /// RoCE packets to the device's own addresses, waiting to arrive.
    pub roce_loop: Loopback,
}

impl Model {
    /// The state of a device built from `config` at power-on, its CQE timestamps on `clock`
    /// (the initialization segment's timer).
    pub fn new(config: &Config, clock: Clock) -> Model {
        Model {
            hca: Hca::Disabled,
            issi: 0,
            profile: config.caps.clone(),
            cur: config.caps.clone(),
            pages: PagePool::new(config.boot_pages, config.init_pages, config.regular_pages),
            uars: table(
                (bar::FIRST_UAR, bar::LAST_UAR),
                s::UAR_UNKNOWN,
                s::UAR_BUSY,
                s::UAR_EXHAUSTED,
            ),
            pds: table(handles::PD, s::PD_UNKNOWN, s::PD_BUSY, s::PD_LIMIT),
            tds: table(handles::TD, s::TD_UNKNOWN, s::TD_BUSY, s::TD_LIMIT),
            eqs: table(handles::EQ, s::EQ_UNKNOWN, s::EQ_BUSY, s::EQ_LIMIT),
            cqs: table(handles::CQ, s::CQ_UNKNOWN, s::CQ_BUSY, s::CQ_LIMIT),
            mkeys: table(
                handles::MKEY,
                s::MKEY_UNKNOWN,
                s::MKEY_UNKNOWN,
                s::MKEY_LIMIT,
            ),
            qps: table(handles::QP, s::QP_UNKNOWN, s::QP_UNKNOWN, s::QP_LIMIT),
            sqs: table(handles::SQ, s::SQ_UNKNOWN, s::SQ_UNKNOWN, s::SQ_LIMIT),
            rqs: table(handles::RQ, s::RQ_UNKNOWN, s::RQ_BUSY, s::RQ_LIMIT),
            tises: table(handles::TIS, s::TIS_UNKNOWN, s::TIS_BUSY, s::TIS_LIMIT),
            tirs: table(handles::TIR, s::TIR_UNKNOWN, s::TIR_BUSY, s::TIR_LIMIT),
            rqts: table(handles::RQT, s::RQT_UNKNOWN, s::RQT_BUSY, s::RQT_LIMIT),
            qcounters: table(
                handles::Q_COUNTER,
                s::QCNT_UNKNOWN,
                s::QCNT_UNKNOWN,
                s::QCNT_LIMIT,
            ),
            storage: Budget::default(),
            vport_counters: VportCounters::default(),
            vnic: VnicCounters::default(),
            flow: FlowTables::default(),
            port: Port::new(),
            registers: RegisterState {
                host_endianness: [0; 16],
                timeouts: config.timeouts,
                nv: crate::exec::nv_reg::NvStore::new(config),
            },
            unimplemented: Unimplemented::default(),
            fast_teardown_prepared: false,
            driver_version: None,
            uar_state: UarStates::default(),
            interrupts: Interrupts::default(),
            msix_vectors: config.msix_vectors,
            dma_faults: 0,
            records: CommandLog::default(),
            stats: DataStats::default(),
            outbox: Frames::default(),
            wqe_buffer: None,
            rx_buffer: Vec::new(),
            generation: 0,
            steered: None,
            pending: Pending::default(),
            clock,
            clock_reading: None,
            roce_addrs: RoceAddrTable::new(usize::from(
                config.caps.roce_max.roce_address_table_size(),
            )),
            rc_transport: config.rc_transport,
            roce_stats: RoceStats::default(),
            roce_loop: Loopback::default(),
        }
    }

    /// General capabilities in force.
    pub fn gen(&self) -> &CmdHcaCap {
        &self.cur.general_cur
    }

    /// `1 << log` as a count limit (saturating for absurd logs).
    pub fn limit(log: u8) -> u64 {
        1u64.checked_shl(log.into()).unwrap_or(u64::MAX)
    }

    /// Drops every object and empties the RoCE address table, as TEARDOWN_HCA does (and so
    /// DISABLE_HCA, through `reset_function`); pages stay where they are. The objects'
    /// storage goes back to the budget (every object charged to it is dropped here).
    pub fn drop_objects(&mut self) {
        self.flow = FlowTables::default();
        self.rqts.clear();
        self.tirs.clear();
        self.tises.clear();
        self.sqs.clear();
        self.rqs.clear();
        self.qps.clear();
        self.mkeys.clear();
        self.cqs.clear();
        self.eqs.clear();
        self.tds.clear();
        self.pds.clear();
        self.uars.clear();
        self.uar_state.clear();
        self.pending = Pending::default();
        self.roce_addrs.clear();
        self.qcounters.clear();
        self.storage.clear();
    }

    /// Back to the reset state of a disabled function (DISABLE_HCA); held pages stay held so a
    /// leak remains visible in `pages_held`. A fast teardown prepared for the old function is
    /// forgotten: the NIC interface set to disabled must not tear down the next one.
    pub fn reset_function(&mut self) {
        self.drop_objects();
        self.fast_teardown_prepared = false;
        self.hca = Hca::Disabled;
        self.issi = 0;
        self.cur = self.profile.clone();
        self.port = Port::new();
        self.driver_version = None;
        self.pages.reset_demand();
    }
}
