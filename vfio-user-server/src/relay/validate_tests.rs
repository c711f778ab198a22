//! The rules against the table of well-formed messages, and arbitrary input.

use super::cmd::*;
use super::*;
use proptest::prelude::*;

const BAR0_SIZE: u64 = 1 << 20;
const CONFIG_SIZE: u64 = 4096;

fn limits() -> Limits {
    let mut r = vec![0u64; 9];
    r[0] = BAR0_SIZE;
    r[7] = CONFIG_SIZE;
    Limits::new(r)
}

fn header(command: u16, body: usize) -> Header {
    Header {
        message_id: 1,
        command,
        message_size: (HEADER + body) as u32,
        flags: TYPE_COMMAND,
        error_no: 0,
    }
}

fn access(offset: u64, region: u32, count: u32) -> Vec<u8> {
    let mut b = offset.to_le_bytes().to_vec();
    b.extend_from_slice(&region.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    b
}

fn version(json: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 4];
    b.extend_from_slice(json);
    b
}

fn set_irqs(count: u32) -> Vec<u8> {
    [20u32, 0x24, 2, 0, count]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

fn run(command: u16, body: &[u8], nfds: usize) -> Verdict {
    check(&header(command, body.len()), body, nfds, &limits())
}

fn refused(command: u16, body: &[u8], nfds: usize) -> Reason {
    match run(command, body, nfds) {
        Verdict::Reject(r) => r,
        Verdict::Forward => panic!("command {command} with {} bytes forwarded", body.len()),
    }
}

/// One well-formed message of each command the crate implements.
fn good() -> Vec<(u16, Vec<u8>, usize)> {
    let mut write = access(0x10, 0, 4);
    write.extend_from_slice(&[1, 2, 3, 4]);
    vec![
        (VERSION, version(b"{\"capabilities\":{}}\0"), 0),
        (DMA_MAP, vec![0; 32], 1),
        (DMA_MAP, vec![0; 32], 0),
        (DMA_UNMAP, vec![0; 24], 0),
        (DEVICE_GET_INFO, vec![0; 16], 0),
        (GET_REGION_INFO, vec![0; 32], 0),
        (GET_IRQ_INFO, vec![0; 16], 0),
        (SET_IRQS, set_irqs(1), 1),
        (SET_IRQS, set_irqs(0), 0),
        (REGION_READ, access(0, 7, 4), 0),
        (REGION_READ, access(CONFIG_SIZE - 4, 7, 4), 0),
        (REGION_READ, access(0, 0, MAX_XFER), 0),
        (REGION_WRITE, write, 0),
        (DEVICE_RESET, vec![], 0),
    ]
}

#[test]
fn well_formed_messages_are_forwarded() {
    for (c, body, nfds) in good() {
        assert_eq!(run(c, &body, nfds), Verdict::Forward, "command {c}");
    }
}

#[test]
fn each_hazard_is_refused() {
    use Reason::*;
    assert_eq!(refused(VERSION, &[], 0), BadSize, "short VERSION");
    assert_eq!(refused(VERSION, &[0; 4], 0), BadVersionString);
    assert_eq!(refused(VERSION, &version(b"{}"), 0), BadVersionString);
    assert_eq!(refused(VERSION, &version(b"{}\0x\0"), 0), BadVersionString);
    assert_eq!(refused(VERSION, &version(b"\xff\0"), 0), BadVersionString);
    let long = [vec![b' '; MAX_VERSION_JSON], vec![0]].concat();
    assert_eq!(refused(VERSION, &version(&long), 0), BadVersionString);
    assert_eq!(refused(REGION_READ, &access(0, 7, u32::MAX), 0), TooLarge);
    assert_eq!(refused(REGION_READ, &access(4094, 7, 4), 0), OutOfRange);
    assert_eq!(
        refused(REGION_READ, &access(u64::MAX - 1, 7, 4), 0),
        OutOfRange
    );
    assert_eq!(refused(REGION_READ, &access(0, 99, 4), 0), NoSuchRegion);
    assert_eq!(refused(REGION_READ, &access(0, 1, 4), 0), OutOfRange);
    let mut w = access(0, 0, 8);
    w.extend_from_slice(&[0; 4]);
    assert_eq!(refused(REGION_WRITE, &w, 0), BadSize);
    assert_eq!(refused(REGION_WRITE, &access(0, 99, 0), 0), NoSuchRegion);
    assert_eq!(refused(DEVICE_GET_INFO, &[0; 20], 0), BadSize);
    assert_eq!(refused(DMA_UNMAP, &[0; 23], 0), BadSize);
    assert_eq!(refused(DEVICE_RESET, &[0; 1], 0), BadSize);
    assert_eq!(refused(99, &[0; 8], 0), Unsupported);
    assert_eq!(refused(0, &[], 0), Unsupported);
    for c in [GET_REGION_IO_FDS, DMA_READ, DMA_WRITE, USER_DIRTY_PAGES] {
        assert_eq!(refused(c, &[0; 16], 0), Unsupported);
    }
    assert_eq!(refused(SET_IRQS, &set_irqs(1), 2), BadFds);
    assert_eq!(refused(SET_IRQS, &set_irqs(1), usize::MAX), BadFds);
    // DATA_BOOL | ACTION_TRIGGER.
    let mut bool_data = set_irqs(1);
    bool_data[4..8].copy_from_slice(&0x22u32.to_le_bytes());
    assert_eq!(refused(SET_IRQS, &bool_data, 0), IrqDataBool);
    assert_eq!(refused(DMA_MAP, &[0; 32], 3), BadFds);
    assert_eq!(refused(REGION_READ, &access(0, 7, 4), 1), BadFds);
    let mut h = header(REGION_READ, 16);
    h.flags = TYPE_REPLY;
    assert_eq!(
        check(&h, &access(0, 7, 4), 0, &limits()),
        Verdict::Reject(NotACommand)
    );
    h.flags = FLAG_ERROR;
    assert_eq!(
        check(&h, &access(0, 7, 4), 0, &limits()),
        Verdict::Reject(BadFlags)
    );
    h.flags = FLAG_NO_REPLY;
    assert_eq!(
        check(&h, &access(0, 7, 4), 0, &limits()),
        Verdict::Reject(NoReplyRefused)
    );
    assert_eq!(NotACommand.errno(), libc::EINVAL);
    assert_eq!(Unsupported.errno(), libc::ENOSYS);
}

#[test]
fn headers_round_trip() {
    let h = Header {
        message_id: 0x1234,
        command: 9,
        message_size: 0xdead_beef,
        flags: 0x21,
        error_no: 22,
    };
    assert_eq!(Header::parse(&h.to_bytes()), h);
    let e = h.error_reply(libc::EINVAL);
    assert_eq!(
        (e.message_id, e.command, e.message_size, e.flags, e.error_no),
        (0x1234, 9, 16, 0x21, 22)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Arbitrary headers and bodies: never a panic, and whatever is forwarded is a command
    /// of the table at its size, with bounded accesses.
    #[test]
    fn arbitrary_input_is_judged_without_panicking(
        command in 0u16..20,
        flags in prop_oneof![Just(0u32), Just(FLAG_NO_REPLY), any::<u32>()],
        body in prop::collection::vec(any::<u8>(), 0..80),
        nfds in prop_oneof![0usize..4, Just(usize::MAX)],
    ) {
        let mut h = header(command, body.len());
        h.flags = flags;
        if check(&h, &body, nfds, &limits()) == Verdict::Forward {
            let fixed = fixed_body(command).unwrap();
            prop_assert!(flags & TYPE_MASK == TYPE_COMMAND);
            prop_assert!(body.len() >= fixed);
            if command != VERSION && command != REGION_WRITE {
                prop_assert_eq!(body.len(), fixed);
            }
            prop_assert!(nfds <= 1 || command == SET_IRQS);
            if command == SET_IRQS {
                let irq_flags = u32::from_le_bytes(body[4..8].try_into().unwrap());
                prop_assert_eq!(irq_flags & IRQ_DATA_BOOL, 0);
            }
            if command == REGION_READ || command == REGION_WRITE {
                let off = u64::from_le_bytes(body[0..8].try_into().unwrap());
                let region = u32::from_le_bytes(body[8..12].try_into().unwrap());
                let count = u32::from_le_bytes(body[12..16].try_into().unwrap());
                let size = limits().regions[region as usize];
                prop_assert!(off + u64::from(count) <= size);
            }
        }
    }

    /// Mutating one byte of a well-formed message: either still forwarded and well-formed by
    /// the same rules, or refused; never a panic.
    #[test]
    fn mutated_good_messages_never_panic(i in 0usize..14, at in 0usize..64, byte in any::<u8>()) {
        let (c, mut body, nfds) = good()[i].clone();
        if !body.is_empty() {
            let k = at % body.len();
            body[k] = byte;
        }
        let _ = run(c, &body, nfds);
    }

    /// REGION_READ of config space: forwarded exactly when inside it and within the maximum.
    #[test]
    fn config_reads_are_forwarded_exactly_in_bounds(off in 0u64..8192, count in 0u32..8192) {
        let v = run(REGION_READ, &access(off, 7, count), 0);
        let inside = off + u64::from(count) <= CONFIG_SIZE;
        prop_assert_eq!(v == Verdict::Forward, inside);
    }
}
