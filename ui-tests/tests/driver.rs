//! The driver's misuses the compiler refuses (`driver/tests/ui/*.rs`, each with the `.stderr`
//! rustc must print): a QP used in the wrong state, a resource outliving its HCA or pool, a
//! posted region touched, a packet reused after it was sent, a read-only register written, a
//! completion handed over twice or made by hand, a raw command or BAR write from safe code, a
//! command that is not a query run as one.

#[test]
fn misuses_the_compiler_refuses() {
    trybuild::TestCases::new().compile_fail("tests/driver/*.rs");
}
