//! The generated crate's compile-fail cases (`mlx5-prm/tests/ui`): the QP state machine's
//! typestate (a transition from the wrong state, a required field left out) and the fixed-size
//! constructors a layout that runs on does not have.

#[test]
fn typestate_misuses_do_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/prm/*.rs");
}

#[test]
fn layouts_that_run_on_have_no_fixed_constructors() {
    // CREATE_SQ's page list follows its fixed part: a view over exactly that part would count
    // no pages, so `CreateSqIn` has no `from_slice`.
    trybuild::TestCases::new().compile_fail("tests/prm/fixed_views/*.rs");
}
