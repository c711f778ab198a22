//! The command queue against the model: tokens, slots, mailboxes, statuses.

use super::*;
use crate::backend::sim::SimBackend;
use mlx5_prm::cmd::{EnableHca, QueryHcaCap, QueryHcaCapOpMod, QueryIssi};
use mlx5_prm::QueryHcaCapOut;

/// A queue on a model of its own. The tests never disable the function, so the queue is
/// dropped (quarantined) rather than retired, and goes with the backend.
fn queue() -> (SimBackend, std::sync::Arc<mlx5_sim::Device>, CmdQueue) {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    // SAFETY: a model of its own, driven by this queue alone, with this backend only.
    let q = unsafe { CmdQueue::new(&be, Duration::from_millis(100), 64) }.unwrap();
    (be, dev, q)
}

#[test]
fn tokens_roll_over_without_zero() {
    let (_be, _dev, mut q) = queue();
    q.token = 0xfe;
    assert_eq!(q.next_token(), 0xff);
    assert_eq!(q.next_token(), 1);
}

#[test]
fn page_commands_use_the_last_slot_and_stuck_slots_are_skipped() {
    let (_be, _dev, mut q) = queue();
    let last = (1usize << q.log_size) - 1;
    assert_eq!(q.slot(mlx5_prm::cmd::ManagePages::OPCODE), Some(last));
    assert_eq!(q.slot(EnableHca::OPCODE), Some(0));
    q.stuck = 1;
    assert_eq!(q.slot(EnableHca::OPCODE), Some(1));
    q.stuck = u32::MAX;
    assert_eq!(q.slot(EnableHca::OPCODE), None);
    q.stuck = 0;
}

#[test]
fn outputs_longer_than_the_inline_part_come_through_mailboxes() {
    let (be, dev, mut q) = queue();
    // SAFETY: ENABLE_HCA gives the device no memory; the queue is dropped into quarantine.
    unsafe { q.run::<EnableHca, _, _>(&be, 0, 0, 0, |_| Ok(())) }.unwrap();
    // QUERY_HCA_CAP's output is 0x1010 bytes: 16 inline, the rest in 8 chained blocks.
    // SAFETY: a query.
    let out =
        unsafe { q.run::<QueryHcaCap, _, _>(&be, QueryHcaCapOpMod::GeneralMax, 0, 0, |_| Ok(())) }
            .unwrap();
    assert_eq!(out.len(), 0x1010);
    let view = QueryHcaCapOut::new_checked(&out[..]).unwrap();
    let union = view.capability();
    assert_eq!(union.cmd_hca_cap().log_max_qp(), 18);
    assert_eq!(q.mailboxes.len(), 8, "the blocks are kept for reuse");
    assert!(dev.commands().iter().all(|c| c.status == 0));
}

#[test]
fn a_status_becomes_a_typed_error() {
    let (be, dev, mut q) = queue();
    // QUERY_ISSI before ENABLE_HCA is allowed; an unknown opcode is not.
    // SAFETY: a query.
    unsafe { q.run::<QueryIssi, _, _>(&be, 0, 0, 0, |_| Ok(())) }.unwrap();
    // SAFETY: an opcode the device does not know does nothing.
    let err = unsafe {
        q.exec(
            &be,
            None,
            "nonsense",
            0x7fff,
            0,
            &[0x7f, 0xff, 0, 0, 0, 0, 0, 0],
            16,
        )
    }
    .unwrap_err();
    assert_eq!(err.status(), Some(0x2), "{err}");
    assert!(err.to_string().contains("nonsense (opcode 0x7fff"), "{err}");
    assert_eq!(dev.commands().last().map(|c| c.status), Some(0x2));
}

#[test]
fn an_output_shorter_than_status_and_syndrome_is_refused_unsent() {
    let (be, dev, mut q) = queue();
    let input = [0x01, 0x0a, 0, 0, 0, 0, 0, 0]; // QUERY_ISSI, op_mod 0.
    for out_len in [0, 4, 7] {
        // SAFETY: a query.
        let err = unsafe {
            q.exec(
                &be,
                None,
                "QUERY_ISSI",
                QueryIssi::OPCODE,
                0,
                &input,
                out_len,
            )
        }
        .unwrap_err();
        assert!(matches!(err, Error::NotSent { .. }), "{out_len}: {err}");
    }
    assert!(dev.commands().is_empty(), "nothing reached the device");
}
