// A minimal QP handle for the compile-fail cases (included, not a case itself).
use core::marker::PhantomData;
use mlx5_prm::qp_machine::Machine;
use mlx5_prm::rt::typestate::{Handle, State, Transition};
use mlx5_prm::rt::Overflow;

pub struct Qp<S> {
    state: PhantomData<S>,
}

impl<S: State<Machine = Machine>> Qp<S> {
    pub fn new() -> Self {
        Qp { state: PhantomData }
    }
}

impl<S: State<Machine = Machine>> Handle for Qp<S> {
    type Machine = Machine;
    type State = S;
    type Next<T: State<Machine = Machine>> = Qp<T>;
    type Error = Overflow;

    fn apply<T: Transition<S>>(self, _args: T) -> Result<Qp<T::To>, Overflow> {
        Ok(Qp { state: PhantomData })
    }
}
