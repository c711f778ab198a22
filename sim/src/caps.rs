//! The capability profile: the maximum and current values of the capability pages the model
//! answers QUERY_HCA_CAP for (general, Ethernet offloads, atomic, RoCE, NIC flow tables), and
//! which fields
//! SET_HCA_CAP may change.
//!
//! Pages are kept as the generated owned views, so a test builds a profile with the same typed
//! setters a driver reads it with (`caps.general_max.set_log_max_qp(10)`). Two profiles come
//! ready: [`Caps::connectx5`], an Ethernet ConnectX-5 with RoCE (the in-process driver's
//! device), and [`Caps::connectx5_probe_only`], the same adapter with its port in InfiniBand
//! mode, under which Linux's `mlx5_core` finishes its probe without starting its Ethernet
//! driver (see `docs/linux-probe.md`).

use mlx5_prm::rt::{self, Field};
use mlx5_prm::{
    AtomicCaps, AtomicEndiannessMode, CmdHcaCap, EthWqeInlineModeCap, FlowTableFieldsSupported,
    FlowTableNicCap, FlowTablePropLayout, HcaCapType, HcaCmdifChecksum, HcaGidTableSize,
    HcaPkeyTableSize, HcaPortType, HcaTsFormatCap, PerProtocolNetworkingOffloadCaps, RoceCap,
};

/// What SET_HCA_CAP accepts for a settable field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetRule {
    /// Any value up to the field's maximum value (for a flag: set only if the maximum is set).
    AtMostMax,
    /// One of these values.
    OneOf(&'static [u64]),
}

/// A field SET_HCA_CAP may change, by its generated position constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settable {
    /// The field (`CmdHcaCap::LOG_MAX_QP`, ...).
    pub field: Field,
    /// What values it takes.
    pub rule: SetRule,
}

impl Settable {
    /// A field settable up to its maximum.
    pub const fn at_most_max(field: Field) -> Settable {
        Settable {
            field,
            rule: SetRule::AtMostMax,
        }
    }

    /// Reads the field from a capability page image.
    pub fn get(&self, page: &[u8]) -> u64 {
        rt::get_bits(page, self.field.bit_offset, self.field.width)
    }

    /// Writes the field into a capability page image.
    pub fn set(&self, page: &mut [u8], value: u64) {
        rt::set_bits(page, self.field.bit_offset, self.field.width, value)
    }

    /// True when `value` is acceptable given the page of maximum values.
    pub fn allows(&self, value: u64, max_page: &[u8]) -> bool {
        match self.rule {
            SetRule::AtMostMax => value <= self.get(max_page),
            SetRule::OneOf(values) => values.contains(&value),
        }
    }
}

/// Capability values: the device's maxima, the values in force after reset, and what
/// SET_HCA_CAP may change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    /// General capabilities (type 0), maximum values.
    pub general_max: CmdHcaCap,
    /// General capabilities, current values after reset.
    pub general_cur: CmdHcaCap,
    /// Ethernet offload capabilities (type 1), maximum values.
    pub eth_max: PerProtocolNetworkingOffloadCaps,
    /// Ethernet offload capabilities, current values.
    pub eth_cur: PerProtocolNetworkingOffloadCaps,
    /// Atomic operation capabilities (type 3), maximum values.
    pub atomic_max: AtomicCaps,
    /// Atomic operation capabilities, current values.
    pub atomic_cur: AtomicCaps,
    /// RoCE capabilities (type 4), maximum values.
    pub roce_max: RoceCap,
    /// RoCE capabilities, current values.
    pub roce_cur: RoceCap,
    /// NIC flow-table capabilities (type 7); none of them can be set, so one page serves as
    /// both maximum and current values.
    pub flow: FlowTableNicCap,
    /// General fields SET_HCA_CAP may change; it leaves the others as they are.
    pub general_settable: Vec<Settable>,
    /// Atomic fields SET_HCA_CAP may change.
    pub atomic_settable: Vec<Settable>,
    /// RoCE fields SET_HCA_CAP may change.
    pub roce_settable: Vec<Settable>,
}

/// The UAR page size the model's BAR layout implements (UAR n at n * 4 KiB): log 0.
const LOG_UAR_PAGE_SZ: u16 = 0;

