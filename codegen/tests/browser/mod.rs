//! A headless Chromium driven over the DevTools protocol, for the reference's browser test.
//!
//! Chromium speaks the protocol on a pair of pipes when started with `--remote-debugging-pipe`
//! (commands in on fd 3, replies and events out on fd 4, each message JSON ended by a NUL byte).
//! That needs no port, no WebSocket and no HTTP, so the client is a page of code over
//! `serde_json`; the full-protocol crates (`headless_chrome`, `chromiumoxide`) generate the whole
//! protocol at build time, which would cost the suite more than this test runs. A reader thread
//! turns the output pipe into a channel so every wait has a deadline: a hung browser fails the
//! test with what it was waiting for instead of hanging the suite.

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::unistd::{dup2_raw, pipe2};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long one command or page load may take (TCG-free, but CI machines are small).
const DEADLINE: Duration = Duration::from_secs(60);

/// Where to look for the browser: `PRM_CHROMIUM` first, then Debian's and others' names.
pub fn find() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PRM_CHROMIUM") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("PRM_CHROMIUM={} is not a file", p.display()))
        };
    }
    let names = ["chromium", "chromium-browser", "google-chrome", "chrome"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(format!(
        "no Chromium found (looked for {} in PATH, and PRM_CHROMIUM is unset): install Debian's \
         `chromium` package (scripts/test does) or point PRM_CHROMIUM at a Chromium binary",
        names.join(", ")
    ))
}

