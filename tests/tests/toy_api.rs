//! The generated API on the toy spec (generated from `build.rs`): unions with selectors,
//! fixed arrays, byte fields, op_mod enums, constants and a register block driven through
//! 32-bit register accesses.

use mlx5_prm::rt::{Command, Mmio32, MmioBytes, RegisterFile, UnknownValue};
use prm_tests::toy::cmd::{QueryToyCap, QueryToyCapOpMod};
use prm_tests::toy::*;

#[test]
fn unions_select_the_member_the_selector_names() {
    let mut input = [0u8; 0x10];
    let input = QueryToyCap::input(&mut input[..], QueryToyCapOpMod::Cur).unwrap();
    assert_eq!(input.op_mod(), 1);

    let mut out = QueryToyCapOut::zeroed();
    out.capability_mut().port_mut().set_speed(ToySpeed::Qdr);
    out.capability_mut().port_mut().set_up(true);

    // op_mod 1: bit 0 = current, bits 15..1 = page 0 (general).
    match out.capability().select_by(&input).unwrap() {
        // The same bytes read as the general page: the port's `up` bit (0x00[0]) is the low
        // bit of `log_max_qp` (0x00[4:0]).
        ToyCapUnionRef::General(g) => assert_eq!(g.log_max_qp(), 1),
        ToyCapUnionRef::Port(_) => panic!("op_mod 1 selects the general page"),
    }
    // op_mod 2 or 3: page 1 (port).
    match out.capability().select(3).unwrap() {
        ToyCapUnionRef::Port(p) => {
            assert_eq!(p.speed(), Ok(ToySpeed::Qdr));
            assert!(p.up());
        }
        ToyCapUnionRef::General(_) => panic!("op_mod 3 selects the port page"),
    }
    assert_eq!(
        out.capability().select(4).err(),
        Some(UnknownValue {
            enumeration: "toy_cap_union",
            raw: 4
        })
    );
}

#[test]
fn fixed_arrays_by_index_and_iterator() {
    let mut p = ToyPort::zeroed();
    assert_eq!(p.counters_len(), 4);
    p.set_counters(3, 0xdead_beef).unwrap();
    p.set_lanes(7, 0xf).unwrap();
    assert!(p.set_counters(4, 1).is_err());
    assert_eq!(p.counters(3), Some(0xdead_beef));
    assert_eq!(p.counters(4), None);
    assert_eq!(
        p.counters_iter().collect::<Vec<_>>(),
        [0, 0, 0, 0xdead_beef]
    );
    assert_eq!(
        p.lanes_iter().collect::<Vec<_>>(),
        [0, 0, 0, 0, 0, 0, 0, 0xf]
    );
    // lanes: eight 4-bit elements in dword 0x14; element 7 is its low nibble.
    assert_eq!(p.storage()[0x17], 0x0f);
}

#[test]
fn byte_fields_are_copied() {
    let mut g = ToyGeneralCap::zeroed();
    g.set_mac(&[0x02, 0x00, 0x5e, 0x10, 0x20, 0x30]);
    assert_eq!(g.mac(), [0x02, 0x00, 0x5e, 0x10, 0x20, 0x30]);
    assert_eq!(
        &g.storage()[0x12..0x18],
        &[0x02, 0x00, 0x5e, 0x10, 0x20, 0x30]
    );
    assert_eq!(TOY_PAGE_SIZE, 0x1000);
}

/// Records every register access, to prove a register block uses only 32-bit accesses.
#[derive(Default)]
struct Recorder {
    regs: RegisterFile<4>,
    log: std::cell::RefCell<Vec<(char, usize, u32)>>,
}

impl Mmio32 for Recorder {
    fn read32(&self, offset: usize) -> u32 {
        let v = self.regs.read32(offset);
        self.log.borrow_mut().push(('r', offset, v));
        v
    }
    fn write32(&self, offset: usize, value: u32) {
        self.log.borrow_mut().push(('w', offset, value));
        self.regs.write32(offset, value)
    }
}

#[test]
fn register_blocks_use_dword_accesses_only() {
    let dev = Recorder::default();
    dev.regs.write32(0x00, 0x0010_0005); // fw 5.16
    dev.regs.write32(0x0c, 0x8000_0000); // initializing
    let mut seg = ToyInitSeg::new_checked(MmioBytes::new(&dev, ToyInitSeg::SIZE)).unwrap();
    assert_eq!((seg.fw_rev_major(), seg.fw_rev_minor()), (5, 0x10));
    assert!(seg.initializing());
    seg.set_doorbell(1 << 3);
    let log = dev.log.borrow();
    // The write-only doorbell is written whole, never read.
    assert_eq!(log.last(), Some(&('w', 0x08, 8)));
    assert!(!log.iter().any(|&(k, off, _)| k == 'r' && off == 0x08));
    assert!(log.iter().all(|&(_, off, _)| off % 4 == 0));
}

