// A layout whose storage runs on past its fixed part (CREATE_SQ's page list) has no
// `from_slice`: a view over exactly its fixed part would see no pages.
use mlx5_prm::CreateSqIn;

fn main() {
    let buf = [0u8; 0x110 + 8];
    let _ = CreateSqIn::from_slice(&buf);
}
