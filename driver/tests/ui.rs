//! Compile-fail cases: each program in tests/ui must fail to build with exactly the error in
//! its `.stderr` file (trybuild compares them), so a case passes only for its own reason. The
//! programs are generic over `Backend`, so they need no device and run without the `sim`
//! feature too. Regenerate the expected output after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p mlx5-driver --test ui`, and read the diff.

#[test]
fn misuses_the_compiler_refuses() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
