//! Command tracing: at `trace` level, every command's input and output as a hex dump, the
//! way the Linux driver's command tracing shows them.

use std::fmt::Write as _;

/// Logs `data` as a hex dump, 16 bytes a line with offsets.
pub fn dump(command: &str, direction: &str, data: &[u8]) {
    if !log::log_enabled!(target: "mlx5_driver::cmd", log::Level::Trace) {
        return;
    }
    let mut text = String::new();
    for (i, line) in data.chunks(16).enumerate() {
        let _ = write!(text, "\n  {:04x}:", i * 16);
        for (j, b) in line.iter().enumerate() {
            if j % 4 == 0 {
                text.push(' ');
            }
            let _ = write!(text, "{b:02x}");
        }
    }
    log::trace!(target: "mlx5_driver::cmd", "{command} {direction} ({} bytes):{text}", data.len());
}
