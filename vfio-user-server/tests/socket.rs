//! Drives the server binary's socket directly, as an untrusted client would: first a client
//! that behaves (the vfio_user crate's own), then raw messages that do not, then a client
//! again — the server must answer every bad message with an error (or end that session) and
//! serve the next connection with a fresh device.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vfio_user::Client;

const CONFIG: u32 = 7;
const BAR0: u32 = 0;

struct Server {
    child: Child,
    dir: PathBuf,
}

impl Server {
    fn start(name: &str) -> Server {
        let dir =
            std::env::temp_dir().join(format!("mlx5-vfio-user-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_mlx5-vfio-user"))
            .arg("--socket")
            .arg(dir.join("s"))
            .arg("--control")
            .arg(dir.join("c"))
            .arg("--trace")
            .arg(dir.join("t"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Server { child, dir };
        let t = Instant::now();
        while !(s.sock().exists() && s.ctl().exists()) {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    fn sock(&self) -> PathBuf {
        self.dir.join("s")
    }

    fn ctl(&self) -> PathBuf {
        self.dir.join("c")
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// One control command, its JSON answer.
    fn control(&self, cmd: &str) -> serde_json::Value {
        let mut s = UnixStream::connect(self.ctl()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        writeln!(s, "{cmd}").unwrap();
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while s.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
            line.push(b[0]);
        }
        serde_json::from_slice(&line).unwrap()
    }

    /// Waits until the server serves session `n` (a fresh device after the last client).
    fn wait_session(&self, n: u64) {
        let t = Instant::now();
        while self.control("status")["session"].as_u64() < Some(n) {
            assert!(t.elapsed() < Duration::from_secs(10), "no session {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn memfd(len: u64) -> OwnedFd {
    // SAFETY: memfd_create with a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::memfd_create(c"guest-ram".as_ptr(), 0) };
    assert!(fd >= 0);
    // SAFETY: fresh descriptor, ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate on our descriptor.
    assert_eq!(
        unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) },
        0
    );
    fd
}

fn eventfd() -> OwnedFd {
    // SAFETY: eventfd's result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
    assert!(fd >= 0);
    // SAFETY: fresh descriptor, ours.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn read32(c: &mut Client, region: u32, off: u64) -> u32 {
    let mut b = [0u8; 4];
    c.region_read(region, off, &mut b).unwrap();
    u32::from_le_bytes(b)
}

/// The behaving client: identity, BAR 0's initialization segment, guest memory, interrupts.
fn probe(sock: &Path) {
    let mut c = Client::new(sock).unwrap();
    assert_eq!(read32(&mut c, CONFIG, 0), 0x1017_15b3);
    assert_eq!(read32(&mut c, CONFIG, 8) >> 8, 0x02_0000);
    // cmdif_rev 5 in the big-endian register at 0x04 (bytes in BAR order).
    let mut b = [0u8; 4];
    c.region_read(BAR0, 4, &mut b).unwrap();
    assert_eq!(u32::from_be_bytes(b) >> 16, 5);
    // A 1-byte read of the same register: its most significant byte.
    let mut one = [0u8; 1];
    c.region_read(BAR0, 4, &mut one).unwrap();
    assert_eq!(one[0], b[0]);
    let ram = memfd(2 << 20);
    c.dma_map(0, 0x10_0000, 2 << 20, ram.as_raw_fd()).unwrap();
    let ev = eventfd();
    c.set_irqs(2, 0x20 | 0x4, 0, 1, &[ev.as_raw_fd()]).unwrap(); // EVENTFD | TRIGGER
    c.dma_unmap(0x10_0000, 2 << 20).unwrap();
    c.reset().unwrap();
    assert_eq!(read32(&mut c, CONFIG, 0), 0x1017_15b3);
}

/// A raw vfio-user client: frames messages itself, so it can send what the crate never would.
struct Raw {
    s: UnixStream,
    id: u16,
}

impl Raw {
    fn connect(sock: &Path) -> Raw {
        let s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { s, id: 0 }
    }

    fn header(&mut self, command: u16, size: u32) -> Vec<u8> {
        self.id = self.id.wrapping_add(1);
        let mut h = Vec::new();
        h.extend_from_slice(&self.id.to_le_bytes());
        h.extend_from_slice(&command.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes()); // flags: command
        h.extend_from_slice(&0u32.to_le_bytes());
        h
    }

    /// Sends `body` as command `command`, returns (error flag, errno, payload).
    fn call(&mut self, command: u16, body: &[u8]) -> (bool, u32, Vec<u8>) {
        let mut m = self.header(command, 16 + body.len() as u32);
        m.extend_from_slice(body);
        self.s.write_all(&m).unwrap();
        self.reply()
    }

    fn call_fd(&mut self, command: u16, body: &[u8], fd: i32) -> (bool, u32, Vec<u8>) {
        use vmm_sys_util_shim::send_with_fd;
        let mut m = self.header(command, 16 + body.len() as u32);
        m.extend_from_slice(body);
        send_with_fd(&self.s, &m, fd);
        self.reply()
    }

    fn reply(&mut self) -> (bool, u32, Vec<u8>) {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).unwrap();
        let size = u32::from_le_bytes(h[4..8].try_into().unwrap()) as usize;
        let flags = u32::from_le_bytes(h[8..12].try_into().unwrap());
        let errno = u32::from_le_bytes(h[12..16].try_into().unwrap());
        let mut rest = vec![0u8; size.saturating_sub(16)];
        self.s.read_exact(&mut rest).unwrap();
        (flags & (1 << 5) != 0, errno, rest)
    }

    fn version(&mut self) {
        let mut body = vec![0u8; 4];
        body.extend_from_slice(b"{\"capabilities\":{}}\0");
        let (error, _, _) = self.call(1, &body);
        assert!(!error);
    }
}

/// sendmsg with one SCM_RIGHTS descriptor.
mod vmm_sys_util_shim {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    pub fn send_with_fd(s: &UnixStream, data: &[u8], fd: i32) {
        // SAFETY: a plain sendmsg with one iovec and a control buffer sized for one fd.
        unsafe {
            let mut iov = libc::iovec {
                iov_base: data.as_ptr() as *mut libc::c_void,
                iov_len: data.len(),
            };
            let space = libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as usize;
            let mut cbuf = vec![0u8; space];
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = space;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>(), fd);
            let n = libc::sendmsg(s.as_raw_fd(), &msg, 0);
            assert_eq!(n as usize, data.len());
        }
    }
}

fn region_access(offset: u64, region: u32, count: u32) -> Vec<u8> {
    let mut b = offset.to_le_bytes().to_vec();
    b.extend_from_slice(&region.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    b
}

fn dma_map_body(flags: u32, offset: u64, address: u64, size: u64) -> Vec<u8> {
    let mut b = 32u32.to_le_bytes().to_vec();
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b.extend_from_slice(&address.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b
}

fn set_irqs_body(flags: u32, index: u32, start: u32, count: u32) -> Vec<u8> {
    [20u32, flags, index, start, count]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

#[test]
fn a_behaving_client_probes_the_function() {
    let s = Server::start("probe");
    probe(&s.sock());
    let st = s.control("status");
    assert_eq!(st["ok"], true);
    assert_eq!(st["pages_held"], 0);
    assert_eq!(st["objects_total"], 0);
}

#[test]
fn bad_traffic_gets_errors_and_never_takes_the_server_down() {
    let mut s = Server::start("bad");
    let mut session = 1;

    // Malformed VERSION messages: the protocol crate gives up on them (some by panicking);
    // only that session ends.
    for body in [vec![0u8; 4], b"\0\0\0\0not json, no nul".to_vec(), vec![]] {
        let mut r = Raw::connect(&s.sock());
        let m = {
            let mut m = r.header(1, 16 + body.len() as u32);
            m.extend_from_slice(&body);
            m
        };
        r.s.write_all(&m).unwrap();
        drop(r);
        session += 1;
        s.wait_session(session);
        assert!(s.alive());
    }

    let mut r = Raw::connect(&s.sock());
    r.version();
    // Regions that do not exist, sizes BARs do not take, ranges past the end.
    assert!(r.call(9, &region_access(0, 99, 4)).0);
    assert!(
        r.call(9, &region_access(0, 1, 4)).0,
        "BAR 1 is the upper half of BAR 0"
    );
    assert!(r.call(9, &region_access(0, BAR0, 3)).0);
    assert!(r.call(9, &region_access(0, BAR0, 64 << 20)).0);
    assert!(r.call(9, &region_access(4094, CONFIG, 4)).0);
    assert!(r.call(9, &region_access(u64::MAX - 1, CONFIG, 4)).0);
    // Past BAR 0's end: all ones, counted.
    let (e, _, data) = r.call(9, &region_access(u64::MAX - 7, BAR0, 8));
    assert!(!e);
    assert_eq!(&data[16..], &[0xff; 8]);
    // Writes anywhere in BAR 0 are taken (or dropped), never fatal.
    for off in [
        0u64,
        3,
        0x18,
        0x1010,
        0x5000,
        0x6000,
        0x7fff_fffc,
        u64::MAX - 3,
    ] {
        let mut body = region_access(off, BAR0, 4);
        body.extend_from_slice(&[0xff; 4]);
        r.call(10, &body);
    }
    // DMA maps: unaligned, empty, wrapping, past the file's end, overlapping.
    let ram = memfd(1 << 20);
    let fd = ram.as_raw_fd();
    assert!(r.call_fd(2, &dma_map_body(3, 0, 0x1001, 4096), fd).0);
    assert!(r.call_fd(2, &dma_map_body(3, 0, 0x1000, 0), fd).0);
    assert!(
        r.call_fd(2, &dma_map_body(3, 0, u64::MAX - 4095, 8192), fd)
            .0
    );
    // 2 MiB of a 1 MiB file: mmap would take it, and the model would fault (SIGBUS) on the
    // second half.
    assert!(
        r.call_fd(2, &dma_map_body(3, 0, 0x40_0000, 2 << 20), fd).0,
        "past the file"
    );
    assert!(
        r.call_fd(2, &dma_map_body(3, 0, 0x80_0000, 1 << 40), fd).0,
        "past the limits"
    );
    assert!(!r.call_fd(2, &dma_map_body(3, 0, 0x10_0000, 1 << 20), fd).0);
    assert!(
        r.call_fd(2, &dma_map_body(3, 0, 0x18_0000, 1 << 20), fd).0,
        "overlap"
    );
    // Unmapping what is not mapped.
    let mut unmap = dma_map_body(0, 0, 0x20_0000, 4096);
    unmap.drain(8..16); // DMA_UNMAP has no offset field
    assert!(r.call(3, &unmap).0);
    // SET_IRQS: bad index, range past the vectors, DATA_BOOL, no action.
    assert!(r.call(8, &set_irqs_body(0x24, 9, 0, 1)).0);
    assert!(r.call(8, &set_irqs_body(0x24, 2, 60, 10)).0);
    assert!(r.call(8, &set_irqs_body(0x22, 2, 0, 1)).0);
    assert!(r.call(8, &set_irqs_body(0x20, 2, 0, 1)).0);
    // A command the protocol does not have.
    assert!(r.call(99, &[]).0);
    let st = s.control("status");
    assert!(st["server_bad_bar_accesses"].as_u64() >= Some(2), "{st}");
    // Disconnect in the middle of a message.
    let half = r.header(10, 16 + 16 + 4);
    r.s.write_all(&half[..10]).unwrap();
    drop(r);
    session += 1;
    s.wait_session(session);

    // The server is still there, with a fresh device for the next client.
    assert!(s.alive());
    probe(&s.sock());
    assert!(s.alive());
}

#[test]
fn control_channel_refuses_bad_commands() {
    let s = Server::start("ctl");
    for bad in [
        "",
        "frobnicate",
        "request-pages",
        "request-pages 0",
        "request-pages x",
        "health-fatal 0",
        "health-fatal 300",
        "status now",
    ] {
        let v = s.control(bad);
        assert_eq!(v["ok"], false, "{bad:?} -> {v}");
    }
    let long = "x".repeat(4000);
    assert_eq!(s.control(&long)["ok"], false);
    assert_eq!(s.control("request-pages 8")["ok"], true);
    assert_eq!(s.control("health-fatal 0x7")["ok"], true);
}

/// Shared view of a memfd, as the guest's RAM is to both QEMU and the server.
struct Shm {
    ptr: *mut u8,
    len: usize,
}

impl Shm {
    fn map(fd: &OwnedFd, len: usize) -> Shm {
        // SAFETY: a fresh shared mapping of our own memfd, checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        Shm {
            ptr: ptr.cast(),
            len,
        }
    }

    fn write(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len);
        for (i, &b) in data.iter().enumerate() {
            // SAFETY: inside the mapping; volatile, as the server's model writes it too.
            unsafe { self.ptr.add(off + i).write_volatile(b) }
        }
    }

    fn read(&self, off: usize) -> u8 {
        assert!(off < self.len);
        // SAFETY: inside the mapping; volatile, as the server's model writes it.
        unsafe { self.ptr.add(off).read_volatile() }
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        // SAFETY: exactly what mmap returned.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[test]
fn a_command_runs_from_guest_memory_and_is_traced_field_by_field() {
    let s = Server::start("cmd");
    let mut c = Client::new(&s.sock()).unwrap();
    let ram = memfd(1 << 20);
    let shm = Shm::map(&ram, 1 << 20);
    let iova = 0x10_0000u64;
    c.dma_map(0, iova, 1 << 20, ram.as_raw_fd()).unwrap();
    // The command queue at the start of guest memory, entry 0: ENABLE_HCA, inline in/out.
    let mut entry = [0u8; 64];
    entry[0] = 7; // type: PCIe command interface
    entry[4..8].copy_from_slice(&16u32.to_be_bytes()); // input length
    entry[0x10..0x14].copy_from_slice(&(0x104u32 << 16).to_be_bytes()); // opcode
    entry[0x38..0x3c].copy_from_slice(&16u32.to_be_bytes()); // output length
    entry[0x3c] = 0x5a; // token
    entry[0x3f] = 1; // owned by the device
    shm.write(0, &entry);
    c.region_write(BAR0, 0x10, &0u32.to_be_bytes()).unwrap();
    c.region_write(BAR0, 0x14, &(iova as u32).to_be_bytes())
        .unwrap();
    c.region_write(BAR0, 0x18, &1u32.to_be_bytes()).unwrap(); // doorbell, slot 0
                                                              // Bus mastering is off at power-on: the doorbell is held, the entry not even read.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        shm.read(0x3f) & 1,
        1,
        "a command ran with bus mastering off"
    );
    let st = s.control("status");
    assert_eq!(
        (
            st["bus_master"].as_bool(),
            st["held_by_bus_master"].as_u64()
        ),
        (Some(false), Some(1))
    );
    // The guest's pci_set_master: memory space and bus master in the command register.
    c.region_write(CONFIG, 4, &0x0006u16.to_le_bytes()).unwrap();
    let t = Instant::now();
    while shm.read(0x3f) & 1 != 0 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the command never completed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(shm.read(0x3f) >> 1, 0, "delivery status");
    assert_eq!(shm.read(0x20), 0, "command status");
    // The trace names the command and its fields from the spec.
    let trace = std::fs::read_to_string(s.dir.join("t")).unwrap();
    let line = trace
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["name"] == "enable_hca")
        .expect("enable_hca in the trace");
    assert_eq!(line["opcode"], "0x104");
    assert_eq!(line["status"], 0);
    assert_eq!(line["in"]["opcode"], 0x104);
    assert_eq!(s.control("status")["commands"], 1);
    // Unmapped, the memory is gone for the model: the next command is a DMA fault.
    c.dma_unmap(iova, 1 << 20).unwrap();
    entry[0x3f] = 1;
    shm.write(0, &entry);
    c.region_write(BAR0, 0x18, &1u32.to_be_bytes()).unwrap();
    let t = Instant::now();
    while s.control("status")["dma_faults"].as_u64() == Some(0) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no DMA fault after unmap"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(shm.read(0x3f) & 1, 1, "the model could not reach the entry");
}
