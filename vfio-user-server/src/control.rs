//! The control channel: a Unix stream socket taking one command per line and answering each
//! with one JSON line. The harness (and a person with `socat`) uses it to look at the model
//! and to play the firmware's part:
//!
//! - `status`: pages held, objects by kind, commands run, unimplemented (opcode, op_mod)
//!   pairs, DMA faults, bad BAR accesses, messages the relay refused and connections it
//!   closed, interrupts per vector;
//! - `request-pages N`: the firmware asks the driver for N pages (N < 0: returns them);
//! - `health-fatal SYNDROME`: the firmware reports a fatal error (syndrome 1..255);
//! - `quit`: the server exits.
//!
//! Lines are at most 256 bytes; a longer one, or an unknown command, gets `{"ok":false,...}`.
//! Each connection has its own thread; at most [`MAX_CLIENTS`] at once.

use crate::session::Shared;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Longest command line.
pub const MAX_LINE: usize = 256;
/// Most control connections served at once.
pub const MAX_CLIENTS: usize = 8;

/// What a command asks of the server besides its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Nothing.
    Continue,
    /// Exit.
    Quit,
}

fn err(msg: impl Into<String>) -> Value {
    json!({ "ok": false, "error": msg.into() })
}

/// The `status` answer.
pub fn status(shared: &Shared) -> Value {
    let st = &shared.stats;
    let mut v = json!({
        "ok": true,
        "session": st.sessions.load(Ordering::Relaxed),
        "resets": st.resets.load(Ordering::Relaxed),
        "dma_maps": st.dma_maps.load(Ordering::Relaxed),
        "dma_maps_read_only": st.dma_maps_read_only.load(Ordering::Relaxed),
        "server_bad_bar_accesses": st.bad_bar.load(Ordering::Relaxed),
        "bad_vectors": st.bad_vectors.load(Ordering::Relaxed),
        "relay_rejected_messages": st.rejected.load(Ordering::Relaxed),
        "relay_closed_connections": st.relay_closed.load(Ordering::Relaxed),
        "loopback": shared.loopback.load(Ordering::Relaxed),
    });
    let Some(cur) = shared.current() else {
        return v;
    };
    let model = cur.model.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let dev = model.device();
    let objects = dev.objects();
    let records = dev.commands();
    let ledger = dev.unimplemented_commands();
    let port = dev.port();
    let sent = cur.msix.sent();
    let latched = cur.msix.latched();
    let interrupts: serde_json::Map<String, Value> = sent
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| (i.to_string(), json!(n)))
        .collect();
    let pending: serde_json::Map<String, Value> = latched
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| (i.to_string(), json!(n)))
        .collect();
    let extra = json!({
        "pages_held": dev.pages_held(),
        "objects_total": objects.total(),
        "objects": {
            "uars": objects.uars, "pds": objects.pds,
            "transport_domains": objects.transport_domains, "eqs": objects.eqs,
            "cqs": objects.cqs, "mkeys": objects.mkeys, "qps": objects.qps, "sqs": objects.sqs,
            "rqs": objects.rqs, "tises": objects.tises, "tirs": objects.tirs,
            "rqts": objects.rqts, "flow_tables": objects.flow_tables,
            "flow_groups": objects.flow_groups, "flow_entries": objects.flow_entries,
        },
        "commands": records.len(),
        "unimplemented": ledger
            .commands
            .iter()
            .map(|u| json!({
                "opcode": format!("{:#x}", u.opcode),
                "name": crate::commands::by_opcode(u.opcode).map_or("unknown", |c| c.name),
                "op_mod": u.op_mod,
                "register_id": u.register_id.map(|r| format!("{r:#x}")),
                "status": u.status,
                "syndrome": format!("{:#x}", u.syndrome),
                "count": u.count,
            }))
            .collect::<Vec<_>>(),
        "unimplemented_not_listed": ledger.not_listed,
        "port": {
            "mac": port.mac_string(), "admin_up": port.admin_up, "oper_up": port.oper_up,
            "mtu": port.mtu,
        },
        "module": {
            "vendor": mlx5_sim::MODULE_VENDOR, "part_number": mlx5_sim::MODULE_PN,
            "serial_number": mlx5_sim::MODULE_SN,
        },
        "tap": shared.port.status(),
        "traffic": {
            "tx_frames": dev.tx_frames(), "rx_frames": dev.rx_frames(),
            "rx_dropped": dev.rx_dropped(),
        },
        "dma_faults": dev.dma_faults(),
        "tx_faults_pending": dev.faults().bad_lkey_sends_pending(),
        "bus_master": dev.bus_master(),
        "held_by_bus_master": dev.held_by_bus_master(),
        "refused_by_bus_master": dev.refused_by_bus_master(),
        "bad_bar_accesses": model.bad_bar_accesses(),
        "interrupts": interrupts,
        "latched_interrupts": pending,
    });
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v
}

