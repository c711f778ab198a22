// The generic form: `apply` with a transition that does not leave the handle's state.
include!("support/handle.rs");

use mlx5_prm::qp_machine::{Init2rtr, Rts};
use mlx5_prm::rt::typestate::Handle as _;

fn run(qp: Qp<Rts>, args: Init2rtr) {
    let _ = qp.apply(args);
}

fn main() {
    let _ = run;
}