#[test]
fn state_machines_are_tables_of_transitions() {
    let sm = TOY_LINK_STATE_MACHINE;
    let up = sm.between(ToyLinkState::Down, ToyLinkState::Up).unwrap();
    assert_eq!(
        (up.name, up.command, up.opcode),
        ("bring_up", "toy_link_up", 0x200)
    );
    assert_eq!(up.requires[0].path, "port.up");
    // port at 0x10 (bit 0x80); up is 0x00[0] of it: bit 31 after that.
    assert_eq!(
        (up.requires[0].bit_offset, up.requires[0].width),
        (0x80 + 31, 1)
    );
    assert_eq!(up.allowed_mask(), TOY_LINK_OPT_SPEED | TOY_LINK_OPT_LANES);
    assert_eq!(sm.mask_field.unwrap().bit_offset, 0x40);
    // `reset` starts anywhere; `take_down` only from up or error, and is preferred there.
    assert_eq!(
        sm.between(ToyLinkState::Up, ToyLinkState::Down)
            .unwrap()
            .name,
        "take_down"
    );
    assert_eq!(
        sm.between(ToyLinkState::Down, ToyLinkState::Down)
            .unwrap()
            .name,
        "reset"
    );
    assert!(sm.between(ToyLinkState::Up, ToyLinkState::Error).is_none());
    assert_eq!(sm.by_opcode(0x202).unwrap().name, "reset");
}

#[test]
fn a_register_word_of_the_toy_spec_has_a_builder() {
    let regs = RegisterFile::<4>::default();
    let mut seg = ToyInitSeg::new_checked(MmioBytes::new(&regs, 0x10)).unwrap();
    seg.write_ring_with(|w| w.doorbell(1 << 3));
    assert_eq!(regs.read32(0x08), 8);
    assert_eq!(ToyInitSegRingWord::new().doorbell(5).bits(), 5);
}

/// A handle for the toy link's typestate that keeps the input it was last sent.
struct Link<S> {
    sent: Vec<u8>,
    state: std::marker::PhantomData<S>,
}

impl<S: mlx5_prm::rt::typestate::State<Machine = toy_link_machine::Machine>>
    mlx5_prm::rt::typestate::Handle for Link<S>
{
    type Machine = toy_link_machine::Machine;
    type State = S;
    type Next<T: mlx5_prm::rt::typestate::State<Machine = Self::Machine>> = Link<T>;
    type Error = mlx5_prm::rt::Overflow;

    fn apply<T: mlx5_prm::rt::typestate::Transition<S>>(
        self,
        args: T,
    ) -> Result<Link<T::To>, Self::Error> {
        let mut buf = vec![0u8; 0x30];
        {
            let mut input = T::Command::input(&mut buf[..], T::OP_MOD).unwrap();
            args.write((), &mut input)?;
        }
        Ok(Link {
            sent: buf,
            state: std::marker::PhantomData,
        })
    }
}

#[test]
fn the_toy_link_typestate_writes_arrays_and_masks() {
    use toy_link_machine::{BringUp, BringUpOptional, Down, Transitions as _, Up};
    let link: Link<Down> = Link {
        sent: Vec::new(),
        state: std::marker::PhantomData,
    };
    let up: Link<Up> = link
        .bring_up(BringUp {
            up: true,
            optional: BringUpOptional {
                lanes: Some([1, 2, 3, 4, 5, 6, 7, 8]),
                ..Default::default()
            },
        })
        .unwrap();
    let input = ToyModifyIn::new_checked(&up.sent[..]).unwrap();
    assert!(input.port().up());
    assert_eq!(
        input.port().lanes_iter().collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6, 7, 8]
    );
    // Only the lanes' mask bit: speed was not given.
    assert_eq!(input.opt_mask(), 0x2);
    // A lane value too wide for its 4 bits is refused.
    let link: Link<Down> = Link {
        sent: Vec::new(),
        state: std::marker::PhantomData,
    };
    let err = link
        .bring_up(BringUp {
            up: true,
            optional: BringUpOptional {
                lanes: Some([16, 0, 0, 0, 0, 0, 0, 0]),
                ..Default::default()
            },
        })
        .err()
        .expect("refused");
    assert_eq!(err.field, "lanes");
    // From `up` and `error` the link goes down; `reset` works from any state.
    let down: Link<Down> = up.take_down().unwrap();
    let _: Link<Down> = down.reset().unwrap();
}