/// A running browser with one page attached.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Events seen while waiting for replies, oldest first.
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `exe` headless with a fresh profile and opens a blank page of `width` × `height`.
    pub fn launch(exe: &Path, width: u32, height: u32) -> Result<Self, String> {
        let profile = tempfile::tempdir().map_err(|e| format!("profile dir: {e}"))?;
        // Both pipes close on exec; the child's ends are duplicated onto 3 and 4 (which
        // clears that flag) between fork and exec.
        let (cmd_read, cmd_write) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
        let (out_read, out_write) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
        let child_ends = [cmd_read.as_raw_fd(), out_write.as_raw_fd()];
        let mut command = Command::new(exe);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: the closure runs in the forked child before exec and only makes fcntl and
        // dup2 system calls (async-signal-safe; no allocation, no lock). The descriptors it
        // names are open: `cmd_read` and `out_write` live until after `spawn` returns.
        unsafe {
            command.pre_exec(move || map_fds(child_ends));
        }
        let child = command
            .spawn()
            .map_err(|e| format!("starting {}: {e}", exe.display()))?;
        // Our copies of the child's ends go, so the reader sees end-of-file when it exits.
        drop((cmd_read, out_write));
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(File::from(out_read));
            loop {
                let mut msg = Vec::new();
                match r.read_until(0, &mut msg) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if msg.last() == Some(&0) {
                    msg.pop();
                }
                let Ok(v) = serde_json::from_slice::<Value>(&msg) else {
                    continue;
                };
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut b = Browser {
            child,
            to: File::from(cmd_write),
            from: rx,
            next_id: 0,
            session: String::new(),
            events: Vec::new(),
            _profile: profile,
        };
        let target = b.call_browser("Target.createTarget", json!({ "url": "about:blank" }))?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_owned();
        let attached = b.call_browser(
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        )?;
        b.session = attached["sessionId"]
            .as_str()
            .ok_or("attachToTarget gave no session")?
            .to_owned();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            b.call(domain, json!({}))?;
        }
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )?;
        Ok(b)
    }

    fn send(&mut self, method: &str, params: Value, session: bool) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if session {
            msg["sessionId"] = Value::String(self.session.clone());
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .map_err(|e| format!("{method}: writing to the browser: {e}"))?;
        let until = Instant::now() + DEADLINE;
        loop {
            let v = self.next_message(until, method)?;
            if v["id"].as_u64() == Some(id) {
                if let Some(err) = v.get("error") {
                    return Err(format!("{method}: {err}"));
                }
                return Ok(v["result"].clone());
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    fn next_message(&mut self, until: Instant, waiting_for: &str) -> Result<Value, String> {
        let left = until.saturating_duration_since(Instant::now());
        match self.from.recv_timeout(left) {
            Ok(v) => Ok(v),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "{waiting_for}: no answer from the browser in {DEADLINE:?}"
            )),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.try_wait().ok().flatten();
                Err(format!(
                    "{waiting_for}: the browser closed its pipe (exit: {status:?})"
                ))
            }
        }
    }

    /// A command to the browser itself (not the page).
    fn call_browser(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.send(method, params, false)
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.send(method, params, true)
    }

    /// Loads `url` and waits for its load event (scripts have run, images and styles loaded).
    pub fn navigate(&mut self, url: &str) -> Result<(), String> {
        self.events
            .retain(|e| e["method"].as_str() != Some("Page.loadEventFired"));
        let nav = self.call("Page.navigate", json!({ "url": url }))?;
        if let Some(err) = nav.get("errorText") {
            return Err(format!("loading {url}: {err}"));
        }
        self.wait_event("Page.loadEventFired", url)
    }

    /// Waits for an event of `method` on the page (one already seen counts).
    fn wait_event(&mut self, method: &str, what: &str) -> Result<(), String> {
        let is = |e: &Value, s: &str| e["method"].as_str() == Some(method) && e["sessionId"] == s;
        if self.events.iter().any(|e| is(e, &self.session)) {
            return Ok(());
        }
        let until = Instant::now() + DEADLINE;
        loop {
            let v = self.next_message(until, &format!("{method} for {what}"))?;
            let hit = is(&v, &self.session);
            self.events.push(v);
            if hit {
                return Ok(());
            }
        }
    }

    /// Evaluates `expr` in the page (awaiting a promise) and returns its value as JSON.
    pub fn eval(&mut self, expr: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("script failed: {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Types `text` into the focused element as a user would (input events fire).
    pub fn type_text(&mut self, text: &str) -> Result<(), String> {
        self.call("Input.insertText", json!({ "text": text }))
            .map(drop)
    }

    /// Presses and releases a named key (`Enter`, `ArrowDown`, …).
    pub fn press(&mut self, key: &str, code: u32) -> Result<(), String> {
        for ty in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": ty, "key": key, "code": key, "windowsVirtualKeyCode": code }),
            )?;
        }
        Ok(())
    }

    /// A PNG of the page region `(x, y, width, height)` in CSS pixels, below the fold included.
    pub fn screenshot(&mut self, clip: (f64, f64, f64, f64)) -> Result<Vec<u8>, String> {
        use base64::Engine as _;
        let (x, y, width, height) = clip;
        let r = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true,
                    "clip": { "x": x, "y": y, "width": width, "height": height, "scale": 1 } }),
        )?;
        let data = r["data"].as_str().ok_or("captureScreenshot gave no data")?;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("screenshot data: {e}"))
    }

    /// Every console error or warning, uncaught exception and browser log error (a file that
    /// did not load, a refused script) since the last call, as text; clears them.
    pub fn take_errors(&mut self) -> Vec<String> {
        // Drain what arrived without being asked for.
        while let Ok(v) = self.from.try_recv() {
            self.events.push(v);
        }
        let mut out = Vec::new();
        for e in self.events.drain(..) {
            let p = &e["params"];
            match e["method"].as_str() {
                Some("Runtime.consoleAPICalled") => {
                    let ty = p["type"].as_str().unwrap_or_default();
                    if matches!(ty, "error" | "warning" | "assert") {
                        let args: Vec<String> = p["args"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .map(|x| {
                                        x["value"]
                                            .as_str()
                                            .map(str::to_owned)
                                            .unwrap_or_else(|| x["description"].to_string())
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        out.push(format!("console.{ty}: {}", args.join(" ")));
                    }
                }
                Some("Runtime.exceptionThrown") => {
                    let d = &p["exceptionDetails"];
                    out.push(format!(
                        "uncaught: {} {}",
                        d["text"].as_str().unwrap_or_default(),
                        d["exception"]["description"].as_str().unwrap_or_default()
                    ));
                }
                Some("Log.entryAdded") => {
                    let entry = &p["entry"];
                    if matches!(entry["level"].as_str(), Some("error" | "warning")) {
                        out.push(format!(
                            "log {}: {} {}",
                            entry["level"].as_str().unwrap_or_default(),
                            entry["text"].as_str().unwrap_or_default(),
                            entry["url"].as_str().unwrap_or_default()
                        ));
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// In the child: puts `ends[0]` on fd 3 and `ends[1]` on fd 4. Both are first copied above
/// 10, so that one already sitting on 3 or 4 is not overwritten before it is moved.
fn map_fds(ends: [RawFd; 2]) -> std::io::Result<()> {
    let mut high = [0; 2];
    for (h, fd) in high.iter_mut().zip(ends) {
        // SAFETY: `fd` is open in the child (inherited; see the caller).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        *h = fcntl(fd, FcntlArg::F_DUPFD(10))?;
    }
    for (h, target) in high.into_iter().zip([3, 4]) {
        // SAFETY: `h` was just opened above; the copy on `target` must outlive this
        // function (the browser reads it), so it is not dropped.
        let new = unsafe { dup2_raw(BorrowedFd::borrow_raw(h), target)? };
        std::mem::forget::<OwnedFd>(new);
    }
    Ok(())
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.call_browser("Browser.close", json!({}));
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
