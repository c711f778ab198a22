// RTR2RTS called on a QP in RST: the method exists on every QP handle, but its bound says
// the transition does not start in `Rst`.
include!("support/handle.rs");

use mlx5_prm::qp_machine::{Rst, Rtr2rts, Transitions as _};

fn main() {
    let qp: Qp<Rst> = Qp::new();
    let _ = qp.rtr2rts(Rtr2rts {
        next_send_psn: 0,
        retry_count: 7,
        rnr_retry: 7,
        log_sra_max: 0,
        ack_timeout: 14,
        optional: Default::default(),
    });
}
