//! What the socket tests share: the server binary in a temporary directory, the crate's own
//! client as the behaving one, and a raw client that frames messages itself.
//!
//! `MLX5_VFIO_USER_NO_RELAY=1` starts the server with its hidden `--no-relay` flag (the
//! protocol crate on the socket, unprotected): the hostile tests then fail, which shows that
//! it is the relay that makes them pass.

#![allow(dead_code)] // each test file uses its own part

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vfio_user::Client;

pub fn no_relay() -> bool {
    std::env::var_os("MLX5_VFIO_USER_NO_RELAY").is_some_and(|v| v == "1")
}

pub const CONFIG: u32 = 7;
pub const BAR0: u32 = 0;

pub struct Server {
    pub child: Child,
    pub dir: PathBuf,
}

impl Server {
    pub fn start(name: &str) -> Server {
        Server::start_with(name, &[], |_| Vec::new())
    }

    /// A server run through `wrapper` (a command line the binary's is appended to, e.g.
    /// `unshare --net --`), with `args(dir)` after the usual ones.
    pub fn start_with(
        name: &str,
        wrapper: &[&str],
        args: impl FnOnce(&Path) -> Vec<String>,
    ) -> Server {
        let dir =
            std::env::temp_dir().join(format!("mlx5-vfio-user-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let bin = env!("CARGO_BIN_EXE_mlx5-vfio-user");
        let mut cmd = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let extra = args(&dir);
        let child = cmd
            .arg("--socket")
            .arg(dir.join("s"))
            .arg("--control")
            .arg(dir.join("c"))
            .arg("--trace")
            .arg(dir.join("t"))
            .args(no_relay().then_some("--no-relay"))
            .args(extra)
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

    pub fn sock(&self) -> PathBuf {
        self.dir.join("s")
    }

    pub fn ctl(&self) -> PathBuf {
        self.dir.join("c")
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits up to five seconds for the server to exit (`what` names what should have ended
    /// it, for the failure message) and returns its exit status.
    pub fn wait_exit(&mut self, what: &str) -> std::process::ExitStatus {
        let t = Instant::now();
        while self.alive() {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "the server runs on after {what}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        self.child.wait().unwrap()
    }

    /// One control command, its JSON answer.
    pub fn control(&self, cmd: &str) -> serde_json::Value {
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
    pub fn wait_session(&self, n: u64) {
        let t = Instant::now();
        while self.control("status")["session"].as_u64() < Some(n) {
            assert!(t.elapsed() < Duration::from_secs(10), "no session {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    /// Asks the server to quit as the harness does (so it exits through its own path, and a
    /// coverage build writes its counts); kills it if it has not gone within five seconds.
    fn drop(&mut self) {
        if self.alive() {
            if let Ok(mut c) = UnixStream::connect(self.ctl()) {
                let _ = c.set_write_timeout(Some(Duration::from_secs(1)));
                let _ = writeln!(c, "quit");
            }
            let t = Instant::now();
            while self.alive() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Guest RAM as QEMU's `memory-backend-memfd` makes it: a memfd that can be sealed (QEMU
/// seals it itself; the server adds F_SEAL_SHRINK at DMA_MAP if it is missing).
pub fn memfd(len: u64) -> OwnedFd {
    memfd_with(len, libc::MFD_ALLOW_SEALING)
}

/// A memfd of `len` bytes made with these `memfd_create` flags.
pub fn memfd_with(len: u64, flags: libc::c_uint) -> OwnedFd {
    // SAFETY: memfd_create reads only the NUL-terminated name, a static C string.
    let fd = unsafe { libc::memfd_create(c"guest-ram".as_ptr(), flags) };
    assert!(fd >= 0);
    // SAFETY: fresh descriptor, ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate on our descriptor; no memory is passed.
    let rc = unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) };
    assert_eq!(rc, 0);
    fd
}

pub fn eventfd() -> OwnedFd {
    // SAFETY: eventfd's result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
    assert!(fd >= 0);
    // SAFETY: fresh descriptor, ours.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

pub fn read32(c: &mut Client, region: u32, off: u64) -> u32 {
    let mut b = [0u8; 4];
    c.region_read(region, off, &mut b).unwrap();
    u32::from_le_bytes(b)
}

/// The behaving client: identity, BAR 0's initialization segment, guest memory, interrupts.
pub fn probe(sock: &Path) {
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
pub struct Raw {
    pub s: UnixStream,
    pub id: u16,
}

impl Raw {
    pub fn connect(sock: &Path) -> Raw {
        let s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { s, id: 0 }
    }

    pub fn header(&mut self, command: u16, size: u32) -> Vec<u8> {
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
    pub fn call(&mut self, command: u16, body: &[u8]) -> (bool, u32, Vec<u8>) {
        let mut m = self.header(command, 16 + body.len() as u32);
        m.extend_from_slice(body);
        self.s.write_all(&m).unwrap();
        self.reply()
    }

    pub fn call_fd(&mut self, command: u16, body: &[u8], fd: i32) -> (bool, u32, Vec<u8>) {
        use vmm_sys_util_shim::send_with_fd;
        let mut m = self.header(command, 16 + body.len() as u32);
        m.extend_from_slice(body);
        send_with_fd(&self.s, &m, fd);
        self.reply()
    }

    pub fn reply(&mut self) -> (bool, u32, Vec<u8>) {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).unwrap();
        let size = u32::from_le_bytes(h[4..8].try_into().unwrap()) as usize;
        let flags = u32::from_le_bytes(h[8..12].try_into().unwrap());
        let errno = u32::from_le_bytes(h[12..16].try_into().unwrap());
        let mut rest = vec![0u8; size.saturating_sub(16)];
        self.s.read_exact(&mut rest).unwrap();
        (flags & (1 << 5) != 0, errno, rest)
    }

    pub fn version(&mut self) {
        let mut body = vec![0u8; 4];
        body.extend_from_slice(b"{\"capabilities\":{}}\0");
        let (error, _, _) = self.call(1, &body);
        assert!(!error);
    }
}

/// sendmsg with SCM_RIGHTS descriptors.
pub mod vmm_sys_util_shim {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    pub fn send_with_fd(s: &UnixStream, data: &[u8], fd: i32) {
        send_with_fds(s, data, &[fd]);
    }

    /// sendmsg with these descriptors (at least one).
    pub fn send_with_fds(s: &UnixStream, data: &[u8], fds: &[i32]) {
        let len = std::mem::size_of_val(fds) as u32;
        // SAFETY: a plain sendmsg with one iovec and a control buffer sized for the fds.
        unsafe {
            let mut iov = libc::iovec {
                iov_base: data.as_ptr() as *mut libc::c_void,
                iov_len: data.len(),
            };
            let space = libc::CMSG_SPACE(len) as usize;
            let mut cbuf = vec![0u8; space];
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = space;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(len) as usize;
            for (i, fd) in fds.iter().enumerate() {
                std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>().add(i), *fd);
            }
            let n = libc::sendmsg(s.as_raw_fd(), &msg, 0);
            assert_eq!(n as usize, data.len());
        }
    }
}

pub fn region_access(offset: u64, region: u32, count: u32) -> Vec<u8> {
    let mut b = offset.to_le_bytes().to_vec();
    b.extend_from_slice(&region.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    b
}

pub fn dma_map_body(flags: u32, offset: u64, address: u64, size: u64) -> Vec<u8> {
    let mut b = 32u32.to_le_bytes().to_vec();
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b.extend_from_slice(&address.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b
}

pub fn set_irqs_body(flags: u32, index: u32, start: u32, count: u32) -> Vec<u8> {
    [20u32, flags, index, start, count]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

impl Server {
    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A `/proc/<pid>/status` field in KiB (VmHWM, VmRSS, VmPeak).
    pub fn vm_kib(&self, field: &str) -> u64 {
        let st = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        st.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc status"))
    }
}

/// A whole reply, decoded: message id, command, flags, errno, what follows the header.
pub struct Reply {
    pub id: u16,
    pub command: u16,
    pub flags: u32,
    pub errno: u32,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn error(&self) -> bool {
        self.flags & (1 << 5) != 0
    }
}

impl Raw {
    /// A header with these fields (the message id advances).
    pub fn header_with(&mut self, command: u16, size: u32, flags: u32) -> Vec<u8> {
        let mut h = self.header(command, size);
        h[8..12].copy_from_slice(&flags.to_le_bytes());
        h
    }

    /// Sends raw bytes, with descriptors if any.
    pub fn send(&mut self, bytes: &[u8], fds: &[i32]) {
        if fds.is_empty() {
            self.s.write_all(bytes).unwrap();
        } else {
            vmm_sys_util_shim::send_with_fds(&self.s, bytes, fds);
        }
    }

    /// The next reply, whole.
    pub fn reply_full(&mut self) -> Reply {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).unwrap();
        let size = u32::from_le_bytes(h[4..8].try_into().unwrap()) as usize;
        let mut body = vec![0u8; size.saturating_sub(16)];
        self.s.read_exact(&mut body).unwrap();
        Reply {
            id: u16::from_le_bytes([h[0], h[1]]),
            command: u16::from_le_bytes([h[2], h[3]]),
            flags: u32::from_le_bytes(h[8..12].try_into().unwrap()),
            errno: u32::from_le_bytes(h[12..16].try_into().unwrap()),
            body,
        }
    }

    /// True if the server closed the connection (EOF or reset) within the read timeout.
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 64];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue, // replies still in flight
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    /// REGION_READ of the vendor id (config space offset 0): 0x15b3 if the stream is usable.
    pub fn vendor_id(&mut self) -> u16 {
        let (error, _, data) = self.call(9, &region_access(0, CONFIG, 4));
        assert!(!error, "config read refused");
        u16::from_le_bytes([data[16], data[17]])
    }
}