impl Caps {
    /// A ConnectX-5-like profile: one Ethernet port with RoCE, 2^18 QPs, 2^24 CQs, 2^8 EQs,
    /// 2^23 PDs, 2^24 mkeys, 4 KiB UAR pages, 512-byte BlueFlame registers, CQE version 1.
    ///
    /// Values a real ConnectX-5 reports that the model does not need are left at zero; the
    /// current values equal the maxima except for the features Linux turns on with
    /// SET_HCA_CAP (command checksums start in their initial state; drain_sigerr,
    /// mkey_by_name, release_all_pages, cache_line_128byte and uar_4k start off).
    pub fn connectx5() -> Caps {
        let mut g = CmdHcaCap::zeroed();
        g.set_log_max_srq_sz(15);
        g.set_log_max_qp_sz(15);
        g.set_log_max_qp(18);
        g.set_log_max_srq(23);
        g.set_log_max_cq_sz(22);
        g.set_log_max_cq(24);
        g.set_log_max_eq_sz(22);
        g.set_log_max_mkey(24);
        g.set_log_max_eq(8);
        g.set_fast_teardown(true);
        g.set_force_teardown(true);
        g.set_log_max_klm_list_size(16);
        g.set_log_max_ra_req_qp(4);
        g.set_log_max_ra_res_qp(4);
        g.set_release_all_pages(true);
        g.set_cache_line_128byte(true);
        g.set_gid_table_size(HcaGidTableSize::Entries128);
        g.set_pkey_table_size(HcaPkeyTableSize::Entries128);
        g.set_nic_flow_table(true);
        g.set_port_type(HcaPortType::Ethernet);
        g.set_num_ports(1);
        g.set_log_max_msg(30);
        g.set_max_tc(8);
        g.set_cqe_version(1);
        g.set_drain_sigerr(true);
        g.set_cmdif_checksum(HcaCmdifChecksum::Enabled);
        g.set_eth_net_offloads(true);
        g.set_roce(true);
        g.set_atomic(true);
        g.set_cq_oi(true);
        g.set_cq_resize(true);
        g.set_cq_moderation(true);
        g.set_cq_eq_remap(true);
        g.set_rc(true);
        g.set_uc(true);
        g.set_ud(true);
        g.set_xrc(true);
        g.set_uar_4k(true);
        g.set_umem_uid_0(true);
        g.set_log_pg_sz(12);
        g.set_bf(true);
        g.set_driver_version(true);
        g.set_mkey_by_name(true);
        g.set_log_bf_reg_size(9);
        // 16 WQEBBs, the most a send WQE's ds_cnt can describe and what mlx5e requires.
        g.set_max_wqe_sz_sq(1024);
        g.set_max_wqe_sz_rq(512);
        g.set_log_max_transport_domain(20);
        g.set_log_max_pd(23);
        g.set_log_max_rq(20);
        g.set_log_max_sq(20);
        g.set_log_max_tir(20);
        g.set_log_max_tis(20);
        g.set_log_max_rqt(20);
        g.set_log_max_rqt_size(16);
        g.set_log_max_tis_per_sq(3);
        g.set_log_max_wq_sz(16);
        g.set_log_max_current_mc_list(12);
        g.set_log_max_current_uc_list(10);
        // Queue counter sets (ALLOC_Q_COUNTER), which RQs may name and MODIFY_RQ change.
        g.set_max_qp_cnt(crate::exec::counters::MAX_Q_COUNTERS);
        g.set_modify_rq_counter_set_id(true);
        g.set_vport_counters(true);
        // QUERY_VNIC_ENV's count of received frames steering discarded.
        g.set_nic_receive_steering_discard(true);
        g.set_sq_ts_format(HcaTsFormatCap::FreeRunning);
        g.set_rq_ts_format(HcaTsFormatCap::FreeRunning);
        g.set_max_num_eqs(256);
        g.set_log_uar_page_sz(LOG_UAR_PAGE_SZ);
        g.set_device_frequency_khz(156_250);
        g.set_num_of_uars_per_page(1);
        g.set_num_vhca_ports(1);
        g.set_sw_owner_id(true);
        // The capability-mask registers (PCAM, MCAM, QCAM) list exactly the registers and
        // features the model implements.
        g.set_pcam_reg(true);
        g.set_mcam_reg(true);
        g.set_qcam_reg(true);
        // The clock registers (exec/clock_reg.rs): PPS pins (MTPPS), their configuration
        // writable, and with them the UTC clock's MTUTC.
        g.set_pps(true);
        g.set_pps_modify(true);

        let mut cur = g;
        cur.set_cmdif_checksum(HcaCmdifChecksum::InitialState);
        cur.set_drain_sigerr(false);
        cur.set_mkey_by_name(false);
        cur.set_release_all_pages(false);
        cur.set_cache_line_128byte(false);
        cur.set_uar_4k(false);

        let mut eth = PerProtocolNetworkingOffloadCaps::zeroed();
        eth.set_csum_cap(true);
        eth.set_vlan_cap(true);
        // VLAN insertion from the Ethernet segment and LSO up to 512 KiB of payload: what
        // `datapath/eth` implements (`eseg.rs`, `lso.rs`).
        eth.set_wqe_vlan_insert(true);
        eth.set_self_lb_en_modifiable(true);
        eth.set_max_lso_cap(crate::datapath::eth::LOG_MAX_LSO);
        eth.set_wqe_inline_mode(EthWqeInlineModeCap::NotRequired);
        eth.set_rss_ind_tbl_cap(8);
        eth.set_scatter_fcs(true);
        // No LRO, no tunnel (GRE, VXLAN) offloads and no software parser: the data path
        // implements none of them, and Linux would use each one it sees (it registers VXLAN
        // ports with ADD_VXLAN_UDP_DPORT as soon as tunnel_stateless_vxlan is set).

        let mut roce = RoceCap::zeroed();
        roce.set_sw_r_roce_src_udp_port(true);
        roce.set_fl_rc_qp_when_roce_enabled(true);
        roce.set_qp_ts_format(HcaTsFormatCap::FreeRunning);
        roce.set_l3_type(0x6);
        roce.set_roce_version(0x5);
        roce.set_r_roce_dest_udp_port(4791);
        roce.set_r_roce_max_src_udp_port(0xffff);
        roce.set_r_roce_min_src_udp_port(0xc000);
        roce.set_roce_address_table_size(256);
        let mut roce_cur = roce;
        roce_cur.set_sw_r_roce_src_udp_port(false);

        // Compare-and-swap and fetch-and-add on 8-byte operands, big-endian (the model's RC
        // atomics work on network-order operands and cannot switch to host order).
        let mut atomic = AtomicCaps::zeroed();
        atomic.set_atomic_req_8b_endianness_mode(AtomicEndiannessMode::BigEndian);
        atomic.set_supported_atomic_req_8b_endianness_mode_1(false);
        atomic.set_atomic_operations(0b11);
        atomic.set_atomic_size_qp(1 << 3);

        Caps {
            flow: flow_table_caps(),
            general_max: g,
            general_cur: cur,
            eth_max: eth,
            eth_cur: eth,
            atomic_max: atomic,
            atomic_cur: atomic,
            roce_max: roce,
            roce_cur,
            general_settable: vec![
                Settable::at_most_max(CmdHcaCap::PKEY_TABLE_SIZE),
                Settable::at_most_max(CmdHcaCap::LOG_MAX_QP),
                Settable {
                    field: CmdHcaCap::CMDIF_CHECKSUM,
                    rule: SetRule::OneOf(&[0, 1, 3]),
                },
                Settable::at_most_max(CmdHcaCap::DRAIN_SIGERR),
                Settable::at_most_max(CmdHcaCap::UAR_4K),
                Settable::at_most_max(CmdHcaCap::LOG_UAR_PAGE_SZ),
                Settable::at_most_max(CmdHcaCap::CACHE_LINE_128BYTE),
                Settable::at_most_max(CmdHcaCap::RELEASE_ALL_PAGES),
                Settable::at_most_max(CmdHcaCap::MKEY_BY_NAME),
                Settable::at_most_max(CmdHcaCap::ROCE),
                Settable::at_most_max(CmdHcaCap::NUM_VHCA_PORTS),
                Settable::at_most_max(CmdHcaCap::DISABLE_LINK_UP),
            ],
            atomic_settable: vec![Settable::at_most_max(
                AtomicCaps::ATOMIC_REQ_8B_ENDIANNESS_MODE,
            )],
            roce_settable: vec![
                Settable::at_most_max(RoceCap::SW_R_ROCE_SRC_UDP_PORT),
                Settable::at_most_max(RoceCap::QP_OOO_TRANSMIT_DEFAULT),
            ],
        }
    }

