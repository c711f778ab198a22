//! `prmc decode` / `prmc encode` on dumps written by hand, with the expected values worked out
//! by hand from the PRM positions in `spec/` (not from the decoder), snapshots of both output
//! forms, and the error cases with their exit statuses.

use prm_codegen::decode::cli::{self, Which};
use prm_codegen::decode::{decode, hex, tree, Node, Options, Target};
use prm_codegen::Compilation;
mod run_prmc;

use run_prmc::prmc_with_input;
use std::sync::OnceLock;

fn spec() -> &'static Compilation {
    static C: OnceLock<Compilation> = OnceLock::new();
    C.get_or_init(|| {
        let c = prm_codegen::compile_dir(std::path::Path::new("../spec")).expect("spec readable");
        assert!(c.is_ok(), "{}", c.render_human());
        c
    })
}

fn find<'n>(n: &'n Node, path: &str) -> &'n Node {
    fn walk<'n>(n: &'n Node, path: &str) -> Option<&'n Node> {
        if n.path == path {
            return Some(n);
        }
        n.children.iter().find_map(|c| walk(c, path))
    }
    walk(n, path).unwrap_or_else(|| panic!("no node {path}"))
}

fn decoded(layout: &str, dump: &str) -> Node {
    let ir = &spec().ir;
    let t = Target::find(ir, layout).expect("layout");
    let buf = hex::parse_hex(dump).expect("dump parses");
    tree::check_length(ir, t, buf.len()).expect("length fits");
    decode(ir, t, &buf, &Options::default())
}

