//! Nothing the driver writes makes the model panic: garbage command entries and mailboxes,
//! wild pointers and lengths, garbage inputs to every command, random register accesses. After
//! each case the device still answers a well-formed command.

mod common;

use common::Host;
use mlx5_prm::cmd;
use proptest::prelude::*;

/// Size of the scratch region that random pointers may point into.
const SCRATCH: usize = 4 * 4096;

/// 256 cases by default (`PROPTEST_CASES` overrides); failures are reported, not persisted.
fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The device still serves commands.
fn still_answers(host: &Host) {
    let r = host.simple::<cmd::QueryIssi>(0);
    assert_eq!((r.delivery, r.status()), (0, 0));
}

/// A pointer: anywhere, or into the scratch region (block aligned or not).
fn pointer(base: u64, choice: u8, raw: u64) -> u64 {
    match choice % 4 {
        0 => raw,
        1 => 0,
        2 => base + (raw % SCRATCH as u64) / 1024 * 1024,
        _ => base + raw % SCRATCH as u64,
    }
}

proptest! {
    #![proptest_config(config())]

    /// Random entries and mailbox contents, pointers aimed into mapped memory or anywhere.
    #[test]
    fn garbage_entries_and_mailboxes(
        entry in prop::array::uniform32(any::<u16>()),
        scratch in prop::collection::vec(any::<u8>(), SCRATCH),
        ptr_choice in any::<(u8, u8)>(),
        ptrs in any::<(u64, u64)>(),
        lens in any::<(u32, u32, u8)>(),
        vector in any::<u32>(),
        initialized in any::<bool>(),
    ) {
        let host = Host::inline();
        if initialized {
            host.bring_up();
        }
        let dma = host.dev.dma();
        let region = dma.alloc(SCRATCH, 4096).unwrap();
        // Mailbox trailers in the scratch region point around it too.
        let mut scratch = scratch;
        for (i, block) in scratch.chunks_mut(1024).enumerate() {
            let next = pointer(region.iova, block[0], u64::from(block[1]) << 10);
            block[0x230..0x238].copy_from_slice(&next.to_be_bytes());
            if block[2] % 2 == 0 {
                block[0x238..0x23c].copy_from_slice(&(i as u32 % 3).to_be_bytes());
            }
        }
        dma.write(region.iova, &scratch).unwrap();
        let mut raw = [0u8; 64];
        for (i, w) in entry.iter().enumerate() {
            raw[2 * i..2 * i + 2].copy_from_slice(&w.to_be_bytes());
        }
        let in_ptr = pointer(region.iova, ptr_choice.0, ptrs.0);
        let out_ptr = pointer(region.iova, ptr_choice.1, ptrs.1);
        raw[0x08..0x10].copy_from_slice(&in_ptr.to_be_bytes());
        raw[0x30..0x38].copy_from_slice(&out_ptr.to_be_bytes());
        // Mostly sane lengths and the right type and ownership, sometimes anything.
        if lens.2 % 4 != 0 {
            raw[0x04..0x08].copy_from_slice(&(lens.0 % 0x2000).to_be_bytes());
            raw[0x38..0x3c].copy_from_slice(&(lens.1 % 0x2000).to_be_bytes());
            raw[0] = 7;
            raw[0x3f] |= 1;
        }
        for slot in 0..32u64 {
            dma.write(host.cmdq.iova + slot * 64, &raw).unwrap();
        }
        host.dev.write32(0x18, vector);
        dma.write(host.cmdq.iova, &[0u8; 64]).unwrap();
        still_answers(&host);
    }

    /// Well-delivered commands of every implemented opcode with garbage inputs, several in a
    /// row on an initialized device, so that handlers see each other's garbage objects.
    #[test]
    fn garbage_inputs_to_every_command(
        commands in prop::collection::vec(
            (any::<prop::sample::Index>(), any::<u16>(), prop::collection::vec(any::<u8>(), 0..0x1100), 0usize..0x1100),
            1..6,
        ),
    ) {
        let host = Host::inline();
        host.bring_up();
        let uar = host.alloc_uar();
        host.alloc_pd();
        host.create_eq(3, u64::MAX, uar, 0);
        let opcodes: Vec<u16> = mlx5_sim::supported_opcodes().collect();
        for (pick, op_mod, mut input, out_len) in commands {
            let opcode = opcodes[pick.index(opcodes.len())];
            input.resize(input.len().max(16), 0);
            input[..2].copy_from_slice(&opcode.to_be_bytes());
            input[2..4].fill(0);
            input[6..8].copy_from_slice(&(op_mod % 4).to_be_bytes());
            let r = host.exec(&input, out_len);
            prop_assert_eq!(r.delivery, 0);
        }
        host.dev.request_pages(1);
        host.dev.raise_port_change(1, true);
        still_answers(&host);
    }

    /// Random BAR accesses: any offset, any value, 32 and 64 bits.
    #[test]
    fn random_register_accesses(
        accesses in prop::collection::vec((any::<u8>(), any::<usize>(), any::<u64>()), 1..64),
    ) {
        let host = Host::inline();
        host.bring_up();
        host.alloc_uar();
        for (kind, offset, value) in accesses {
            let offset = match kind % 3 {
                0 => offset,
                1 => offset % mlx5_sim::Device::BAR_SIZE,
                _ => (8 * 4096 + offset % 4096) & !3,
            };
            // Leave the command queue address and doorbell alone: they are exercised above.
            if (0x10..0x1c).contains(&offset) {
                continue;
            }
            match kind % 4 {
                0 => { host.dev.read32(offset); }
                1 | 2 => host.dev.write32(offset, value as u32),
                _ => host.dev.write64(offset, value),
            }
        }
        still_answers(&host);
    }
}
