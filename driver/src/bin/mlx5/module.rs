//! `mlx5 module`: the module EEPROM of the port's cage (MCIA), decoded as `ethtool -m` does,
//! or dumped in hex as `ethtool -m DEV hex on`.

use crate::{json, Output};
use mlx5_driver::backend::Backend;
use mlx5_driver::module::{DecodeOptions, EepromAddr, EepromReader};
use mlx5_driver::Hca;

#[derive(clap::Args)]
pub struct Args {
    /// Decode even when a check code does not match (the mismatch is still reported).
    #[arg(long)]
    no_verify: bool,
    /// Dump the 256-byte window of one page in hex instead of decoding.
    #[arg(long)]
    hex: bool,
    /// The page to dump (its upper half; the lower half is always page 0's).
    #[arg(long, default_value_t = 0)]
    page: u8,
    /// The I2C address to dump (0x50, or 0x51 for an SFP's diagnostics).
    #[arg(long, default_value = "0x50", value_parser = parse_u8)]
    i2c: u8,
}

fn parse_u8(s: &str) -> Result<u8, String> {
    let v = match s.strip_prefix("0x") {
        Some(h) => u8::from_str_radix(h, 16),
        None => s.parse(),
    };
    v.map_err(|_| format!("`{s}` is not a byte"))
}

pub fn run<B: Backend>(
    hca: &Hca<B>,
    port: u8,
    args: &Args,
    as_json: bool,
) -> Result<Output, String> {
    let port = hca.port(port);
    if args.hex {
        let mut reader = port.module_reader().map_err(|e| e.to_string())?;
        let mut window = [0u8; 256];
        for (half, offset) in [(0usize, 0u8), (1, 128)] {
            let at = EepromAddr {
                i2c_address: args.i2c,
                page: if half == 0 { 0 } else { args.page },
                bank: 0,
                offset,
            };
            reader
                .read(at, &mut window[half * 128..half * 128 + 128])
                .map_err(|e| e.to_string())?;
        }
        if as_json {
            return Ok(Output::Json(serde_json::json!({
                "i2c_address": args.i2c,
                "page": args.page,
                "bytes": window.to_vec(),
            })));
        }
        let mut s = format!(
            "Offset\t\tValues (I2C {:#04x}, page {})\n------\t\t------\n",
            args.i2c, args.page
        );
        for (row, chunk) in window.chunks(16).enumerate() {
            let bytes: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
            s.push_str(&format!("0x{:04x}:\t\t{}\n", row * 16, bytes.join(" ")));
        }
        return Ok(Output::Text(s));
    }
    let opts = DecodeOptions {
        verify_checksums: !args.no_verify,
    };
    let module = port.module(&opts).map_err(|e| e.to_string())?;
    if as_json {
        Ok(Output::Json(json(&module)?))
    } else {
        Ok(Output::Text(module.to_string()))
    }
}
