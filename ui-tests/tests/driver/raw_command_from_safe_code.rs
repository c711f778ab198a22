// Raw commands and raw BAR writes can hand the device memory the caller does not keep (a
// firmware page, a CQ ring, a command queue) or destroy what the driver tracks, so safe code
// reaches none of them: each needs `unsafe` and the caller's promise. That includes the ways
// round: a register-block view whose setters write the BAR, and held doorbells let go late.
use mlx5_driver::backend::{Backend, Deferred, DmaAlloc, Mmio, Regs};
use mlx5_driver::cmd::CmdQueue;
use mlx5_driver::Hca;
use mlx5_prm::cmd::{DestroyEq, EnableHca, ManagePages, ManagePagesOpMod};
use std::time::Duration;

fn give_a_page_then_free_it<B: Backend>(hca: &Hca<B>) {
    let page = hca.backend().dma().alloc(4096, 4096).unwrap();
    let _ = hca.run_extra::<ManagePages>(ManagePagesOpMod::Give, 8, 0, |i| {
        i.set_input_num_entries(1);
        i.set_pas(0, page.iova())?;
        Ok(())
    });
    drop(page);
}

fn destroy_the_driver_s_eq<B: Backend>(hca: &Hca<B>) {
    let eqn = hca.info().eqn;
    let _ = hca.run::<DestroyEq>(0, |i| i.set_eq_number(eqn));
}

fn ring_the_command_doorbell<B: Backend>(hca: &Hca<B>) {
    hca.backend().mmio().write32(0x18, 1);
}

fn free_a_queue_the_device_still_has<B: Backend>(be: &B) {
    let mut q = CmdQueue::new(be, Duration::from_secs(1), 16).unwrap();
    let _ = q.run::<EnableHca, _, _>(be, 0, 0, 0, |_| Ok(()));
    q.retire(true);
}

fn a_register_block_to_write<B: Backend>(hca: &Hca<B>) {
    let _ = Regs::new(hca.backend().mmio());
}

fn ring_held_doorbells_late<B: Backend>(hca: &Hca<Deferred<B>>) {
    hca.backend().release();
    hca.backend().stop();
}

fn main() {}