    /// The ConnectX-5 of [`Caps::connectx5`] with its port in InfiniBand mode: the profile a
    /// Linux guest probes. `mlx5_core` 6.12 starts its Ethernet driver only on an Ethernet
    /// port (`mlx5_eth_supported` in `dev.c`), and any other missing Ethernet capability
    /// makes it warn; on an InfiniBand port it skips Ethernet silently, and the only other
    /// auxiliary device it adds (`rdma`) belongs to `mlx5_ib`, a separate module. With the
    /// port in InfiniBand mode the Ethernet-only features are off: Ethernet offloads, RoCE,
    /// NIC flow tables (so the Ethernet and flow-table capability pages are not queried and
    /// flow steering creates no tables). The timeouts Linux reads in this mode are in
    /// [`Config::linux_probe_only`](crate::Config::linux_probe_only).
    pub fn connectx5_probe_only() -> Caps {
        let mut caps = Caps::connectx5();
        for g in [&mut caps.general_max, &mut caps.general_cur] {
            g.set_port_type(HcaPortType::Ib);
            g.set_eth_net_offloads(false);
            g.set_roce(false);
            g.set_nic_flow_table(false);
            // Also reported by the DTOR register this profile comes with.
            g.set_dtor(true);
            // No clock registers (MTUTC, MTPPS): Linux would read them on probe.
            g.set_pps(false);
            g.set_pps_modify(false);
        }
        caps
    }

