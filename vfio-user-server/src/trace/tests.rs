use super::*;
use mlx5_prm::cmd::{
    CreateEq, CreateSq, EnableHca, QueryHcaCap, QueryHcaCapOpMod, SetFte, SetHcaCap, SetHcaCapOpMod,
};
use mlx5_prm::rt::Command;
use mlx5_prm::{AtomicEndiannessMode, QueryHcaCapOut};

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

/// The trace of one command with `input` (and no output).
fn trace_input(opcode: u16, op_mod: u16, input: Vec<u8>) -> Value {
    to_json(
        1,
        &TracedCommand {
            opcode,
            op_mod,
            input: Some(input),
            ..TracedCommand::default()
        },
    )
}

/// The `in` entries whose key starts with `prefix`.
fn keys_under<'v>(v: &'v Value, prefix: &str) -> Vec<&'v str> {
    v["in"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .filter(|k| k.starts_with(prefix))
        .collect()
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
        .filter(|l| !mlx5_prm::cmd::ALL.iter().any(|c| c.input == l.name))
        .map(|l| l.name)
        .collect();
    assert!(
        missing.is_empty(),
        "commands missing from cmd::ALL: {missing:?}"
    );
}

#[test]
fn every_command_of_the_spec_is_named_and_decoded() {
    // From the generated table, so a command the spec adds needs no change here.
    assert!(mlx5_prm::cmd::ALL.iter().any(|c| c.name == "sqerr2rts_qp"));
    for c in mlx5_prm::cmd::ALL {
        let size = crate::commands::layout(c.input).map_or(0, |l| l.size);
        let mut input = vec![0u8; size];
        input[..2].copy_from_slice(&c.opcode.to_be_bytes());
        let v = trace_input(c.opcode, 0, input);
        assert_eq!(v["name"], c.name);
        assert_eq!(
            v["in"]["opcode"], c.opcode,
            "{}: decoded with its layout",
            c.name
        );
        assert!(crate::commands::layout(c.output).is_some(), "{}", c.output);
    }
}

/// A SET_HCA_CAP input for capability page `page` (op_mod `page << 1`, as mlx5_core writes
/// it) with the atomic page's endianness mode and operations set.
fn set_hca_cap_atomic(page: u16) -> Vec<u8> {
    let mut buf = vec![0u8; 0x1010];
    let mut input = SetHcaCap::input(&mut buf[..], SetHcaCapOpMod::General).unwrap();
    input.set_op_mod(page << 1);
    let mut cap = input.capability_mut();
    let mut atomic = cap.atomic_caps_mut();
    atomic.set_atomic_req_8b_endianness_mode(AtomicEndiannessMode::HostEndianness);
    atomic.set_atomic_operations(0x3);
    buf
}

#[test]
fn a_union_is_decoded_as_the_member_its_selector_picks() {
    // SET_HCA_CAP's page is picked by `query_hca_cap_in.op_mod >> 1`, the selector the spec
    // gives; the trace reads it from SET_HCA_CAP's own op_mod, at the same place.
    let v = trace_input(SetHcaCap::OPCODE, 3 << 1, set_hca_cap_atomic(3));
    assert_eq!(v["name"], "set_hca_cap");
    assert_eq!(v["in"]["op_mod"], 6);
    assert_eq!(
        v["in"]["capability.atomic_caps.atomic_req_8b_endianness_mode"],
        1
    );
    assert_eq!(v["in"]["capability.atomic_caps.atomic_operations"], 3);
    assert_eq!(keys_under(&v, "capability.").len(), 2, "{v}");

    // The same bytes under the general page's op_mod read as cmd_hca_cap.
    let v = trace_input(SetHcaCap::OPCODE, 0, set_hca_cap_atomic(0));
    let general = keys_under(&v, "capability.");
    assert!(!general.is_empty());
    assert!(
        general
            .iter()
            .all(|k| k.starts_with("capability.cmd_hca_cap.")),
        "{general:?}"
    );

    // A page the union has no member for (ODP, type 2) is shown raw.
    let v = trace_input(SetHcaCap::OPCODE, 2 << 1, set_hca_cap_atomic(2));
    assert_eq!(v["in"]["capability+0x8"], "0x40000000");
    assert_eq!(v["in"]["capability+0x10"], "0x00000003");
    assert_eq!(keys_under(&v, "capability").len(), 2, "{v}");
}

