//! Every misuse gets the PRM's status (or delivery status) and the model's syndrome for it.

mod common;

use common::{Host, Tweak};
use mlx5_prm::cmd;
use mlx5_prm::rt::Command;
use mlx5_prm::{CmdDeliveryStatus as D, CmdStatus as S};
use mlx5_sim::syndrome as syn;

const BAD_OP: u8 = S::BadOpErr as u8;
const BAD_PARAM: u8 = S::BadParamErr as u8;
const BAD_SYS_STATE: u8 = S::BadSysStateErr as u8;
const BAD_RES: u8 = S::BadResErr as u8;
const RES_BUSY: u8 = S::ResBusy as u8;
const BAD_INP_LEN: u8 = S::BadInpLenErr as u8;
const BAD_OUTP_LEN: u8 = S::BadOutpLenErr as u8;
const BAD_QP_STATE: u8 = S::BadQpStateErr as u8;

fn header(opcode: u16, op_mod: u16, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    b[..2].copy_from_slice(&opcode.to_be_bytes());
    b[6..8].copy_from_slice(&op_mod.to_be_bytes());
    b
}

#[test]
fn status_codes_are_the_prm_values() {
    assert_eq!(
        (BAD_OP, BAD_PARAM, BAD_SYS_STATE, BAD_RES),
        (0x2, 0x3, 0x4, 0x5)
    );
    assert_eq!(
        (BAD_INP_LEN, BAD_OUTP_LEN, BAD_QP_STATE),
        (0x50, 0x51, 0x10)
    );
}

#[test]
fn unknown_opcode() {
    let host = Host::inline();
    host.exec(&header(0x7ff, 0, 16), 16)
        .fails(BAD_OP, syn::UNKNOWN_OPCODE);
    // Opcode 0x106 is not used by the PRM.
    host.exec(&header(0x106, 0, 16), 16)
        .fails(BAD_OP, syn::UNKNOWN_OPCODE);
    assert_eq!(host.dev.commands().last().unwrap().opcode, 0x106);
}

#[test]
fn bad_op_mod() {
    let host = Host::inline();
    host.exec(&header(cmd::EnableHca::OPCODE, 5, 16), 16)
        .fails(BAD_PARAM, syn::BAD_OP_MOD);
    host.exec(&header(cmd::QueryPages::OPCODE, 4, 16), 16)
        .fails(BAD_PARAM, syn::BAD_OP_MOD);
    host.simple::<cmd::EnableHca>(0).ok();
    // QUERY_HCA_CAP of the ODP page (type 2), which the model does not have.
    host.simple::<cmd::QueryHcaCap>(cmd::QueryHcaCapOpMod::OdpCur)
        .fails(BAD_PARAM, syn::CAP_TYPE_UNSUPPORTED);
}

#[test]
fn wrong_device_state() {
    let host = Host::inline();
    // INIT_HCA and object commands before ENABLE_HCA.
    host.simple::<cmd::InitHca>(0)
        .fails(BAD_SYS_STATE, syn::NOT_ENABLED);
    host.simple::<cmd::AllocPd>(0)
        .fails(BAD_SYS_STATE, syn::NOT_ENABLED);
    host.simple::<cmd::DisableHca>(0)
        .fails(BAD_SYS_STATE, syn::DISABLE_NOT_ENABLED);
    // QUERY_ISSI and QUERY_PAGES are allowed before ENABLE_HCA.
    host.simple::<cmd::QueryIssi>(0).ok();
    host.simple::<cmd::QueryPages>(cmd::QueryPagesOpMod::Boot)
        .ok();
    host.simple::<cmd::EnableHca>(0).ok();
    host.simple::<cmd::EnableHca>(0)
        .fails(BAD_SYS_STATE, syn::ENABLE_ALREADY_ENABLED);
    host.simple::<cmd::AllocPd>(0)
        .fails(BAD_SYS_STATE, syn::NOT_INITIALIZED);
    // INIT_HCA needs the boot and init pages.
    host.simple::<cmd::InitHca>(0)
        .fails(BAD_SYS_STATE, syn::INIT_PAGES_MISSING);
    host.simple::<cmd::TeardownHca>(0)
        .fails(BAD_SYS_STATE, syn::TEARDOWN_NOT_INITIALIZED);
    host.give_pages(48);
    host.simple::<cmd::InitHca>(0).ok();
    host.simple::<cmd::InitHca>(0)
        .fails(BAD_SYS_STATE, syn::INIT_ALREADY_INITIALIZED);
    host.simple::<cmd::DisableHca>(0)
        .fails(BAD_SYS_STATE, syn::DISABLE_WHILE_INITIALIZED);
    host.run::<cmd::SetIssi>(0, 0, 0, |i| i.set_current_issi(1))
        .fails(BAD_SYS_STATE, syn::ISSI_AFTER_INIT);
}