    /// The ConnectX-5 of [`Caps::connectx5`] as a Linux guest's Ethernet function: the port
    /// in Ethernet mode, so `mlx5_core` starts `mlx5e`; DTOR reported as in
    /// [`Caps::connectx5_probe_only`]; RoCE off for now (the RoCE address commands are
    /// served, but what else `mlx5_core` and `mlx5_ib` ask of a RoCE function has not been
    /// checked against a guest). Every command `mlx5e`
    /// issues on probe, open, traffic (LSO, checksums, RSS, VLAN), TX recovery, close and
    /// unload is served: `MLX5_GUEST_PROFILE=ethernet scripts/guest` checks it. Striding RQs,
    /// LRO, multi-packet send WQEs, CQE compression and tunnel offloads stay off (not
    /// modelled), so `mlx5e` picks cyclic RQs and one WQE per packet.
    pub fn connectx5_linux_ethernet() -> Caps {
        let mut caps = Caps::connectx5();
        for g in [&mut caps.general_max, &mut caps.general_cur] {
            g.set_roce(false);
            g.set_dtor(true);
            // No clock registers, as in the probe-only profile.
            g.set_pps(false);
            g.set_pps_modify(false);
        }
        caps
    }

    /// This profile with its queues stamping completions in `formats` (sq_ts_format,
    /// rq_ts_format and the RoCE page's qp_ts_format, maximum and current): free running only
    /// (every profile's default, what Linux guests are used to), real time only, or both.
    /// With real time offered, Linux's mlx5 runs in its real-time mode (its PHC is the UTC
    /// clock, `lib/clock.c`), and a queue may ask for the UTC clock in its CQEs.
    pub fn with_ts_formats(mut self, formats: HcaTsFormatCap) -> Caps {
        for g in [&mut self.general_max, &mut self.general_cur] {
            g.set_sq_ts_format(formats);
            g.set_rq_ts_format(formats);
        }
        for r in [&mut self.roce_max, &mut self.roce_cur] {
            r.set_qp_ts_format(formats);
        }
        self
    }

