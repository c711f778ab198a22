//! The syndromes the model reports, one per error site.
//!
//! On real hardware the syndrome (`cmd_out.syndrome`, output dword 1) is a firmware-internal
//! 32-bit value with no public meaning; it identifies the exact check that failed. The model
//! does the same with its own numbering, so that a test can assert not only the status but
//! which check produced it, and a driver's log can name the cause ([`describe`]).
//!
//! Numbering: the top byte is `0x5e` ("sim"), the next byte the area (1 command interface,
//! 2 HCA, 3 pages, 4 capabilities, 5 access registers, 6 UAR/PD/transport domain, 7 EQ, 8 CQ,
//! 9 mkey, 0xa QP, 0xb SQ/RQ, 0xc TIS/TIR/RQT, 0xd flow steering, 0xe vport, 0xf counters,
//! 0x10 RoCE address table), the low half the
//! site within the area. Every value is distinct (a unit test checks it).

macro_rules! syndromes {
    ($( $(#[doc = $doc:literal])+ $name:ident = $value:literal; )*) => {
        $( $(#[doc = $doc])+ pub const $name: u32 = $value; )*

        /// Every syndrome: value, constant name and description.
        pub const ALL: &[(u32, &str, &str)] = &[
            $( ($value, stringify!($name), concat!($($doc),+)) ),*
        ];
    };
}

syndromes! {
    // ---- 1: command interface and dispatch ----
    /// The opcode is not one the model implements (BAD_OP).
    UNKNOWN_OPCODE = 0x5e01_0001;
    /// input_length is shorter than the command's input layout (BAD_INP_LEN).
    INPUT_TOO_SHORT = 0x5e01_0002;
    /// output_length is shorter than the command's output layout (BAD_OUTP_LEN).
    OUTPUT_TOO_SHORT = 0x5e01_0003;
    /// The command needs ENABLE_HCA first (BAD_SYS_STATE).
    NOT_ENABLED = 0x5e01_0004;
    /// The command needs INIT_HCA first (BAD_SYS_STATE).
    NOT_INITIALIZED = 0x5e01_0005;
    /// op_mod is not a value the command defines (BAD_PARAM).
    BAD_OP_MOD = 0x5e01_0006;
    /// uid is not 0; the model has no user contexts (BAD_PARAM).
    UID_NOT_SUPPORTED = 0x5e01_0007;
    /// The input is too short for the list (page addresses, entries) it announces (BAD_INP_LEN).
    INPUT_LIST_TOO_SHORT = 0x5e01_0008;
    /// The output is too short for the list the command must return (BAD_OUTP_LEN).
    OUTPUT_LIST_TOO_SHORT = 0x5e01_0009;
    /// other_function / other_vport set; the model manages no other function (BAD_PARAM).
    OTHER_FUNCTION = 0x5e01_000a;
    /// Creating or growing an object would take the storage of all objects (their own sizes,
    /// page lists, mkey translations, RQT entries, flow match criteria) past the model's
    /// budget, [`STORAGE_BUDGET`](crate::STORAGE_BUDGET) bytes (LIM).
    STORAGE_BUDGET_EXHAUSTED = 0x5e01_000b;

    // ---- 2: HCA bring-up and teardown ----
    /// ENABLE_HCA on a function that is already enabled (BAD_SYS_STATE).
    ENABLE_ALREADY_ENABLED = 0x5e02_0001;
    /// ENABLE_HCA or DISABLE_HCA names a function other than 0 or the embedded CPU (BAD_PARAM).
    HCA_BAD_FUNCTION = 0x5e02_0002;
    /// DISABLE_HCA on a function that is not enabled (BAD_SYS_STATE).
    DISABLE_NOT_ENABLED = 0x5e02_0003;
    /// DISABLE_HCA before TEARDOWN_HCA (BAD_SYS_STATE).
    DISABLE_WHILE_INITIALIZED = 0x5e02_0004;
    /// SET_ISSI with an ISSI other than 0 or 1 (BAD_PARAM).
    ISSI_UNSUPPORTED = 0x5e02_0005;
    /// SET_ISSI after INIT_HCA (BAD_SYS_STATE).
    ISSI_AFTER_INIT = 0x5e02_0006;
    /// INIT_HCA on an initialized function (BAD_SYS_STATE).
    INIT_ALREADY_INITIALIZED = 0x5e02_0007;
    /// INIT_HCA before the boot and init pages were given (BAD_SYS_STATE).
    INIT_PAGES_MISSING = 0x5e02_0008;
    /// TEARDOWN_HCA on a function that is not initialized (BAD_SYS_STATE).
    TEARDOWN_NOT_INITIALIZED = 0x5e02_0009;
    /// TEARDOWN_HCA with an unknown profile (BAD_PARAM).
    TEARDOWN_BAD_PROFILE = 0x5e02_000a;
    /// TEARDOWN_HCA force or fast profile without the force_teardown / fast_teardown capability (BAD_PARAM).
    TEARDOWN_PROFILE_UNSUPPORTED = 0x5e02_000b;
    /// SET_DRIVER_VERSION without the driver_version capability (BAD_OP).
    DRIVER_VERSION_UNSUPPORTED = 0x5e02_000c;

    // ---- 3: firmware pages ----
    /// QUERY_PAGES or MANAGE_PAGES names a function other than 0 (BAD_PARAM).
    PAGES_BAD_FUNCTION = 0x5e03_0001;
    /// MANAGE_PAGES give: a page address is not 4 KiB aligned (BAD_PARAM).
    PAGE_UNALIGNED = 0x5e03_0002;
    /// MANAGE_PAGES give: a page is not mapped DMA memory (BAD_PARAM).
    PAGE_UNMAPPED = 0x5e03_0003;
    /// MANAGE_PAGES give: a page the device already holds, or listed twice (BAD_PARAM).
    PAGE_DOUBLE_GIVE = 0x5e03_0004;

    // ---- 4: capabilities ----
    /// QUERY_HCA_CAP of a capability type the model does not have (BAD_PARAM).
    CAP_TYPE_UNSUPPORTED = 0x5e04_0001;
    /// SET_HCA_CAP of a capability type that cannot be set (BAD_PARAM).
    SET_CAP_TYPE_UNSUPPORTED = 0x5e04_0002;
    /// SET_HCA_CAP with op_mod bit 0 set (BAD_PARAM).
    SET_CAP_CURRENT_BIT = 0x5e04_0003;
    /// SET_HCA_CAP sets a field above its maximum or to a value it does not take (BAD_PARAM).
    SET_CAP_ABOVE_MAX = 0x5e04_0004;
    /// SET_HCA_CAP after INIT_HCA (BAD_SYS_STATE).
    SET_CAP_AFTER_INIT = 0x5e04_0005;

    // ---- 5: access registers ----
    /// ACCESS_REGISTER of a register the model does not have (BAD_PARAM).
    REG_UNKNOWN = 0x5e05_0001;
    /// ACCESS_REGISTER for a local_port other than 1 (BAD_PARAM).
    REG_BAD_PORT = 0x5e05_0002;
    /// ACCESS_REGISTER input shorter than the register (BAD_INP_LEN).
    REG_INPUT_SHORT = 0x5e05_0003;
    /// ACCESS_REGISTER output shorter than the register (BAD_OUTP_LEN).
    REG_OUTPUT_SHORT = 0x5e05_0004;
    /// PAOS write with an admin_status other than up or down (BAD_PARAM).
    PAOS_BAD_ADMIN = 0x5e05_0005;
    /// PMTU write with admin_mtu above max_mtu or below the minimum (BAD_PARAM).
    PMTU_BAD_MTU = 0x5e05_0006;
    /// PTYS write without the Ethernet protocol bit, or enabling modes the port lacks (BAD_PARAM).
    PTYS_BAD_PROTO = 0x5e05_0007;
    /// ACCESS_REGISTER write (op_mod 0) of a read-only register: PCAM, MCAM, QCAM, DTOR (BAD_PARAM).
    REG_READ_ONLY = 0x5e05_0008;
    /// PCAM, MCAM or QCAM read of a feature group or access register group the register does not define (BAD_PARAM).
    REG_BAD_GROUP = 0x5e05_0009;
    /// PPCNT of a counter group the PRM does not define, or a per-priority group with prio_tc above 7 (BAD_PARAM).
    PPCNT_BAD_GROUP = 0x5e05_000a;
    /// PDDR of a page other than the troubleshooting page, or a troubleshooting group other than the link monitor (BAD_PARAM).
    PDDR_BAD_PAGE = 0x5e05_000b;
    /// MCIA access of more bytes than one access carries (48 without MCAM mcia_32dwords), or past the 256-byte window (BAD_PARAM).
    MCIA_BAD_SIZE = 0x5e05_000c;
    /// PPLM write choosing a FEC mode a speed group cannot use, or more than one (BAD_PARAM).
    PPLM_BAD_FEC = 0x5e05_000d;

    // ---- 6: UAR, PD, transport domain, special contexts ----
    /// No UAR page left in the BAR (LIM).
    UAR_EXHAUSTED = 0x5e06_0001;
    /// DEALLOC_UAR or a context names a UAR that is not allocated (BAD_RES).
    UAR_UNKNOWN = 0x5e06_0002;
    /// DEALLOC_UAR of a UAR an EQ, CQ, QP or WQ still uses (RES_BUSY).
    UAR_BUSY = 0x5e06_0003;
    /// ALLOC_PD beyond 2^log_max_pd (LIM).
    PD_LIMIT = 0x5e06_0004;
    /// DEALLOC_PD or a context names an unknown PD (BAD_RES).
    PD_UNKNOWN = 0x5e06_0005;
    /// DEALLOC_PD of a PD an mkey, QP, WQ or TIS still uses (RES_BUSY).
    PD_BUSY = 0x5e06_0006;
    /// ALLOC_TRANSPORT_DOMAIN beyond 2^log_max_transport_domain (LIM).
    TD_LIMIT = 0x5e06_0007;
    /// DEALLOC_TRANSPORT_DOMAIN or a context names an unknown transport domain (BAD_RES).
    TD_UNKNOWN = 0x5e06_0008;
    /// DEALLOC_TRANSPORT_DOMAIN of a domain a TIS or TIR still uses (RES_BUSY).
    TD_BUSY = 0x5e06_0009;

    // ---- 7: event queues ----
    /// CREATE_EQ beyond 2^log_max_eq (LIM).
    EQ_LIMIT = 0x5e07_0001;
    /// DESTROY_EQ, QUERY_EQ or a CQ context names an unknown EQ (BAD_RES).
    EQ_UNKNOWN = 0x5e07_0002;
    /// DESTROY_EQ of an EQ a CQ still reports to (RES_BUSY).
    EQ_BUSY = 0x5e07_0003;
    /// CREATE_EQ log_eq_size above log_max_eq_sz (BAD_PARAM).
    EQ_BAD_SIZE = 0x5e07_0004;
    /// CREATE_EQ input too short for the ring's page list (BAD_INP_LEN).
    EQ_PAS_SHORT = 0x5e07_0005;
    /// CREATE_EQ page address not aligned to the page size, or a bad log_page_size (BAD_PARAM).
    EQ_PAS_UNALIGNED = 0x5e07_0006;
    /// CREATE_EQ page not mapped DMA memory (BAD_PARAM).
    EQ_PAS_UNMAPPED = 0x5e07_0007;
    /// CREATE_EQ names an unknown UAR page (BAD_RES).
    EQ_UAR_UNKNOWN = 0x5e07_0008;
    /// CREATE_EQ intr names an MSI-X vector the function does not have (BAD_PARAM).
    EQ_BAD_INTR = 0x5e07_0009;

    // ---- 8: completion queues ----
    /// CREATE_CQ beyond 2^log_max_cq (LIM).
    CQ_LIMIT = 0x5e08_0001;
    /// DESTROY/QUERY/MODIFY_CQ or a QP/WQ context names an unknown CQ (BAD_RES).
    CQ_UNKNOWN = 0x5e08_0002;
    /// DESTROY_CQ of a CQ a QP, SQ or RQ still uses (RES_BUSY).
    CQ_BUSY = 0x5e08_0003;
    /// log_cq_size above log_max_cq_sz (BAD_PARAM).
    CQ_BAD_SIZE = 0x5e08_0004;
    /// cqe_sz not 64 or 128 bytes (BAD_PARAM).
    CQ_BAD_CQE_SIZE = 0x5e08_0005;
    /// The CQ context names an unknown EQ (BAD_RES).
    CQ_EQ_UNKNOWN = 0x5e08_0006;
    /// The CQ context names an unknown UAR page (BAD_RES).
    CQ_UAR_UNKNOWN = 0x5e08_0007;
    /// Input too short for the CQ ring's page list (BAD_INP_LEN).
    CQ_PAS_SHORT = 0x5e08_0008;
    /// CQ page address not aligned to the page size, or a bad log_page_size (BAD_PARAM).
    CQ_PAS_UNALIGNED = 0x5e08_0009;
    /// CQ page not mapped DMA memory (BAD_PARAM).
    CQ_PAS_UNMAPPED = 0x5e08_000a;
    /// CQ doorbell record not 8-byte aligned or not mapped (BAD_PARAM).
    CQ_DBR_BAD = 0x5e08_000b;
    /// MODIFY_CQ selects reserved fields (BAD_PARAM).
    CQ_MODIFY_BAD_SELECT = 0x5e08_000c;
    /// CREATE_CQ with cqe_comp_en while the cqe_compression capability is off (BAD_PARAM).
    CQ_COMPRESSION_UNSUPPORTED = 0x5e08_000d;
    /// CREATE_CQ with cc (a collapsed CQ: every CQE on entry 0), which no capability offers
    /// and the model does not write (BAD_PARAM).
    CQ_COLLAPSED_UNSUPPORTED = 0x5e08_000e;

    // ---- 9: memory keys ----
    /// CREATE_MKEY beyond 2^log_max_mkey (LIM).
    MKEY_LIMIT = 0x5e09_0001;
    /// DESTROY/QUERY_MKEY of an unknown mkey index (BAD_RES).
    MKEY_UNKNOWN = 0x5e09_0002;
    /// The mkey context names an unknown PD (BAD_RES).
    MKEY_PD_UNKNOWN = 0x5e09_0003;
    /// Access mode other than PA, MTT, KLM or KSM (BAD_PARAM).
    MKEY_BAD_ACCESS_MODE = 0x5e09_0004;
    /// Input too short for translations_octword_actual_size (BAD_INP_LEN).
    MKEY_TRANSLATIONS_SHORT = 0x5e09_0005;
    /// translations_octword_actual_size above the context's translations_octword_size (BAD_PARAM).
    MKEY_TRANSLATIONS_TOO_MANY = 0x5e09_0006;

    // ---- 0xa: queue pairs ----
    /// CREATE_QP beyond 2^log_max_qp (LIM).
    QP_LIMIT = 0x5e0a_0001;
    /// A QP command names an unknown QP (BAD_RES).
    QP_UNKNOWN = 0x5e0a_0002;
    /// The QP context names an unknown PD (BAD_RES).
    QP_PD_UNKNOWN = 0x5e0a_0003;
    /// The QP context names an unknown send CQ (BAD_RES).
    QP_CQ_SND_UNKNOWN = 0x5e0a_0004;
    /// The QP context names an unknown receive CQ (BAD_RES).
    QP_CQ_RCV_UNKNOWN = 0x5e0a_0005;
    /// The QP context names an unknown UAR page (BAD_RES).
    QP_UAR_UNKNOWN = 0x5e0a_0006;
    /// Unknown service type (qpc.st) (BAD_PARAM).
    QP_BAD_SERVICE_TYPE = 0x5e0a_0007;
    /// log_sq_size or log_rq_size above log_max_qp_sz (BAD_PARAM).
    QP_BAD_SIZE = 0x5e0a_0008;
    /// Input too short for the QP buffer's page list (BAD_INP_LEN).
    QP_PAS_SHORT = 0x5e0a_0009;
    /// QP page address not aligned to the page size, or a bad log_page_size (BAD_PARAM).
    QP_PAS_UNALIGNED = 0x5e0a_000a;
    /// QP page not mapped DMA memory (BAD_PARAM).
    QP_PAS_UNMAPPED = 0x5e0a_000b;
    /// QP doorbell record not 8-byte aligned or not mapped (BAD_PARAM).
    QP_DBR_BAD = 0x5e0a_000c;
    /// The transition does not start in the QP's current state (BAD_QP_STATE).
    QP_BAD_STATE = 0x5e0a_000d;
    /// opt_param_mask has bits the transition does not accept (BAD_PARAM).
    QP_BAD_OPT_MASK = 0x5e0a_000e;
    /// INIT2RTR with an MTU that is not one of the IB MTU values (BAD_PARAM).
    QP_BAD_MTU = 0x5e0a_000f;
    /// INIT2RTR with log_msg_max above the log_max_msg capability (BAD_PARAM).
    QP_BAD_MSG_MAX = 0x5e0a_0010;
    /// The address path names a port other than 1..=num_ports (BAD_PARAM).
    QP_BAD_PORT = 0x5e0a_0011;
    /// rq_type names a shared or cyclic receive queue, which the model does not have (BAD_PARAM).
    QP_BAD_RQ_TYPE = 0x5e0a_0012;
    /// CREATE_QP with a ts_format the device does not offer for QPs (the RoCE page's
    /// qp_ts_format, or sq_ts_format without RoCE): REAL_TIME without real time, FREE_RUNNING
    /// with real time only, or an undefined value (BAD_PARAM).
    QP_BAD_TS_FORMAT = 0x5e0a_0013;
    /// INIT2RTR with log_rra_max above the log_max_ra_res_qp capability (BAD_PARAM).
    QP_BAD_RRA_MAX = 0x5e0a_0014;
    /// RTR2RTS with log_sra_max above the log_max_ra_req_qp capability (BAD_PARAM).
    QP_BAD_SRA_MAX = 0x5e0a_0015;
    /// CREATE_QP with a receive WQE stride (16 << log_rq_stride bytes) above the max_wqe_sz_rq
    /// capability (BAD_PARAM).
    QP_RQ_STRIDE_TOO_LARGE = 0x5e0a_0016;

    // ---- 0xb: Ethernet send and receive queues ----
    /// CREATE_SQ beyond 2^log_max_sq (LIM).
    SQ_LIMIT = 0x5e0b_0001;
    /// MODIFY/DESTROY_SQ of an unknown SQ (BAD_RES).
    SQ_UNKNOWN = 0x5e0b_0002;
    /// The SQ context names an unknown CQ (BAD_RES).
    SQ_CQ_UNKNOWN = 0x5e0b_0003;
    /// The SQ context names an unknown TIS (BAD_RES).
    SQ_TIS_UNKNOWN = 0x5e0b_0004;
    /// The SQ's wq names an unknown PD (BAD_RES).
    SQ_PD_UNKNOWN = 0x5e0b_0005;
    /// The SQ's wq names an unknown UAR page (BAD_RES).
    SQ_UAR_UNKNOWN = 0x5e0b_0006;
    /// The SQ's wq is not cyclic with 64-byte strides, or is too large (BAD_PARAM).
    SQ_BAD_WQ = 0x5e0b_0007;
    /// Input too short for the SQ ring's page list (BAD_INP_LEN).
    SQ_PAS_SHORT = 0x5e0b_0008;
    /// SQ page address not aligned to the page size, or a bad log_wq_pg_sz (BAD_PARAM).
    SQ_PAS_UNALIGNED = 0x5e0b_0009;
    /// SQ page not mapped DMA memory (BAD_PARAM).
    SQ_PAS_UNMAPPED = 0x5e0b_000a;
    /// SQ doorbell record not 4-byte aligned or its 8 bytes not mapped (the send counter is
    /// the record's second dword) (BAD_PARAM).
    SQ_DBR_BAD = 0x5e0b_000b;
    /// CREATE_SQ with a state other than RST (BAD_PARAM).
    SQ_CREATE_NOT_RST = 0x5e0b_000c;
    /// MODIFY_SQ: sq_state is not the SQ's current state (BAD_RES_STATE).
    SQ_STATE_MISMATCH = 0x5e0b_000d;
    /// MODIFY_SQ: a move the SQ state machine does not have, or an unknown new state (BAD_RES_STATE).
    SQ_BAD_TRANSITION = 0x5e0b_000e;
    /// MODIFY_SQ: modify_bitmask bits the model does not know (BAD_PARAM).
    SQ_BAD_BITMASK = 0x5e0b_000f;
    /// CREATE_RQ beyond 2^log_max_rq (LIM).
    RQ_LIMIT = 0x5e0b_0011;
    /// MODIFY/DESTROY_RQ or a TIR/RQT names an unknown RQ (BAD_RES).
    RQ_UNKNOWN = 0x5e0b_0012;
    /// DESTROY_RQ of an RQ a TIR or RQT still uses (RES_BUSY).
    RQ_BUSY = 0x5e0b_0013;
    /// The RQ context names an unknown CQ (BAD_RES).
    RQ_CQ_UNKNOWN = 0x5e0b_0014;
    /// The RQ's wq names an unknown PD (BAD_RES).
    RQ_PD_UNKNOWN = 0x5e0b_0015;
    /// The RQ takes its buffers from an RMP, which the model does not have (BAD_PARAM).
    RQ_BAD_MEM_TYPE = 0x5e0b_0016;
    /// The RQ's wq is not cyclic, has a stride under 16 bytes, or is too large (BAD_PARAM).
    RQ_BAD_WQ = 0x5e0b_0017;
    /// Input too short for the RQ ring's page list (BAD_INP_LEN).
    RQ_PAS_SHORT = 0x5e0b_0018;
    /// RQ page address not aligned to the page size, or a bad log_wq_pg_sz (BAD_PARAM).
    RQ_PAS_UNALIGNED = 0x5e0b_0019;
    /// RQ page not mapped DMA memory (BAD_PARAM).
    RQ_PAS_UNMAPPED = 0x5e0b_001a;
    /// RQ doorbell record not 4-byte aligned or not mapped (BAD_PARAM).
    RQ_DBR_BAD = 0x5e0b_001b;
    /// CREATE_RQ with a state other than RST (BAD_PARAM).
    RQ_CREATE_NOT_RST = 0x5e0b_001c;
    /// MODIFY_RQ: rq_state is not the RQ's current state (BAD_RES_STATE).
    RQ_STATE_MISMATCH = 0x5e0b_001d;
    /// MODIFY_RQ: a move the RQ state machine does not have, or an unknown new state (BAD_RES_STATE).
    RQ_BAD_TRANSITION = 0x5e0b_001e;
    /// MODIFY_RQ: modify_bitmask bits other than vsd, scatter_fcs and counter_set_id (BAD_PARAM).
    RQ_BAD_BITMASK = 0x5e0b_001f;
    /// CREATE_SQ tis_lst_sz other than 0 or 1 (BAD_PARAM).
    SQ_BAD_TIS_LIST = 0x5e0b_0020;
    /// CREATE_SQ with a ts_format sq_ts_format does not offer: REAL_TIME without real time,
    /// FREE_RUNNING with real time only, or an undefined value (BAD_PARAM).
    SQ_BAD_TS_FORMAT = 0x5e0b_0021;
    /// CREATE_RQ with a ts_format rq_ts_format does not offer: REAL_TIME without real time,
    /// FREE_RUNNING with real time only, or an undefined value (BAD_PARAM).
    RQ_BAD_TS_FORMAT = 0x5e0b_0022;
    /// CREATE_RQ of a cyclic striding RQ while the striding_rq capability is off (BAD_PARAM).
    RQ_STRIDING_UNSUPPORTED = 0x5e0b_0023;
    /// CREATE_RQ with a stride (2^log_wq_stride bytes) above the max_wqe_sz_rq capability (BAD_PARAM).
    RQ_STRIDE_TOO_LARGE = 0x5e0b_0024;

    // ---- 0xc: TIS, TIR, RQT ----
    /// CREATE_TIS beyond 2^log_max_tis (LIM).
    TIS_LIMIT = 0x5e0c_0001;
    /// DESTROY_TIS of an unknown TIS (BAD_RES).
    TIS_UNKNOWN = 0x5e0c_0002;
    /// DESTROY_TIS of a TIS an SQ still uses (RES_BUSY).
    TIS_BUSY = 0x5e0c_0003;
    /// The TIS context names an unknown transport domain (BAD_RES).
    TIS_TD_UNKNOWN = 0x5e0c_0004;
    /// The TIS context names an unknown PD (BAD_RES).
    TIS_PD_UNKNOWN = 0x5e0c_0005;
    /// CREATE_TIR beyond 2^log_max_tir (LIM).
    TIR_LIMIT = 0x5e0c_0006;
    /// DESTROY_TIR or a flow destination names an unknown TIR (BAD_RES).
    TIR_UNKNOWN = 0x5e0c_0007;
    /// DESTROY_TIR of a TIR a flow table entry still forwards to (RES_BUSY).
    TIR_BUSY = 0x5e0c_0008;
    /// The TIR context names an unknown transport domain (BAD_RES).
    TIR_TD_UNKNOWN = 0x5e0c_0009;
    /// A direct TIR names an unknown RQ (BAD_RES).
    TIR_RQ_UNKNOWN = 0x5e0c_000a;
    /// An indirect TIR names an unknown RQT (BAD_RES).
    TIR_RQT_UNKNOWN = 0x5e0c_000b;
    /// Unknown disp_type or rx_hash_fn (BAD_PARAM).
    TIR_BAD_DISPATCH = 0x5e0c_000c;
    /// CREATE_RQT beyond 2^log_max_rqt (LIM).
    RQT_LIMIT = 0x5e0c_000d;
    /// DESTROY_RQT of an unknown RQT (BAD_RES).
    RQT_UNKNOWN = 0x5e0c_000e;
    /// DESTROY_RQT of an RQT a TIR still uses (RES_BUSY).
    RQT_BUSY = 0x5e0c_000f;
    /// rqt_actual_size is 0 or above rqt_max_size, or rqt_max_size above 2^log_max_rqt_size (BAD_PARAM).
    RQT_BAD_SIZE = 0x5e0c_0010;
    /// Input too short for rqt_actual_size entries (BAD_INP_LEN).
    RQT_LIST_SHORT = 0x5e0c_0011;
    /// An RQT entry names an unknown RQ (BAD_RES).
    RQT_RQ_UNKNOWN = 0x5e0c_0012;
    /// An RQT entry names an RQ whose reference count could not take the list (LIM): it is
    /// already referenced nearly 2^32 times.
    RQT_RQ_REFS = 0x5e0c_0014;
    /// A TIR context asks for LRO (packet_merge_mask not 0), which the model lacks: lro_cap is 0 (BAD_PARAM).
    TIR_NO_LRO = 0x5e0c_0013;

    // ---- 0xd: flow steering ----
    /// Flow table type other than NIC RX or NIC TX (BAD_PARAM).
    FT_BAD_TYPE = 0x5e0d_0001;
    /// CREATE_FLOW_TABLE log_size above 24 (BAD_PARAM).
    FT_BAD_SIZE = 0x5e0d_0002;
    /// table_miss_action fwd names an unknown table, or one of another type (BAD_RES).
    FT_MISS_TABLE_UNKNOWN = 0x5e0d_0003;
    /// Too many flow tables (LIM).
    FT_LIMIT = 0x5e0d_0004;
    /// A flow command names an unknown table, or one of another type (BAD_RES).
    FT_UNKNOWN = 0x5e0d_0005;
    /// CREATE_FLOW_GROUP range empty or beyond the table's size (BAD_PARAM).
    FG_BAD_RANGE = 0x5e0d_0006;
    /// CREATE_FLOW_GROUP range overlaps another group of the table (BAD_PARAM).
    FG_OVERLAP = 0x5e0d_0007;
    /// match_criteria_enable has bits above the seven match parts (BAD_PARAM).
    FG_BAD_CRITERIA = 0x5e0d_0008;
    /// Too many flow groups (LIM).
    FG_LIMIT = 0x5e0d_0009;
    /// SET_FTE or DESTROY_FLOW_GROUP names a group that does not exist in the table (BAD_RES).
    FG_UNKNOWN = 0x5e0d_000a;
    /// SET_FTE flow_index outside its group's range (BAD_PARAM).
    FTE_INDEX_OUTSIDE_GROUP = 0x5e0d_000b;
    /// SET_FTE op_mod 0 on an index that already holds an entry (BAD_PARAM).
    FTE_EXISTS = 0x5e0d_000c;
    /// SET_FTE op_mod 1 (update) or DELETE_FTE on an empty index (BAD_PARAM).
    FTE_NOT_FOUND = 0x5e0d_000d;
    /// Actions the model does not implement, or forward without destinations (BAD_PARAM).
    FTE_BAD_ACTION = 0x5e0d_000e;
    /// Input too short for the destination and counter lists (BAD_INP_LEN).
    FTE_LIST_SHORT = 0x5e0d_000f;
    /// A destination names an unknown TIR or flow table (BAD_RES).
    FTE_DEST_UNKNOWN = 0x5e0d_0010;
    /// A destination type the model does not forward to (BAD_PARAM).
    FTE_DEST_BAD_TYPE = 0x5e0d_0011;
    /// A flow counter id; the model has no flow counters (BAD_RES).
    FTE_COUNTER_UNKNOWN = 0x5e0d_0012;
    /// table_miss_action other than default or fwd (BAD_PARAM).
    FT_BAD_MISS_ACTION = 0x5e0d_0013;
    /// DESTROY_FLOW_GROUP while an entry of the table is still in the group (BAD_PARAM).
    FG_NOT_EMPTY = 0x5e0d_0014;
    /// DESTROY_FLOW_TABLE while the table still has flow groups or entries (BAD_PARAM).
    FT_NOT_EMPTY = 0x5e0d_0015;
    /// DESTROY_FLOW_TABLE of a table another table's miss or an entry of another table still
    /// leads to (RES_BUSY).
    FT_BUSY = 0x5e0d_0016;
    /// CREATE_FLOW_TABLE level above the model's max_ft_level, 64 (BAD_PARAM).
    FT_BAD_LEVEL = 0x5e0d_0017;
    /// CREATE_FLOW_TABLE table_miss_id names a table whose level is not higher than the new
    /// table's (BAD_PARAM): misses, like forwards, only go up, so steering cannot loop.
    FT_MISS_LEVEL = 0x5e0d_0018;
    /// SET_FTE forwards to a flow table whose level is not higher than the entry's table's,
    /// itself included (BAD_PARAM).
    FTE_DEST_LEVEL = 0x5e0d_0019;
    /// SET_FTE ignore_flow_level, which the model does not advertise (BAD_PARAM).
    FTE_IGNORE_FLOW_LEVEL = 0x5e0d_001a;
    /// SET_FTE of a new entry beyond the model's total of 65536 entries (LIM).
    FTE_LIMIT = 0x5e0d_001b;
    /// SET_FTE with more destinations than log_max_destination allows, 32 (BAD_PARAM).
    FTE_TOO_MANY_DESTS = 0x5e0d_001c;

    // ---- 0xe: vports ----
    /// MODIFY_NIC_VPORT_CONTEXT field_select bits the model does not know (BAD_PARAM).
    VPORT_BAD_FIELD_SELECT = 0x5e0e_0001;
    /// MODIFY_NIC_VPORT_CONTEXT mtu above the port's max_mtu (BAD_PARAM).
    VPORT_MTU_TOO_LARGE = 0x5e0e_0002;
    /// MODIFY_NIC_VPORT_CONTEXT roce_en without the roce capability (BAD_PARAM).
    VPORT_ROCE_UNSUPPORTED = 0x5e0e_0003;

    // ---- 0xf: counters ----
    /// A queue counter set id that is not allocated (BAD_PARAM, as an unknown RQ field).
    QCNT_UNKNOWN = 0x5e0f_0001;
    /// ALLOC_Q_COUNTER beyond max_qp_cnt sets (LIM).
    QCNT_LIMIT = 0x5e0f_0002;

    // ---- 0x10: RoCE address table ----
    /// roce_address_index at or beyond the table's roce_address_table_size entries (BAD_PARAM).
    ROCE_ADDR_BAD_INDEX = 0x5e10_0001;
    /// vhca_port_num other than 1..=num_vhca_ports while num_vhca_ports is not 0 (BAD_PARAM).
    ROCE_ADDR_BAD_PORT = 0x5e10_0002;
    /// SET_ROCE_ADDRESS roce_l3_type other than IPv4 (0) or IPv6 (1) (BAD_PARAM).
    ROCE_ADDR_BAD_L3_TYPE = 0x5e10_0003;
    /// SET_ROCE_ADDRESS roce_version other than RoCE v1 (0) or v2 (2) (BAD_PARAM).
    ROCE_ADDR_BAD_VERSION = 0x5e10_0004;
    /// A RoCE address command while the general roce capability is off (BAD_PARAM).
    ROCE_ADDR_NO_ROCE = 0x5e10_0005;

    // ---- 5, continued at 0x100: non-volatile configuration (MNVDA, MNVQC) ----
    /// MNVDA of a configuration item the model does not have: an unknown type class or
    /// parameter index, or a per-host-PF item of another PF or bus (BAD_PARAM).
    NV_UNKNOWN_ITEM = 0x5e05_0101;
    /// MNVDA whose header length is not the item's data size (BAD_PARAM).
    NV_BAD_LENGTH = 0x5e05_0102;
    /// MNVDA write of an item that may only be read, such as nv_global_pci_cap (BAD_PARAM).
    NV_READ_ONLY_ITEM = 0x5e05_0103;
    /// MNVDA with the reserved access mode 3, or a write to a copy other than next (BAD_PARAM).
    NV_BAD_ACCESS_MODE = 0x5e05_0104;
    /// MNVDA write of a value the item cannot hold: more VFs than max_vfs_per_pf, an unknown
    /// cqe_compression (BAD_PARAM).
    NV_BAD_VALUE = 0x5e05_0105;

    // ---- 5, continued at 0x200: the clock (MTUTC, MTPPS, MTPPSE) ----
    /// MTUTC write with an operation other than SET_TIME_IMMEDIATE, ADJUST_TIME or ADJUST_FREQ_UTC (BAD_PARAM).
    MTUTC_BAD_OPERATION = 0x5e05_0201;
    /// MTUTC SET_TIME_IMMEDIATE with utc_nsec of 10^9 or more (BAD_PARAM).
    MTUTC_BAD_TIME = 0x5e05_0202;
    /// MTUTC ADJUST_TIME by more than 32767 ns either way, the range without the extended one (BAD_PARAM).
    MTUTC_BAD_TIME_ADJUSTMENT = 0x5e05_0203;
    /// MTUTC ADJUST_FREQ_UTC in a freq_adj_units other than ppb or scaled ppm (BAD_PARAM).
    MTUTC_BAD_FREQ_UNITS = 0x5e05_0204;
    /// MTUTC ADJUST_FREQ_UTC beyond 2^log_max_freq_adjustment ppb either way (BAD_PARAM).
    MTUTC_BAD_FREQ = 0x5e05_0205;
    /// MTPPS for a pin at or past cap_number_of_pps_pins (BAD_PARAM).
    MTPPS_BAD_PIN = 0x5e05_0206;
    /// MTPPS write whose field_select names a field the model does not apply (BAD_PARAM).
    MTPPS_BAD_FIELD_SELECT = 0x5e05_0207;
    /// MTPPS write of a pin_mode other than in or out, or one the pin cannot do (BAD_PARAM).
    MTPPS_BAD_PIN_MODE = 0x5e05_0208;
    /// MTPPS write of a pattern other than 0 or 1 (BAD_PARAM).
    MTPPS_BAD_PATTERN = 0x5e05_0209;
    /// MTPPSE for a pin at or past cap_number_of_pps_pins (BAD_PARAM).
    MTPPSE_BAD_PIN = 0x5e05_020a;
    /// MTPPSE write of an event_generation_mode other than disable, repetitive or once till
    /// armed (BAD_PARAM).
    MTPPSE_BAD_MODE = 0x5e05_020b;
}

/// The name and description of a syndrome this model reports.
pub fn describe(syndrome: u32) -> Option<(&'static str, &'static str)> {
    ALL.iter()
        .find(|(v, _, _)| *v == syndrome)
        .map(|(_, name, doc)| (*name, doc.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_syndrome_is_distinct_and_named() {
        let mut values: Vec<u32> = ALL.iter().map(|s| s.0).collect();
        values.sort_unstable();
        values.dedup();
        assert_eq!(values.len(), ALL.len());
        assert!(ALL
            .iter()
            .all(|(v, _, doc)| v >> 24 == 0x5e && !doc.is_empty()));
        assert_eq!(describe(PAGE_UNALIGNED).unwrap().0, "PAGE_UNALIGNED");
        assert!(describe(0).is_none());
    }
}