/// A responder CQE as `hexdump -C` prints it. By hand, from spec/cqe.yaml:
/// - byte 0 = 0x80: bit 0x00[31], reserved (tls_offload is [28:27]) -> flagged;
/// - 0x0c = deadbeef: rss_hash_result;
/// - 0x1c = 07 28 00 64: l4_ok, l3_ok, l2_ok ([26:24] = 111), l4_hdr_type [22:20] = 010 (udp),
///   l3_hdr_type [19:18] = 10 (ipv4), vlan_info = 0x64;
/// - 0x2c = 000005ea: byte_cnt 1514;
/// - 0x30..0x38 = 00000001 02030405: timestamp 0x102030405;
/// - 0x38 = 00 000123: s_wqe_opcode 0, qpn 0x123;
/// - 0x3c = 00 05 00 21: wqe_counter 5, signature 0, opcode 0x2 (resp_send), owner 1.
const CQE: &str = "\
00000000  80 00 00 00 00 00 00 00  00 00 00 00 de ad be ef  |................|
00000010  00 00 00 00 00 00 00 00  00 00 00 00 07 28 00 64  |.............(.d|
00000020  00 00 00 00 00 00 00 00  00 00 00 00 00 00 05 ea  |................|
00000030  00 00 00 01 02 03 04 05  00 00 01 23 00 05 00 21  |...........#...!|
00000040
";

#[test]
fn cqe_by_hand() {
    let root = decoded("cqe64", CQE);
    let v = |p: &str| find(&root, p).value.clone().expect("leaf");
    assert_eq!(v("rss_hash_result"), serde_json::json!(0xdead_beef_u64));
    assert_eq!(v("l4_ok"), serde_json::json!(true));
    assert_eq!(v("l3_ok"), serde_json::json!(true));
    assert_eq!(v("l2_ok"), serde_json::json!(true));
    assert_eq!(v("has_vlan"), serde_json::json!(false));
    assert_eq!(v("l4_hdr_type"), serde_json::json!("udp"));
    assert_eq!(v("l3_hdr_type"), serde_json::json!("ipv4"));
    assert_eq!(v("vlan_info"), serde_json::json!(0x64));
    assert_eq!(v("byte_cnt"), serde_json::json!(1514));
    assert_eq!(v("timestamp"), serde_json::json!(0x1_0203_0405_u64));
    assert_eq!(v("qpn"), serde_json::json!(0x123));
    assert_eq!(v("wqe_counter"), serde_json::json!(5));
    assert_eq!(v("opcode"), serde_json::json!("resp_send"));
    assert_eq!(v("owner"), serde_json::json!(true));
    let op = find(&root, "opcode");
    assert_eq!(op.position, "0x3c[7:4]");
    assert_eq!(op.bit_offset, 0x3c * 8 + 24); // bit 7 of the dword at 0x3c
    assert_eq!(op.raw.as_deref(), Some("0x2"));
    let reserved: Vec<&Node> = root
        .children
        .iter()
        .filter(|n| n.kind == "reserved")
        .collect();
    assert_eq!(reserved.len(), 1, "{reserved:?}");
    assert_eq!(reserved[0].position, "0x00[31:29]");
    assert_eq!(reserved[0].raw.as_deref(), Some("0x4"));
}

#[test]
fn unknown_enum_value_is_named_so() {
    // err_cqe.syndrome is 0x34[7:0]; 0x99 is no cqe_syndrome value. 0x3c[7:4] = 0xd: req_err.
    let mut b = vec![0u8; 0x40];
    b[0x37] = 0x99;
    b[0x3f] = 0xd0;
    let root = decoded("err_cqe", &hex::to_hex(&b));
    let s = find(&root, "syndrome");
    assert_eq!(s.value, Some(serde_json::json!(0x99)));
    assert!(s.note.as_deref().unwrap_or("").contains("unknown"), "{s:?}");
    assert_eq!(
        find(&root, "opcode").value,
        Some(serde_json::json!("req_err"))
    );
}

/// CREATE_CQ's input with two page addresses, in xxd's form. By hand, from spec/cq.yaml
/// (cq_context at 0x10, so cqc's 0x0c is 0x1c):
/// - 0x00 = 0400 0000: opcode 0x400;
/// - 0x10 = 0020 0000: cqe_sz [23:21] = 001 (bytes_128);
/// - 0x1c = 0c00 0456: log_cq_size 12, uar_page 0x456;
/// - 0x24 = 0000 0003: c_eqn_or_apu_element 3;
/// - 0x48 = 0000 0000 1234 0000: dbr_addr (cqc 0x38);
/// - 0x110, 0x118: pas[0] = 0x1000, pas[1] = 0x2000.
fn create_cq_dump() -> String {
    let mut b = vec![0u8; 0x120];
    b[0..2].copy_from_slice(&[0x04, 0x00]);
    b[0x11] = 0x20;
    b[0x1c..0x20].copy_from_slice(&[0x0c, 0x00, 0x04, 0x56]);
    b[0x27] = 3;
    b[0x4c..0x4e].copy_from_slice(&[0x12, 0x34]);
    b[0x116] = 0x10;
    b[0x11e] = 0x20;
    // xxd's layout: offset, eight groups of two bytes, two spaces, ASCII.
    let mut text = String::new();
    for (i, line) in b.chunks(16).enumerate() {
        let groups: Vec<String> = line
            .chunks(2)
            .map(|g| g.iter().map(|x| format!("{x:02x}")).collect())
            .collect();
        text.push_str(&format!(
            "{:08x}: {}  ................\n",
            i * 16,
            groups.join(" ")
        ));
    }
    text
}

#[test]
fn create_cq_in_by_hand() {
    let root = decoded("create_cq_in", &create_cq_dump());
    let v = |p: &str| find(&root, p).value.clone().expect("leaf");
    assert_eq!(v("opcode"), serde_json::json!(0x400));
    assert_eq!(v("cq_context.cqe_sz"), serde_json::json!("bytes_128"));
    assert_eq!(v("cq_context.log_cq_size"), serde_json::json!(12));
    assert_eq!(v("cq_context.uar_page"), serde_json::json!(0x456));
    assert_eq!(v("cq_context.c_eqn_or_apu_element"), serde_json::json!(3));
    assert_eq!(v("cq_context.dbr_addr"), serde_json::json!(0x1234_0000_u64));
    assert_eq!(find(&root, "cq_context.dbr_addr").position, "0x48[63:0]");
    assert_eq!(
        find(&root, "cq_context.log_cq_size").position,
        "0x1c[28:24]"
    );
    assert_eq!(
        find(&root, "cq_context.log_cq_size")
            .spec_position
            .as_deref(),
        Some("0x0c[28:24]")
    );
    assert_eq!(find(&root, "pas").children.len(), 2);
    assert_eq!(v("pas[0]"), serde_json::json!(0x1000));
    assert_eq!(v("pas[1]"), serde_json::json!(0x2000));
    assert!(root.children.iter().all(|n| n.kind != "reserved"));
}

#[test]
fn command_mailbox_by_opcode() {
    let dir = tempfile::Builder::new()
        .prefix("prmc-decode-")
        .tempdir()
        .unwrap();
    let f = dir.path().join("cq.xxd");
    std::fs::write(&f, create_cq_dump()).unwrap();
    let ir = &spec().ir;
    let by_op = cli::decode(
        ir,
        &Which::Command("0x400".into(), false),
        Some(&f),
        false,
        &cli::Picks::default(),
        false,
    )
    .unwrap();
    let by_name = cli::decode(
        ir,
        &Which::Layout("create_cq_in".into()),
        Some(&f),
        false,
        &cli::Picks::default(),
        false,
    )
    .unwrap();
    assert_eq!(by_op, by_name);
}

#[test]
fn union_through_selector_and_member() {
    // ppcnt_reg.grp (0x00[5:0]) = 1 picks the RFC 2863 member of counter_set (at 0x08).
    let ir = &spec().ir;
    let t = Target::find(ir, "ppcnt_reg").unwrap();
    let mut b = vec![0u8; 0x100];
    b[3] = 0x01;
    b[0x0f] = 0x99; // if_in_octets_low: the member's 0x04, at 0x0c
    let root = decode(ir, t, &b, &Options::default());
    let u = find(&root, "counter_set");
    assert_eq!(u.children.len(), 1);
    assert_eq!(
        u.children[0].path,
        "counter_set.eth_2863_cntrs_grp_data_layout"
    );
    assert_eq!(
        find(
            &root,
            "counter_set.eth_2863_cntrs_grp_data_layout.if_in_octets_low"
        )
        .value,
        Some(serde_json::json!(0x99))
    );
    let opts = Options {
        members: vec!["eth_802_3_cntrs_grp_data_layout".into()],
        ..Options::default()
    };
    let root = decode(ir, t, &b, &opts);
    assert_eq!(
        find(&root, "counter_set").children[0].path,
        "counter_set.eth_802_3_cntrs_grp_data_layout"
    );
}

#[test]
fn snapshots() {
    let ir = &spec().ir;
    let t = Target::find(ir, "cqe64").unwrap();
    let buf = hex::parse_hex(CQE).unwrap();
    let root = decode(ir, t, &buf, &Options::default());
    insta::assert_snapshot!(
        "decode_cqe64_text",
        prm_codegen::decode::render::text("cqe64", buf.len(), &root)
    );
    let t = Target::find(ir, "create_cq_in").unwrap();
    let buf = hex::parse_hex(&create_cq_dump()).unwrap();
    let root = decode(ir, t, &buf, &Options::default());
    insta::assert_snapshot!(
        "decode_create_cq_in_json",
        prm_codegen::decode::render::json("create_cq_in", buf.len(), &root)
    );
}

#[test]
fn encode_then_decode_on_the_command_line() {
    let (code, hex_out, err) = prmc_with_input(
        &[
            "encode",
            "cqe64",
            "--spec",
            "../spec",
            "opcode=resp_send",
            "owner=true",
            "qpn=0x123",
            "byte_cnt=1514",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    // By hand: 0x2c = 000005ea, 0x38 = 00000123, 0x3c = 00000021.
    assert_eq!(
        hex_out,
        "00000000 00000000 00000000 00000000\n\
         00000000 00000000 00000000 00000000\n\
         00000000 00000000 00000000 000005ea\n\
         00000000 00000000 00000123 00000021\n"
    );
    let (code, text, err) = prmc_with_input(&["decode", "cqe64", "--spec", "../spec"], &hex_out);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("resp_send"), "{text}");
    let (code, json, err) = prmc_with_input(
        &[
            "decode", "cqe64", "-", "--spec", "../spec", "--format", "json",
        ],
        &hex_out,
    );
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["layout"], "cqe64");
    assert_eq!(doc["bytes"], 64);
}

#[test]
fn errors_exit_1_with_a_location() {
    let s = ["--spec", "../spec"];
    let dec = |stdin: &str| prmc_with_input(&["decode", "cqe64", s[0], s[1]], stdin);
    let (code, _, err) = dec("00 01 02");
    assert_eq!(code, 1);
    assert!(err.contains("truncated") && err.contains("0x40"), "{err}");
    let (code, _, err) = dec("00 01\n02 0\n");
    assert_eq!(code, 1);
    assert!(
        err.contains("<stdin>:2:4:") && err.contains("odd number"),
        "{err}"
    );
    let (code, _, err) = dec(&hex::to_hex(&[0u8; 0x48]));
    assert_eq!(code, 1);
    assert!(
        err.contains("0x48") && err.contains("no trailing array"),
        "{err}"
    );
    let (code, _, err) = dec("00000000  00 01  |..|\n00000010  00 |.|\n");
    assert_eq!(code, 1);
    assert!(err.contains("<stdin>:2:1:"), "{err}");
    let enc = |a: &str| prmc_with_input(&["encode", "cqe64", s[0], s[1], a], "");
    let (code, _, err) = enc("opcod=2");
    assert_eq!(code, 1);
    assert!(
        err.contains("no field `opcod`") && err.contains("did you mean `opcode`"),
        "{err}"
    );
    let (code, _, err) = enc("opcode=16");
    assert_eq!(code, 1);
    assert!(err.contains("`opcode` (4 bits"), "{err}");
    let (code, _, err) = enc("qpn=0x1000000");
    assert_eq!(code, 1);
    assert!(err.contains("`qpn` (24 bits"), "{err}");
    let (code, _, err) = enc("opcode=nope");
    assert_eq!(code, 1);
    assert!(err.contains("not a value of `cqe_opcode`"), "{err}");
    let (code, _, err) = enc("opcode");
    assert_eq!(code, 1);
    assert!(err.contains("not an assignment"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, err) = prmc_with_input(&["decode", "cqe65", "--spec", "../spec"], "");
    assert_eq!(code, 2);
    assert!(err.contains("did you mean `cqe64`"), "{err}");
    let (code, _, err) =
        prmc_with_input(&["decode", "--command", "0x9999", "--spec", "../spec"], "");
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = prmc_with_input(&["decode", "cqe64", "--format", "yaml"], "");
    assert_eq!(code, 2);
}

#[test]
fn encode_edits_a_base_dump() {
    let dir = tempfile::Builder::new()
        .prefix("prmc-decode-base-")
        .tempdir()
        .unwrap();
    let f = dir.path().join("cqe.hexdump");
    std::fs::write(&f, CQE).unwrap();
    let (code, out, err) = prmc_with_input(
        &[
            "encode",
            "cqe64",
            "--spec",
            "../spec",
            "--base",
            f.to_str().unwrap(),
            "opcode=req",
            "qpn=7",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let mut want = hex::parse_hex(CQE).unwrap();
    want[0x39..0x3c].copy_from_slice(&[0, 0, 7]); // qpn, 0x38[23:0]
    want[0x3f] = 0x01; // opcode 0 in 0x3c[7:4], owner 1 kept
    assert_eq!(hex::parse_hex(&out).unwrap(), want);
}

/// decode and encode on a spec directory written by `prmc import` from a kernel-style header.
#[test]
fn works_on_an_imported_header() {
    let parent = tempfile::Builder::new()
        .prefix("prmc-decode-import-")
        .tempdir()
        .unwrap();
    // A directory `prmc import` makes itself, in one removed when the test ends.
    let dir = parent.path().join("spec");
    let d = dir.to_str().unwrap();
    // The toy header holds one member the importer rejects on purpose (exit 1); the rest is
    // written.
    let (_, _, err) = prmc_with_input(&["import", "tests/import/toy_ifc.h", "--out", d], "");
    assert!(err.contains("imported"), "{err}");
    let (code, out, err) = prmc_with_input(
        &[
            "encode",
            "toy_query_in",
            "--spec",
            d,
            "hdr.opcode=0x100",
            "vlan=5",
            "mac=0xab000000",
            "nibbles[1]=0xf",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    // By hand from toy_ifc.h: opcode is bits 0x00..0x10, vlan 0x50..0x60 (0x08[15:0]), mac
    // six bytes from byte 0x0c (imported as bytes: 00 00 ab 00 00 00), nibbles eight 4-bit
    // elements from bit 0x90, so nibbles[1] is the low half of byte 0x12.
    assert!(
        out.starts_with("01000000 00000000 00000005 0000ab00\n00000f00 "),
        "{out}"
    );
    let (code, json, err) = prmc_with_input(
        &["decode", "toy_query_in", "--spec", d, "--format", "json"],
        &out,
    );
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let kids = doc["root"]["children"].as_array().unwrap();
    let vlan = kids.iter().find(|n| n["path"] == "vlan").unwrap();
    assert_eq!(vlan["value"], 5);
    assert_eq!(vlan["position"], "0x08[15:0]");
}

#[test]
fn unknown_member_is_a_usage_error() {
    let (code, _, err) = prmc_with_input(
        &[
            "decode",
            "ppcnt_reg",
            "--spec",
            "../spec",
            "--member",
            "eth_2863_cntrs",
        ],
        &hex::to_hex(&[0u8; 0x100]),
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("no union has a member `eth_2863_cntrs`"),
        "{err}"
    );
}

#[test]
fn encode_a_command_fills_in_its_opcode() {
    // CREATE_CQ is 0x400 (spec/cq.yaml); opcode is create_cq_in's 0x00[31:16].
    let (code, out, err) = prmc_with_input(
        &[
            "encode",
            "--spec",
            "../spec",
            "--command",
            "create_cq",
            "uid=1",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("04000001 00000000"), "{out}");
    let (code, text, err) =
        prmc_with_input(&["decode", "--spec", "../spec", "--command", "0x400"], &out);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("create_cq_in: 0x110 bytes"), "{text}");
}

#[test]
fn op_mod_picks_the_output_union_member_the_input_selected() {
    // QUERY_HCA_CAP's output: the capability page is the member the input's op_mod picks
    // (bits 15:1 the page, bit 0 current/maximum). Page 4 is RoCE, so op_mod 0x9 is the
    // RoCE page's current values.
    let zeros = "00".repeat(0x1010);
    let args = [
        "decode",
        "--command",
        "query_hca_cap",
        "--out",
        "--spec",
        "../spec",
    ];
    let (code, out, err) = prmc_with_input(&[&args[..], &["--op-mod", "0x9"]].concat(), &zeros);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("member roce_cap chosen by query_hca_cap_in.op_mod = 0x9 (--op-mod)"),
        "{out}"
    );
    assert!(out.contains("capability.roce_cap."), "{out}");
    assert!(
        !out.contains("capability.cmd_hca_cap."),
        "only the picked member: {out}"
    );
    // Without it the output alone cannot say: every member, and how to pick one.
    let (code, out, _) = prmc_with_input(&args, &zeros);
    assert_eq!(code, 0);
    assert!(out.contains("or --op-mod for a command's output"), "{out}");
    // A value wider than op_mod, or --op-mod without a command, is a usage error.
    let (code, _, err) = prmc_with_input(&[&args[..], &["--op-mod", "0x10000"]].concat(), &zeros);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("does not fit query_hca_cap_in.op_mod (16 bits)"),
        "{err}"
    );
    let (code, _, err) = prmc_with_input(&["decode", "cqe64", "--op-mod", "1"], "");
    assert_eq!(code, 2, "{err}");
}

/// A dump whose `*` line stands for 8 MiB of repeated rows: CREATE_CQ's input with a
/// million-entry page list. `scripts/fuzz --long` found this shape as a timeout (every element
/// was decoded, 50 s under the address sanitizer); now the first 256 elements are, the array
/// says how many it has, and `--elements` chooses.
#[test]
fn a_huge_trailing_array_decodes_its_first_elements() {
    let rows = 8 << 20;
    let dump = format!(
        "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n\
         *\n\
         {rows:08x}\n"
    );
    let ir = &spec().ir;
    let t = Target::find(ir, "create_cq_in").expect("create_cq_in");
    let buf = hex::parse_hex(&dump).expect("dump parses");
    assert_eq!(buf.len(), rows);
    let pas_len = (rows - 0x110) / 8;
    let root = decode(ir, t, &buf, &Options::default());
    let pas = find(&root, "pas");
    assert_eq!(pas.children.len(), 256);
    assert_eq!(pas.children[255].path, "pas[255]");
    let note = pas.note.as_deref().unwrap_or_default();
    assert!(
        note.starts_with(&format!("{pas_len} elements, the first 256 decoded")),
        "{note}"
    );
    let every = decode(
        ir,
        t,
        &buf[..0x110 + 8 * 1000],
        &Options {
            max_elements: None,
            ..Options::default()
        },
    );
    assert_eq!(find(&every, "pas").children.len(), 1000);
    assert_eq!(find(&every, "pas").note.as_deref(), Some("1000 elements"));

    // The command line: `--elements 2`, `--elements all`, and a bad value.
    let small = format!(
        "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n\
         *\n\
         {:08x}\n",
        0x110 + 8 * 5
    );
    let (code, text, err) = prmc_with_input(
        &[
            "decode",
            "create_cq_in",
            "--spec",
            "../spec",
            "--elements",
            "2",
        ],
        &small,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("pas[1]") && !text.contains("pas[2]"),
        "{text}"
    );
    assert!(text.contains("5 elements, the first 2 decoded"), "{text}");
    let (code, text, err) = prmc_with_input(
        &[
            "decode",
            "create_cq_in",
            "--spec",
            "../spec",
            "--elements",
            "all",
        ],
        &small,
    );
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("pas[4]"), "{text}");
    let (code, _, err) = prmc_with_input(
        &[
            "decode",
            "create_cq_in",
            "--spec",
            "../spec",
            "--elements",
            "many",
        ],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("many"), "{err}");
}