    /// The (maximum, current) pages of capability type `ty`, if the profile has that page and
    /// the general maximum values say the device supports it.
    pub(crate) fn pages(&self, ty: HcaCapType) -> Option<(&[u8], &[u8])> {
        let g = &self.general_max;
        Some(match ty {
            HcaCapType::General => (self.general_max.storage(), self.general_cur.storage()),
            HcaCapType::EthernetOffloads if g.eth_net_offloads() => {
                (self.eth_max.storage(), self.eth_cur.storage())
            }
            HcaCapType::Atomic if g.atomic() => {
                (self.atomic_max.storage(), self.atomic_cur.storage())
            }
            HcaCapType::Roce if g.roce() => (self.roce_max.storage(), self.roce_cur.storage()),
            HcaCapType::FlowTable if g.nic_flow_table() => {
                (self.flow.storage(), self.flow.storage())
            }
            _ => return None,
        })
    }

    /// The fields of type `ty` SET_HCA_CAP may change, the page of maximum values and the
    /// current page to change; `None` for types that cannot be set.
    pub(crate) fn settable(&mut self, ty: HcaCapType) -> Option<(&[Settable], &[u8], &mut [u8])> {
        let g = &self.general_max;
        Some(match ty {
            HcaCapType::General => (
                &self.general_settable[..],
                self.general_max.storage(),
                self.general_cur.storage_mut(),
            ),
            HcaCapType::Atomic if g.atomic() => (
                &self.atomic_settable[..],
                self.atomic_max.storage(),
                self.atomic_cur.storage_mut(),
            ),
            HcaCapType::Roce if g.roce() => (
                &self.roce_settable[..],
                self.roce_max.storage(),
                self.roce_cur.storage_mut(),
            ),
            _ => return None,
        })
    }
}

/// The NIC flow-table page: what `exec/flow.rs` implements, in the NIC receive and transmit
/// domains (the only ones it serves), with its limits. Entries can be replaced in place
/// (SET_FTE op_mod 1), the root replaced, and misses forwarded to a named table; tables cannot
/// be modified after creation (no MODIFY_FLOW_TABLE), entries cannot count (no flow counters),
/// rewrite headers or reformat packets, and ignore_flow_level is refused. Matching works on
/// every outer-header field the receive parser fills in (`datapath/parse.rs`), under any mask.
fn flow_table_caps() -> FlowTableNicCap {
    use crate::exec::flow::{
        LOG_MAX_DESTINATIONS, LOG_MAX_ENTRIES, LOG_MAX_TABLES, MAX_FT_LEVEL, MAX_LOG_SIZE,
    };
    let mut page = FlowTableNicCap::zeroed();
    let domain = |mut p: FlowTablePropLayout<&mut [u8]>| {
        p.set_ft_support(true);
        p.set_flow_modify_en(true);
        p.set_modify_root(true);
        p.set_identified_miss_table_mode(true);
        p.set_log_max_ft_size(MAX_LOG_SIZE);
        p.set_max_ft_level(MAX_FT_LEVEL);
        p.set_log_max_ft_num(LOG_MAX_TABLES);
        p.set_log_max_destination(LOG_MAX_DESTINATIONS);
        p.set_log_max_flow(LOG_MAX_ENTRIES);
        match_fields(p.ft_field_support_mut());
        match_fields(p.ft_field_bitmask_support_mut());
    };
    domain(page.flow_table_properties_nic_receive_mut());
    domain(page.flow_table_properties_nic_transmit_mut());
    page
}

/// The match fields the receive parser fills in, each matchable under any mask.
fn match_fields<B: rt::BytesMut>(mut f: FlowTableFieldsSupported<B>) {
    f.set_outer_dmac(true);
    f.set_outer_smac(true);
    f.set_outer_ether_type(true);
    f.set_outer_ip_version(true);
    f.set_outer_first_prio(true);
    f.set_outer_first_cfi(true);
    f.set_outer_first_vid(true);
    f.set_outer_ipv4_ttl(true);
    f.set_outer_sip(true);
    f.set_outer_dip(true);
    f.set_outer_frag(true);
    f.set_outer_ip_protocol(true);
    f.set_outer_ip_ecn(true);
    f.set_outer_ip_dscp(true);
    f.set_outer_udp_sport(true);
    f.set_outer_udp_dport(true);
    f.set_outer_tcp_sport(true);
    f.set_outer_tcp_dport(true);
    f.set_outer_tcp_flags(true);
}

impl Default for Caps {
    fn default() -> Self {
        Caps::connectx5()
    }
}
