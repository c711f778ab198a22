use super::*;
use mlx5_prm::cmd::{CreateEq, EnableHca};
use mlx5_prm::rt::Command;

/// A CREATE_EQ input as mlx5_core builds one: the EQ context, the event bitmask and two page
/// addresses, bytes as they arrive in the command's mailboxes.
fn create_eq_input() -> Vec<u8> {
    let mut buf = vec![0u8; 0x110 + 16];
    let mut input = CreateEq::input(&mut buf[..], 0).unwrap();
    {
        let mut eqc = input.eq_context_entry_mut();
        eqc.set_log_eq_size(8);
        eqc.set_uar_page(8);
        eqc.set_intr(0);
    }
    input.set_pas(0, 0x1234_5000).unwrap();
    input.set_pas(1, 0x1234_6000).unwrap();
    buf
}

#[test]
fn every_command_layout_of_the_spec_is_in_the_table() {
    // An input layout is a command's when it has `opcode` at bit 0 and ends in "_in".
    let missing: Vec<&str> = mlx5_prm::ALL_LAYOUTS
        .iter()
        .filter(|l| l.name.ends_with("_in") && l.name != "cmd_in") // cmd_in: the common header
        .filter(|l| {
            l.fields
                .iter()
                .any(|f| f.name == "opcode" && f.bit_offset == 0)
        })
        .filter(|l| !crate::commands::COMMANDS.iter().any(|c| c.input == l.name))
        .map(|l| l.name)
        .collect();
    assert!(
        missing.is_empty(),
        "commands missing from commands.rs: {missing:?}"
    );
    for c in crate::commands::COMMANDS {
        assert!(crate::commands::layout(c.input).is_some(), "{}", c.input);
        assert!(crate::commands::layout(c.output).is_some(), "{}", c.output);
    }
}

#[test]
fn fields_are_named_from_the_spec_and_zero_fields_left_out() {
    let c = TracedCommand {
        opcode: CreateEq::OPCODE,
        op_mod: 0,
        delivery: 0,
        status: 0,
        syndrome: 0,
        input: Some(create_eq_input()),
        output: Some({
            let mut out = vec![0u8; 0x10];
            out[0x08..0x0c].copy_from_slice(&7u32.to_be_bytes()); // eq_number
            out
        }),
    };
    let v = to_json(1, &c);
    assert_eq!(v["name"], "create_eq");
    assert_eq!(v["opcode"], "0x301");
    assert_eq!(v["in"]["opcode"], 0x301);
    assert_eq!(v["in"]["eq_context_entry.log_eq_size"], 8);
    assert_eq!(v["in"]["eq_context_entry.uar_page"], "0x8");
    assert_eq!(v["in"]["pas[0]"], "0x12345000");
    assert_eq!(v["in"]["pas[1]"], "0x12346000");
    assert!(v["in"].get("op_mod").is_none(), "zero fields are left out");
    assert!(v["in"].get("eq_context_entry.intr").is_none());
    assert_eq!(v["out"]["eq_number"], 7);
}

#[test]
fn failures_show_status_and_syndrome_and_unknown_opcodes_show_raw_dwords() {
    let c = TracedCommand {
        opcode: 0x7777,
        op_mod: 3,
        delivery: 0,
        status: 0x2,
        syndrome: 0x5e01_0002,
        input: Some(vec![0x77, 0x77, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0]),
        output: None,
    };
    let v = to_json(9, &c);
    assert_eq!(v["name"], "unknown");
    assert_eq!(v["status"], 2);
    assert_eq!(v["syndrome"], "0x5e010002");
    assert_eq!(v["in"]["+0x0"], "0x77770000");
    assert_eq!(v["in"]["+0x4"], "0x00000003");
    assert!(v.get("out").is_none());
}

#[test]
fn short_buffers_do_not_panic() {
    for len in 0..24 {
        let c = TracedCommand {
            opcode: EnableHca::OPCODE,
            input: Some(vec![0xff; len]),
            output: Some(vec![0xff; len]),
            ..TracedCommand::default()
        };
        let v = to_json(1, &c);
        assert_eq!(v["name"], "enable_hca");
    }
}

#[test]
fn the_writer_numbers_lines() {
    let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = TraceWriter::new(Box::new(Shared(buf.clone())));
    w.note("session 1").unwrap();
    w.record(&TracedCommand {
        opcode: EnableHca::OPCODE,
        ..TracedCommand::default()
    })
    .unwrap();
    w.record(&TracedCommand::default()).unwrap();
    let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["event"], "session 1");
    assert_eq!(lines[1]["seq"], 1);
    assert_eq!(lines[2]["seq"], 2);
    assert_eq!(w.count(), 2);
}
