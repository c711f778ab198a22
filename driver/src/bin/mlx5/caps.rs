//! `mlx5 caps`: the general device capabilities the HCA runs with (QUERY_HCA_CAP, current
//! values), field by field, and the firmware version.

use crate::fields;
use crate::{table, Output};
use mlx5_driver::backend::Backend;
use mlx5_driver::Hca;

#[derive(clap::Args)]
pub struct Args {
    /// Show the fields that are zero too.
    #[arg(long)]
    all: bool,
}

pub fn run<B: Backend>(hca: &Hca<B>, args: &Args, as_json: bool) -> Result<Output, String> {
    let info = hca.info();
    let caps = info.caps();
    let bytes: &[u8] = caps.storage();
    let layout = mlx5_prm::layout_by_name("cmd_hca_cap").ok_or("no table for cmd_hca_cap")?;
    let (major, minor, sub) = info.fw_version;
    let fw = format!("{major}.{minor}.{sub}");
    if as_json {
        return Ok(Output::Json(serde_json::json!({
            "firmware_version": fw,
            "issi": info.issi,
            "general": fields::to_json(layout, bytes),
        })));
    }
    let mut rows = vec![
        ("firmware_version".to_string(), fw),
        ("issi".to_string(), info.issi.to_string()),
    ];
    fields::lines(layout, bytes, args.all, "", &mut rows);
    Ok(Output::Text(format!(
        "General capabilities (current){}:\n{}",
        if args.all {
            ""
        } else {
            ", fields that are not zero"
        },
        table(&rows)
    )))
}