/// Runs one command line; the answer and what to do next.
pub fn execute(shared: &Shared, line: &str) -> (Value, After) {
    let mut words = line.split_whitespace();
    let cmd = words.next().unwrap_or("");
    let arg = words.next();
    if words.next().is_some() {
        return (err("one argument at most"), After::Continue);
    }
    let current = shared.current();
    let model = || {
        current
            .as_ref()
            .map(|c| c.model.lock().unwrap_or_else(|e| e.into_inner()).clone())
    };
    match (cmd, arg) {
        ("status", None) => (status(shared), After::Continue),
        ("request-pages", Some(n)) => match n.parse::<i32>() {
            Ok(n) if n != 0 => match model() {
                Some(m) => {
                    m.device().request_pages(n);
                    (json!({ "ok": true, "requested": n }), After::Continue)
                }
                None => (err("no device yet"), After::Continue),
            },
            _ => (
                err("request-pages takes a non-zero number of pages"),
                After::Continue,
            ),
        },
        ("health-fatal", Some(s)) => {
            let parsed = match s.strip_prefix("0x") {
                Some(hex) => u8::from_str_radix(hex, 16),
                None => s.parse::<u8>(),
            };
            match (parsed, model()) {
                (Ok(syn), Some(m)) if syn != 0 => {
                    m.device().set_health_syndrome(syn);
                    (json!({ "ok": true, "syndrome": syn }), After::Continue)
                }
                (Ok(_), None) => (err("no device yet"), After::Continue),
                _ => (err("health-fatal takes a syndrome 1..255"), After::Continue),
            }
        }
        ("tx-fault", Some(n)) => match (n.parse::<u32>(), model()) {
            (Ok(n @ 1..=1024), Some(m)) => {
                m.device().faults().bad_lkey_sends(n);
                (
                    json!({ "ok": true, "tx_faults_pending": n }),
                    After::Continue,
                )
            }
            (Ok(1..=1024), None) => (err("no device yet"), After::Continue),
            _ => (
                err("tx-fault takes a number of sends 1..1024"),
                After::Continue,
            ),
        },
        ("loopback", Some(state @ ("on" | "off"))) => {
            let on = state == "on";
            // For this session's device and every later one.
            shared.loopback.store(on, Ordering::Relaxed);
            if let Some(m) = model() {
                m.device().loopback(on);
            }
            (json!({ "ok": true, "loopback": on }), After::Continue)
        }
        ("loopback", _) => (err("loopback takes on or off"), After::Continue),
        ("quit", None) => (json!({ "ok": true, "quitting": true }), After::Quit),
        ("", None) => (err("empty command"), After::Continue),
        _ => (
            err(format!(
                "unknown command '{}': status, request-pages N, health-fatal SYNDROME, tx-fault N, \
                 loopback on|off, quit",
                line.trim()
            )),
            After::Continue,
        ),
    }
}

/// Serves one control connection until it closes or asks to quit.
pub fn serve(shared: &Shared, stream: UnixStream) -> After {
    let Ok(mut out) = stream.try_clone() else {
        return After::Continue;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = Vec::new();
        // At most MAX_LINE + 1 bytes per line: a longer line is refused, not buffered.
        let n = match (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return After::Continue,
            Ok(n) => n,
        };
        let (answer, after) = if n > MAX_LINE && !line.ends_with(b"\n") {
            // Skip the rest of the over-long line.
            let mut sink = Vec::new();
            let _ = (&mut reader).take(1 << 20).read_until(b'\n', &mut sink);
            (
                err(format!("lines are at most {MAX_LINE} bytes")),
                After::Continue,
            )
        } else {
            match std::str::from_utf8(&line) {
                Ok(text) => execute(shared, text.trim_end_matches(['\r', '\n'])),
                Err(_) => (err("not UTF-8"), After::Continue),
            }
        };
        // A quit stands even when its answer cannot be delivered (the asker already left).
        if writeln!(out, "{answer}").is_err() || after == After::Quit {
            return after;
        }
    }
}

/// Accepts control connections on `listener` forever, each on its own thread; `on_quit` runs
/// when one asks to quit.
pub fn spawn(
    listener: UnixListener,
    shared: Arc<Shared>,
    on_quit: Arc<dyn Fn() + Send + Sync>,
) -> std::thread::JoinHandle<()> {
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if active.load(Ordering::Relaxed) >= MAX_CLIENTS {
                let _ = writeln!(stream, "{}", err("too many control connections"));
                continue;
            }
            active.fetch_add(1, Ordering::Relaxed);
            let (shared, active, on_quit) = (shared.clone(), active.clone(), on_quit.clone());
            std::thread::spawn(move || {
                let after = serve(&shared, stream);
                active.fetch_sub(1, Ordering::Relaxed);
                if after == After::Quit {
                    on_quit();
                }
            });
        }
    })
}