#[test]
fn lengths() {
    let host = Host::inline();
    // ENABLE_HCA's input layout is 16 bytes, its output 12.
    host.exec(&header(cmd::EnableHca::OPCODE, 0, 8), 16)
        .fails(BAD_INP_LEN, syn::INPUT_TOO_SHORT);
    host.exec(&header(cmd::EnableHca::OPCODE, 0, 16), 8)
        .fails(BAD_OUTP_LEN, syn::OUTPUT_TOO_SHORT);
    host.exec(&header(cmd::EnableHca::OPCODE, 0, 16), 12).ok();
    // QUERY_HCA_CAP's output is 0x1010 bytes.
    host.exec(&header(cmd::QueryHcaCap::OPCODE, 1, 16), 0x1000)
        .fails(BAD_OUTP_LEN, syn::OUTPUT_TOO_SHORT);
    // MANAGE_PAGES give announcing more pages than the input carries.
    host.run::<cmd::ManagePages>(cmd::ManagePagesOpMod::Give, 8, 0, |i| {
        i.set_input_num_entries(2)
    })
    .fails(BAD_INP_LEN, syn::INPUT_LIST_TOO_SHORT);
}

#[test]
fn delivery_errors() {
    let host = Host::inline();
    let give = {
        let mut b = vec![0u8; 16 + 8 * 100];
        let mut i = cmd::ManagePages::input(&mut b[..], cmd::ManagePagesOpMod::Give).unwrap();
        i.set_input_num_entries(0);
        b
    };
    let status = |t: Tweak| host.submit(0, &give, 16, &t).unwrap().delivery;
    assert_eq!(status(Tweak::default()), D::Ok as u8);
    let tok = Tweak {
        block_token: Some(0xee),
        ..Tweak::default()
    };
    assert_eq!(status(tok), D::TokErr as u8);
    let blk = Tweak {
        block_number: Some((1, 7)),
        ..Tweak::default()
    };
    assert_eq!(status(blk), D::BadBlkNumErr as u8);
    let ty = Tweak {
        entry_type: Some(3),
        ..Tweak::default()
    };
    assert_eq!(status(ty), D::CmdDescrErr as u8);
    let align = Tweak {
        in_ptr_bits: 0x100,
        ..Tweak::default()
    };
    assert_eq!(status(align), D::InPtrAlignErr as u8);
    let short = Tweak {
        truncate_in_chain: Some(1),
        ..Tweak::default()
    };
    assert_eq!(status(short), D::InLengthErr as u8);
    let long = Tweak {
        input_length: Some(16 + 512 * 10),
        ..Tweak::default()
    };
    assert_eq!(status(long), D::InLengthErr as u8);
    let wild = Tweak {
        unmapped_in_chain: true,
        ..Tweak::default()
    };
    assert_eq!(status(wild), D::FwErr as u8);
    assert_eq!(host.dev.dma_faults(), 1);
    // Commands rejected at delivery never ran.
    assert_eq!(host.dev.commands().len(), 1);
    // A software-owned entry is ignored: nothing is written back.
    let r = host.submit(
        0,
        &give,
        16,
        &Tweak {
            software_owned: true,
            ..Tweak::default()
        },
    );
    assert_eq!(r.unwrap().delivery, 0);
    assert_eq!(host.dev.commands().len(), 1);
}

#[test]
fn page_accounting() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let region = host.dev.dma().alloc(3 * 4096, 4096).unwrap();
    let p = |i: u64| region.iova + i * 4096;
    host.give(&[p(0) + 8]).fails(BAD_PARAM, syn::PAGE_UNALIGNED);
    host.give(&[0x7_0000_0000])
        .fails(BAD_PARAM, syn::PAGE_UNMAPPED);
    // A host virtual address where an IOVA belongs.
    host.give(&[region.va as u64 & !0xfff])
        .fails(BAD_PARAM, syn::PAGE_UNMAPPED);
    host.give(&[p(0), p(0)])
        .fails(BAD_PARAM, syn::PAGE_DOUBLE_GIVE);
    host.give(&[p(0), p(1)]).ok();
    host.give(&[p(2), p(1)])
        .fails(BAD_PARAM, syn::PAGE_DOUBLE_GIVE);
    assert_eq!(host.dev.pages_held(), 2, "a failed give takes nothing");
    // The output must have room for the pages asked for.
    host.run::<cmd::ManagePages>(cmd::ManagePagesOpMod::Take, 0, 8, |i| {
        i.set_input_num_entries(2)
    })
    .fails(BAD_OUTP_LEN, syn::OUTPUT_LIST_TOO_SHORT);
    // Asking for more than is held returns what is held (Linux asks for 768 at a time until
    // none come back).
    let r = host.take(3).ok();
    let out = mlx5_prm::ManagePagesOut::new_unchecked(&r.out[..]);
    assert_eq!(out.output_num_entries(), 2);
    assert_eq!(host.dev.pages_held(), 0);
    let r = host.take(1).ok();
    assert_eq!(
        mlx5_prm::ManagePagesOut::new_unchecked(&r.out[..]).output_num_entries(),
        0
    );
}