#[test]
fn query_hca_cap_output_follows_the_page_of_the_input() {
    let mut input = vec![0u8; 0x10];
    QueryHcaCap::input(&mut input[..], QueryHcaCapOpMod::GeneralCur).unwrap();
    let mut out = vec![0u8; 0x1010];
    QueryHcaCapOut::new_checked(&mut out[..])
        .unwrap()
        .capability_mut()
        .cmd_hca_cap_mut()
        .set_log_max_qp(18);
    let v = to_json(
        1,
        &TracedCommand {
            opcode: QueryHcaCap::OPCODE,
            op_mod: 1,
            input: Some(input),
            output: Some(out),
            ..TracedCommand::default()
        },
    );
    assert_eq!(v["out"]["capability.cmd_hca_cap.log_max_qp"], 18);
}

#[test]
fn nested_views_that_run_on_and_trailing_lists_of_layouts_are_decoded() {
    // CREATE_SQ: the ring's page list is ctx.wq.pas, past the fixed part.
    let mut buf = vec![0u8; 0x110 + 16];
    let mut input = CreateSq::input(&mut buf[..], 0).unwrap();
    input.ctx_mut().set_cqn(5);
    let mut ctx = input.ctx_mut();
    let mut wq = ctx.wq_mut();
    wq.pas_mut(1).unwrap().set_pa_l(0x12345);
    let v = trace_input(CreateSq::OPCODE, 0, buf);
    assert_eq!(v["in"]["ctx.cqn"], "0x5");
    assert_eq!(v["in"]["ctx.wq.pas[1].pa_l"], "0x12345");
    assert!(keys_under(&v, "data").is_empty(), "{v}");
    assert!(
        keys_under(&v, "ctx.wq.pas[0]").is_empty(),
        "zero elements are left out"
    );

    // SET_FTE: the destination list is a union without a selector: raw dwords per entry.
    let mut buf = vec![0u8; 0x340 + 32];
    let mut input = SetFte::input(&mut buf[..], 0).unwrap();
    input.flow_context_mut().set_destination_list_size(1);
    buf[0x340 + 16 + 4] = 0x77;
    let v = trace_input(SetFte::OPCODE, 0, buf);
    assert_eq!(v["in"]["flow_context.destination_list_size"], "0x1");
    assert_eq!(v["in"]["flow_context.destination[1]+0x4"], "0x77000000");
    assert!(keys_under(&v, "data").is_empty(), "{v}");
}

#[test]
fn nesting_is_bounded_and_deeper_bytes_are_shown_raw() {
    let layout = crate::commands::layout("create_eq_in").unwrap();
    let input = create_eq_input();
    let decode_at = |depth| {
        let mut d = Decoder {
            out: Map::new(),
            input: None,
        };
        d.decode("", layout, &input, None, depth);
        Value::Object(d.out)
    };
    let inside = decode_at(MAX_DEPTH - 1);
    assert_eq!(inside["eq_context_entry.log_eq_size"], 8);
    let at_limit = decode_at(MAX_DEPTH);
    assert!(at_limit.get("eq_context_entry.log_eq_size").is_none());
    // log_eq_size 8 at 0x0c[28:24], uar_page 8 at 0x0c[23:0] of the EQ context.
    assert_eq!(at_limit["eq_context_entry+0xc"], "0x08000008");
    assert_eq!(
        at_limit["opcode"], 0x301,
        "the layout itself is still decoded"
    );
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
