//! Drives one `mlx5_sim::Device` with a program decoded from arbitrary bytes, as an untrusted
//! guest would: BAR reads and writes of every size at any offset, arbitrary guest memory
//! (commands, mailboxes, contexts, WQEs, rings, doorbell records, pointers into guest RAM or
//! anywhere), well-delivered commands with arbitrary inputs, raw doorbells, frames, events,
//! external PPS pulses, unmapping and remapping guest RAM, bus mastering off and on, and
//! reset. ACCESS_REGISTER usually names a register of the spec's list (`reg::ALL`), sized for
//! its image and often with plausible index fields, so every register handler is reached, not
//! only by chance (`sim/tests/fuzz_registers.rs` holds it to that). Shared by the cargo-fuzz
//! target (`sim/fuzz`) and the bounded property test (`sim/tests/fuzz_device.rs`).
//!
//! What is checked: nothing panics (a panic is the failure), the device still serves a
//! well-formed command afterwards, and the model never wrote outside guest RAM (guard areas on
//! both sides of it keep their canary bytes). Time and memory are bounded by the fuzzer
//! (`-timeout`, `-rss_limit_mb`) and by the property test's case count.

#![allow(dead_code)]

use mlx5_prm::rt::{Command, View};
use mlx5_prm::{cmd, reg};
use mlx5_prm::{
    AccessRegisterIn, CmdQueueEntry, McamReg, MciaReg, MnvdaReg, MnvqcReg, MtppsReg, MtppseReg,
    PaosReg, PcamReg, PddrReg, PfccReg, PmlpReg, PmtuReg, PpcntReg, PplmReg, PtysReg, QcamReg,
};
use mlx5_sim::{Config, Device, DmaBacking, Timeouts};
use std::sync::Arc;

#[path = "../support/command.rs"]
mod command;
#[path = "../support/guest_ram.rs"]
mod guest_ram;

use command::CommandArea;
use guest_ram::{GuestRam as Ram, RAM};

/// Where guest RAM is mapped.
pub const BASE: u64 = 0x10_0000;
/// The harness's own command queue and mailboxes in guest RAM (the program may overwrite them
/// like any other memory).
const CMDQ: u64 = BASE;
const AREA: CommandArea = CommandArea {
    cmdq: CMDQ,
    in_boxes: BASE + 0x1000,
    out_boxes: BASE + 0x5000,
    boxes: 16,
};
/// Pages the bring-up gives, from here.
const PAGES: u64 = BASE + 0x1_0000;
/// Most ops one program runs.
const MAX_OPS: usize = 256;

/// Reads the program.
struct Cursor<'a> {
    data: &'a [u8],
}

impl Cursor<'_> {
    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }
    fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) << 8 | u16::from(self.u8())
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) << 16 | u32::from(self.u16())
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) << 32 | u64::from(self.u32())
    }
    fn done(&self) -> bool {
        self.data.is_empty()
    }
    /// An IOVA: a page of guest RAM, any byte of it, anything, or 0.
    fn pointer(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => BASE + ((u64::from(self.u32()) % RAM as u64) & !0xfff),
            1 => BASE + u64::from(self.u32()) % RAM as u64,
            2 => self.u64(),
            _ => 0,
        }
    }
    /// A value a handle field plausibly holds: the first handles of each kind, or anything.
    fn handle(&mut self) -> u32 {
        const FIRST: [u32; 13] = [
            0, 1, 8, 0x11, 0x21, 0x401, 0x801, 0xc02, 0x1001, 0x1401, 0x1801, 0x1c01, 0x2001,
        ];
        match self.u8() {
            k if (k as usize) < FIRST.len() * 16 => {
                FIRST[k as usize % FIRST.len()] + u32::from(k / 64)
            }
            _ => self.u32(),
        }
    }
}

// This thread's guest RAM, reused by every program the thread runs (cleared in between).
thread_local! {
    static RAM_OF_THREAD: Ram = Ram::new();
}

/// One device over guest RAM.
pub struct Rig<'r> {
    pub dev: Arc<Device>,
    ram: &'r Ram,
    token: u8,
}

impl Drop for Rig<'_> {
    fn drop(&mut self) {
        let _ = self.dev.unmap_all_dma();
    }
}

