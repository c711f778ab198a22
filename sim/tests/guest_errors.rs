//! What an untrusted guest can throw at the command interface and the doorbells gets the PRM's
//! answer, never a loop or a crash: mailbox chains that loop, entries and mailboxes at unmapped
//! IOVAs, doorbells for objects that were never created.

mod common;

use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::rt::Command;
use mlx5_prm::{CmdDeliveryStatus as D, CmdIfBox, CmdQueueEntry};

/// Posts a MANAGE_PAGES give whose input needs `needed` mailbox blocks, through a chain of
/// the blocks at `blocks` (IOVAs, in order; `next` of block i is `links[i]`, 0 for none).
fn post_chain(host: &Host, needed: usize, blocks: &[u64], links: &[u64]) -> u8 {
    let dma = host.dev.dma();
    let token = 0x5a;
    for (i, (&at, &next)) in blocks.iter().zip(links).enumerate() {
        let mut b = CmdIfBox::zeroed();
        b.set_next_pointer_63_32((next >> 32) as u32);
        b.set_next_pointer_31_10((next as u32) >> 10);
        b.set_block_number(i as u32);
        b.set_token(token);
        dma.write(at, b.storage()).unwrap();
    }
    let mut inline = [0u8; 16];
    inline[..2].copy_from_slice(&cmd::ManagePages::OPCODE.to_be_bytes());
    inline[6..8].copy_from_slice(&1u16.to_be_bytes());
    let mut e = CmdQueueEntry::zeroed();
    e.set_type_raw(7);
    e.set_input_length((16 + 512 * needed) as u32);
    e.set_command_input_inline_data(&inline);
    e.set_input_mailbox_pointer_63_32((blocks[0] >> 32) as u32);
    e.set_input_mailbox_pointer_31_9((blocks[0] as u32) >> 9);
    e.set_output_length(16);
    e.set_token(token);
    e.set_ownership(true);
    dma.write(host.cmdq.iova, e.storage()).unwrap();
    host.dev.write32(0x18, 1);
    let mut back = [0u8; 64];
    dma.read(host.cmdq.iova, &mut back).unwrap();
    let e = CmdQueueEntry::new_unchecked(&back[..]);
    assert!(!e.ownership(), "the entry came back");
    e.status_raw()
}

#[test]
fn mailbox_chains_that_loop_are_refused() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let r = host.alloc(4096, 4096);
    let (a, b) = (r.iova, r.iova + 1024);
    // A block pointing at itself, for an input that needs three blocks.
    assert_eq!(post_chain(&host, 3, &[a], &[a]), D::BadBlkNumErr as u8);
    // Two blocks pointing at each other: the third block is the first again.
    assert_eq!(
        post_chain(&host, 3, &[a, b], &[b, a]),
        D::BadBlkNumErr as u8
    );
    // The longest chain an input length can ask for is refused before any block is read.
    assert_eq!(post_chain(&host, 1 << 17, &[a], &[a]), D::InLengthErr as u8);
    assert_eq!(host.dev.commands().len(), 1, "none of them ran");
    assert_eq!(host.dev.dma_faults(), 0);
}

#[test]
fn entries_and_mailboxes_at_unmapped_iovas() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let r = host.alloc(4096, 4096);
    // A chain whose second block is nowhere: the firmware cannot fetch it.
    assert_eq!(
        post_chain(&host, 2, &[r.iova], &[0x7_0000_0000]),
        D::FwErr as u8
    );
    assert_eq!(host.dev.dma_faults(), 1);
    // A command queue at an IOVA nobody mapped: nothing to serve, nothing to write back.
    host.dev.write32(0x10, 0x7);
    host.dev.write32(0x14, 0);
    host.dev.write32(0x18, u32::MAX);
    assert_eq!(host.dev.dma_faults(), 33, "one fault per entry rung");
    assert_eq!(host.dev.commands().len(), 1);
}

#[test]
fn doorbells_for_objects_never_created() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar() as usize * 4096;
    let before = host.dev.ignored_doorbells();
    // Send doorbells naming QPs and SQs that do not exist, through an allocated UAR page.
    for qpn in [0u32, 0xc02, 0x1001, 0xff_ffff] {
        host.dev.write64(uar + 0x800, u64::from(qpn) << 8);
    }
    assert_eq!(host.dev.ignored_doorbells(), before + 4);
    // CQ arms and EQ doorbells for unknown CQs and EQs, and writes to a UAR page never
    // allocated: no effect.
    host.dev.write64(uar + 0x20, 0x401);
    host.dev.write32(uar + 0x40, 7 << 24);
    host.dev.write32(uar + 0x48, 0xff << 24);
    host.dev.write64(100 * 4096 + 0x800, 0xc02 << 8);
    host.dev.write64(100 * 4096 + 0x20, 0x401);
    assert_eq!(host.dev.objects().cqs, 0);
    assert_eq!(host.dev.interrupts(0), 0);
    // The device is fine.
    host.simple::<cmd::QueryIssi>(0).ok();
}