#[test]
fn unknown_and_busy_handles() {
    let host = Host::inline();
    host.bring_up();
    host.run::<cmd::DeallocPd>(0, 0, 0, |i| i.set_pd(0x99))
        .fails(BAD_RES, syn::PD_UNKNOWN);
    host.run::<cmd::DestroyCq>(0, 0, 0, |i| i.set_cqn(1))
        .fails(BAD_RES, syn::CQ_UNKNOWN);
    host.run::<cmd::QueryEq>(0, 0, 0, |i| i.set_eq_number(9))
        .fails(BAD_RES, syn::EQ_UNKNOWN);
    let uar = host.alloc_uar();
    let (eqn, _ring) = host.create_eq(4, 0, uar, 0);
    let cqn = host.create_cq(eqn, uar, 4);
    host.run::<cmd::DestroyEq>(0, 0, 0, |i| i.set_eq_number(eqn))
        .fails(RES_BUSY, syn::EQ_BUSY);
    host.run::<cmd::DeallocUar>(0, 0, 0, |i| i.set_uar(uar))
        .fails(RES_BUSY, syn::UAR_BUSY);
    // A CQ naming an EQ that does not exist.
    host.run::<cmd::CreateCq>(0, 8, 0, |i| {
        i.cq_context_mut().set_c_eqn_or_apu_element(200);
        i.cq_context_mut().set_uar_page(uar);
    })
    .fails(BAD_RES, syn::CQ_EQ_UNKNOWN);
    host.run::<cmd::DestroyCq>(0, 0, 0, |i| i.set_cqn(cqn)).ok();
    host.run::<cmd::DestroyEq>(0, 0, 0, |i| i.set_eq_number(eqn))
        .ok();
    host.run::<cmd::DeallocUar>(0, 0, 0, |i| i.set_uar(uar))
        .ok();
}

#[test]
fn uid_is_refused() {
    let host = Host::inline();
    let mut b = header(cmd::QueryIssi::OPCODE, 0, 16);
    b[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
    host.exec(&b, 0x70).fails(BAD_PARAM, syn::UID_NOT_SUPPORTED);
}

#[test]
fn issi_and_teardown_parameters() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    host.run::<cmd::SetIssi>(0, 0, 0, |i| i.set_current_issi(2))
        .fails(BAD_PARAM, syn::ISSI_UNSUPPORTED);
    host.run::<cmd::EnableHca>(0, 0, 0, |i| i.set_function_id(3))
        .fails(BAD_PARAM, syn::HCA_BAD_FUNCTION);
    host.give_pages(48);
    host.simple::<cmd::InitHca>(0).ok();
    let mut b = header(cmd::TeardownHca::OPCODE, 0, 16);
    b[10..12].copy_from_slice(&7u16.to_be_bytes());
    host.exec(&b, 16)
        .fails(BAD_PARAM, syn::TEARDOWN_BAD_PROFILE);
}

/// An EQ interrupts on a vector of the function's MSI-X table (`Config::msix_vectors`):
/// CREATE_EQ refuses one past it, where before the EQ was made and its interrupts went to a
/// vector nobody could receive.
#[test]
fn eqs_interrupt_on_the_functions_vectors() {
    let host = Host::new(mlx5_sim::Config {
        msix_vectors: 4,
        ..mlx5_sim::Config::default()
    });
    host.bring_up();
    let uar = host.alloc_uar();
    for intr in [4, 0xfff] {
        let ring = host.alloc(4096, 4096);
        host.run::<cmd::CreateEq>(0, 8, 0, |i| {
            let mut c = i.eq_context_entry_mut();
            c.set_log_eq_size(4);
            c.set_uar_page(uar);
            c.set_intr(intr);
            i.set_pas(0, ring.iova).unwrap();
        })
        .fails(BAD_PARAM, syn::EQ_BAD_INTR);
    }
    let (eqn, _ring) = host.create_eq(4, 0, uar, 3);
    host.run::<cmd::DestroyEq>(0, 0, 0, |i| i.set_eq_number(eqn))
        .ok();
}