impl<'r> Rig<'r> {
    fn new(ram: &'r Ram) -> Rig<'r> {
        let dev = Device::new(Config {
            dma: DmaBacking::External,
            boot_pages: 2,
            init_pages: 2,
            regular_pages: 4,
            // Firmware that reports its timeouts has the DTOR register too.
            timeouts: Some(Timeouts::default()),
            ..Config::default()
        });
        ram.clear();
        // SAFETY: `ram` outlives the Rig, which unmaps it when dropped.
        unsafe { dev.map_dma(BASE, ram.mapped(), RAM) }.unwrap();
        let rig = Rig { dev, ram, token: 0 };
        rig.program_cmdq();
        rig
    }

    fn program_cmdq(&self) {
        self.dev.write32(0x10, (CMDQ >> 32) as u32);
        self.dev.write32(0x14, CMDQ as u32);
    }

    fn write(&self, iova: u64, data: &[u8]) {
        let _ = self.dev.dma().write(iova, data);
    }

    /// Posts `input` in slot 0 with mailboxes as needed, rings, returns (delivery, status).
    pub fn command(&mut self, input: &[u8], out_len: usize) -> Option<(u8, u8)> {
        self.token = self.token.wrapping_add(1).max(1);
        let token = self.token;
        AREA.post(input, out_len, token, |at, b| self.write(at, b));
        self.dev.write32(0x18, 1);
        let mut back = [0u8; 64];
        self.dev.dma().read(CMDQ, &mut back).ok()?;
        let e = CmdQueueEntry::new_unchecked(&back[..]);
        (!e.ownership()).then(|| (e.status_raw(), e.command_output_inline_data()[0]))
    }

    /// The standard bring-up: ENABLE_HCA, SET_ISSI, pages, INIT_HCA, a UAR and a PD.
    fn bring_up(&mut self) {
        let simple = |opcode: u16, op_mod: u16| {
            let mut b = vec![0u8; 16];
            b[..2].copy_from_slice(&opcode.to_be_bytes());
            b[6..8].copy_from_slice(&op_mod.to_be_bytes());
            b
        };
        self.command(&simple(cmd::EnableHca::OPCODE, 0), 16);
        let mut issi = simple(cmd::SetIssi::OPCODE, 0);
        issi.resize(16 + 8, 0);
        issi[8..12].copy_from_slice(&1u32.to_be_bytes());
        self.command(&issi, 16);
        for (op_mod, first) in [(1u16, 0u64), (1, 2)] {
            let mut give = simple(cmd::ManagePages::OPCODE, op_mod);
            give.resize(16 + 2 * 8, 0);
            give[12..16].copy_from_slice(&2u32.to_be_bytes());
            for k in 0..2u64 {
                let p = PAGES + (first + k) * 4096;
                give[16 + 8 * k as usize..24 + 8 * k as usize].copy_from_slice(&p.to_be_bytes());
            }
            self.command(&give, 16);
        }
        self.command(&simple(cmd::InitHca::OPCODE, 0), 16);
        self.command(&simple(cmd::AllocUar::OPCODE, 0), 16);
        self.command(&simple(cmd::AllocPd::OPCODE, 0), 16);
    }

    /// Runs the program in `data`.
    pub fn run(&mut self, data: &[u8]) {
        let opcodes: Vec<u16> = mlx5_sim::supported_opcodes().collect();
        let mut c = Cursor { data };
        if c.u8() % 2 == 0 {
            self.bring_up();
        }
        for _ in 0..MAX_OPS {
            if c.done() {
                break;
            }
            match c.u8() % 16 {
                0 | 1 => {
                    let at = BASE + u64::from(c.u32()) % RAM as u64;
                    let n = usize::from(c.u8());
                    let bytes = c.bytes(n).to_vec();
                    self.write(at, &bytes);
                }
                2 => {
                    let at = BASE + ((u64::from(c.u32()) % RAM as u64) & !7);
                    let p = c.pointer();
                    self.write(at, &p.to_be_bytes());
                }
                3 => {
                    let at = BASE + ((u64::from(c.u32()) % RAM as u64) & !3);
                    let h = c.handle();
                    self.write(at, &h.to_be_bytes());
                }
                4 | 5 => {
                    let (size, offset, value) = (self.size(&mut c), self.offset(&mut c), c.u64());
                    self.dev.bar_write(offset, size, value);
                }
                6 => {
                    let (size, offset) = (self.size(&mut c), self.offset(&mut c));
                    self.dev.bar_read(offset, size);
                }
                7..=9 => {
                    let opcode = opcodes[usize::from(c.u8()) % opcodes.len()];
                    // ACCESS_REGISTER names its register by a 16-bit id; a random one hardly
                    // ever names one the model has, so 3 times in 4 it comes from the spec.
                    if opcode == cmd::AccessRegister::OPCODE && c.u8() % 4 != 0 {
                        let (input, out_len) = register_command(&mut c);
                        self.command(&input, out_len);
                        continue;
                    }
                    let op_mod = u16::from(c.u8() % 4);
                    let len = 16 + usize::from(c.u16()) % (AREA.max_len() - 16);
                    let out_len = 16 + usize::from(c.u16()) % (AREA.max_len() - 16);
                    let mut input = c.bytes(len).to_vec();
                    input.resize(len, 0);
                    input[..2].copy_from_slice(&opcode.to_be_bytes());
                    input[2..4].fill(0);
                    input[6..8].copy_from_slice(&op_mod.to_be_bytes());
                    for _ in 0..c.u8() % 6 {
                        let at = 8 + usize::from(c.u16()) % (len - 8) / 4 * 4;
                        if c.u8() % 2 == 0 && at + 8 <= len {
                            input[at..at + 8].copy_from_slice(&c.pointer().to_be_bytes());
                        } else if at + 4 <= len {
                            input[at..at + 4].copy_from_slice(&c.handle().to_be_bytes());
                        }
                    }
                    self.command(&input, out_len);
                }
                10 => self.dev.write32(0x18, c.u32()),
                11 => {
                    let n = usize::from(c.u8()) * 8;
                    let frame = c.bytes(n).to_vec();
                    self.dev.receive_frame(&frame);
                }
                12 => {
                    let offset = self.offset(&mut c);
                    let words: Vec<u64> = (0..c.u8() % 40).map(|_| c.u64()).collect();
                    self.dev.write_block(offset, &words);
                }
                13 => match c.u8() % 5 {
                    0 => self.dev.request_pages(i32::from(c.u8() as i8)),
                    1 => self.dev.raise_port_change(c.u8() % 3, c.u8() % 2 == 0),
                    2 => self.dev.loopback(c.u8() % 2 == 0),
                    // An external pulse on a pin (one the device lacks now and then), as the
                    // guest left it configured through MTPPS and MTPPSE.
                    3 => {
                        self.dev.pps_pulse(c.u8() % 4);
                    }
                    _ => self.dev.tick(),
                },
                14 => {
                    // Guest RAM goes away under the device and comes back (a DMA_UNMAP and a
                    // new DMA_MAP): accesses in between fault.
                    let _ = self.dev.unmap_all_dma();
                    if c.u8() % 2 == 0 {
                        self.dev.write32(0x18, 1);
                        self.dev.tick();
                    }
                    // SAFETY: as in `new`.
                    unsafe { self.dev.map_dma(BASE, self.ram.mapped(), RAM) }.unwrap();
                }
                _ => match c.u8() % 8 {
                    0 => {
                        self.dev.reset();
                        self.program_cmdq();
                    }
                    // The host's command register: while bus mastering is off the device
                    // holds what BAR writes ask for; on again, it serves it all at once.
                    1 => self.dev.set_bus_master(false),
                    2 => self.dev.set_bus_master(true),
                    _ => {}
                },
            }
        }
    }

    fn size(&self, c: &mut Cursor<'_>) -> usize {
        [1, 2, 4, 8, 4, 8, 3, 16][usize::from(c.u8() % 8)]
    }

    fn offset(&self, c: &mut Cursor<'_>) -> usize {
        match c.u8() % 4 {
            // The initialization segment, leaving the command queue address alone more often
            // than not (the program rewrites it with op 4 anyway).
            0 => usize::from(c.u16()) % 0x4010,
            // A UAR page ALLOC_UAR hands out early, at any offset.
            1 => (8 + usize::from(c.u8() % 4)) * 4096 + usize::from(c.u16()) % 4096,
            // Its doorbells exactly.
            2 => {
                (8 + usize::from(c.u8() % 4)) * 4096
                    + [0x20, 0x24, 0x40, 0x48, 0x800, 0x900][usize::from(c.u8() % 6)]
            }
            _ => c.u32() as usize,
        }
    }

    /// The device still serves a well-formed command, and never wrote outside guest RAM.
    pub fn check(&mut self) {
        assert!(
            self.ram.guards_intact(),
            "the device wrote outside guest RAM"
        );
        self.dev.set_bus_master(true);
        let _ = self.dev.unmap_all_dma();
        // SAFETY: as in `new`.
        unsafe { self.dev.map_dma(BASE, self.ram.mapped(), RAM) }.unwrap();
        self.program_cmdq();
        let mut issi = vec![0u8; 16];
        issi[..2].copy_from_slice(&cmd::QueryIssi::OPCODE.to_be_bytes());
        let r = self.command(&issi, 0x70);
        assert_eq!(r, Some((0, 0)), "QUERY_ISSI after the program");
    }
}

/// An ACCESS_REGISTER of a register the spec lists (`reg::ALL`): its id and op_mod set with
/// the generated accessors, input and output sized for its image, the image the program's
/// bytes, and half the time the index fields set to values that name something on the model
/// (port 1, module 0 at I2C 0x50, pin 0, a configuration item it has).
fn register_command(c: &mut Cursor<'_>) -> (Vec<u8>, usize) {
    let info = &reg::ALL[usize::from(c.u8()) % reg::ALL.len()];
    // Writes to registers that may be written, reads otherwise; now and then the direction
    // the register does not allow.
    let write = match c.u8() % 8 {
        0 => !info.access.writable(),
        k => info.access.writable() && (!info.access.readable() || k % 2 == 0),
    };
    let head = AccessRegisterIn::<&[u8]>::SIZE;
    let mut input = vec![0u8; head + info.size];
    let image = c.bytes(info.size);
    input[head..head + image.len()].copy_from_slice(image);
    {
        let mut r = AccessRegisterIn::new_unchecked(&mut input[..]);
        r.set_opcode(cmd::AccessRegister::OPCODE);
        r.set_op_mod(u16::from(!write));
        r.set_register_id(info.id);
        r.set_argument(0);
    }
    if c.u8() % 2 == 0 {
        plausible_index(info.id, &mut input[head..], c);
    }
    (input, head + info.size)
}

/// Sets the index fields of register `id`'s `image` to values the model answers for.
fn plausible_index(id: u16, image: &mut [u8], c: &mut Cursor<'_>) {
    use mlx5_prm::AccessRegisterId as R;
    let Some(reg) = R::from_raw(id.into()) else {
        return;
    };
    match reg {
        R::Paos => PaosReg::new_unchecked(image).set_local_port(1),
        R::Ptys => PtysReg::new_unchecked(image).set_local_port(1),
        R::Pmtu => PmtuReg::new_unchecked(image).set_local_port(1),
        R::Pplm => PplmReg::new_unchecked(image).set_local_port(1),
        R::Pfcc => PfccReg::new_unchecked(image).set_local_port(1),
        R::Pmlp => PmlpReg::new_unchecked(image).set_local_port(1),
        R::Pddr => PddrReg::new_unchecked(image).set_local_port(1),
        R::Ppcnt => {
            let mut r = PpcntReg::new_unchecked(image);
            r.set_local_port(1);
            let groups = mlx5_prm::PpcntCounterGroup::ALL;
            r.set_grp(groups[usize::from(c.u8()) % groups.len()]);
        }
        R::Mcia => {
            let mut r = MciaReg::new_unchecked(image);
            r.set_module(0);
            r.set_i2c_device_address(0x50);
            r.set_page_number(c.u8() % 4);
            r.set_device_address(u16::from(c.u8()) % 208);
            r.set_size(u16::from(c.u8() % 49));
        }
        R::Mtpps => MtppsReg::new_unchecked(image).set_pin(0),
        R::Mtppse => MtppseReg::new_unchecked(image).set_pin(0),
        R::Pcam => PcamReg::new_unchecked(image).set_feature_group(0),
        R::Mcam => McamReg::new_unchecked(image).set_feature_group(0),
        R::Qcam => QcamReg::new_unchecked(image).set_feature_group(0),
        R::Mnvda | R::Mnvqc => {
            // A configuration item the model has (the type words of Linux's nv_param.c),
            // with its data length for MNVDA.
            const ITEMS: [(u32, u16); 6] = [
                (0x80, 0xc),
                (0x81, 0x10),
                (0x10a, 0x8),
                (0x10b, 0x4),
                (0x11d, 0x8),
                (0x0300_0080, 0x10),
            ];
            let (word, length) = ITEMS[usize::from(c.u8()) % ITEMS.len()];
            if reg == R::Mnvqc {
                MnvqcReg::new_unchecked(image).set_type(word);
            } else {
                let mut r = MnvdaReg::new_unchecked(image);
                r.set_type(word);
                r.set_length(length);
                r.set_access_mode_raw(c.u8() % 3);
            }
        }
        _ => {}
    }
}

/// Runs one program and checks the device afterwards.
pub fn run(data: &[u8]) {
    run_observed(data, None);
}

/// [`run`] with `observer` seeing every command the device serves.
pub fn run_observed(data: &[u8], observer: Option<mlx5_sim::CommandObserver>) {
    RAM_OF_THREAD.with(|ram| {
        let mut rig = Rig::new(ram);
        rig.dev.set_command_observer(observer);
        rig.run(data);
        rig.check();
    });
}
