//! A trace's summary, as the guest harness prints it after a run: how many commands of which
//! kinds the guest issued, and every one that did not succeed (an opcode the model does not
//! implement among them, so it is never accepted silently).
//!
//! It reads the JSON lines [`super::TraceWriter`] writes; lines it cannot read (a trace cut
//! short by a killed server, say) are counted, not fatal.

use mlx5_prm::CmdStatus;
use serde_json::Value;
use std::fmt;
use std::io::BufRead;

/// One command that completed with a non-zero status (or was not delivered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The trace's sequence number.
    pub seq: u64,
    /// The command's name from the spec (`unknown` for an opcode the spec does not have).
    pub name: String,
    /// The opcode as the trace writes it (`0x…`).
    pub opcode: String,
    /// The op_mod.
    pub op_mod: u64,
    /// The delivery status (0: delivered).
    pub delivery: u64,
    /// The completion status.
    pub status: u64,
    /// The syndrome as the trace writes it.
    pub syndrome: String,
}

/// What a trace holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Commands recorded.
    pub commands: u64,
    /// Per command name, in order of first appearance, with its count.
    pub kinds: Vec<(String, u64)>,
    /// Commands that did not succeed, in trace order.
    pub failures: Vec<Failure>,
    /// Sessions with at least one command (`{"event": "session N: fresh device"}` notes
    /// start them; a server waiting for its next client has begun one with no command yet).
    pub sessions: u64,
    /// A session has begun and has had no command yet.
    session_empty: bool,
    /// Lines that are not a command or a note.
    pub unreadable: u64,
}

impl Summary {
    /// Reads a whole trace. I/O errors end the reading and are returned.
    pub fn read(input: impl BufRead) -> std::io::Result<Summary> {
        let mut s = Summary::default();
        for line in input.lines() {
            s.add_line(&line?);
        }
        Ok(s)
    }

    /// Adds one line of a trace.
    pub fn add_line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(line) else {
            self.unreadable += 1;
            return;
        };
        if let Some(event) = o.get("event") {
            if event
                .as_str()
                .is_some_and(|e| e.ends_with(": fresh device"))
            {
                self.session_empty = true;
            }
            return;
        }
        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        let num = |k: &str| o.get(k).and_then(Value::as_u64);
        let (Some(name), Some(opcode), Some(status)) =
            (text("name"), text("opcode"), num("status"))
        else {
            self.unreadable += 1;
            return;
        };
        self.commands += 1;
        if std::mem::take(&mut self.session_empty) {
            self.sessions += 1;
        }
        match self.kinds.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => self.kinds.push((name.clone(), 1)),
        }
        let delivery = num("delivery").unwrap_or(0);
        if status != 0 || delivery != 0 {
            self.failures.push(Failure {
                seq: num("seq").unwrap_or(0),
                name,
                opcode,
                op_mod: num("op_mod").unwrap_or(0),
                delivery,
                status,
                syndrome: text("syndrome").unwrap_or_default(),
            });
        }
    }

    /// Commands the model answered as not implemented (BAD_OP).
    pub fn not_implemented(&self) -> impl Iterator<Item = &Failure> {
        self.failures
            .iter()
            .filter(|f| f.delivery == 0 && f.status == u64::from(CmdStatus::BadOpErr.raw()))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seq {} {} ({}, op_mod {}): ",
            self.seq, self.name, self.opcode, self.op_mod
        )?;
        if self.delivery != 0 {
            return write!(f, "not delivered (delivery status {:#x})", self.delivery);
        }
        let status = CmdStatus::from_raw(self.status).map_or("unknown status", |s| s.spec_name());
        write!(
            f,
            "status {:#x} {status}, syndrome {}",
            self.status, self.syndrome
        )?;
        if self.status == u64::from(CmdStatus::BadOpErr.raw()) {
            write!(f, " (not implemented by the model)")?;
        }
        Ok(())
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unimplemented = self.not_implemented().count();
        writeln!(
            f,
            "trace: {} commands of {} types in {} session(s); {} failed, {} not implemented by the model",
            self.commands,
            self.kinds.len(),
            self.sessions,
            self.failures.len(),
            unimplemented
        )?;
        let kinds: Vec<String> = self.kinds.iter().map(|(n, c)| format!("{n} {c}")).collect();
        for chunk in kinds.chunks(6) {
            writeln!(f, "  {}", chunk.join(", "))?;
        }
        for failure in &self.failures {
            writeln!(f, "  failed: {failure}")?;
        }
        if self.unreadable > 0 {
            writeln!(
                f,
                "  {} line(s) not readable as trace lines",
                self.unreadable
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"{"event":"session 1: fresh device"}
{"event":"session 1: over"}
{"in":{"opcode":260},"name":"enable_hca","op_mod":0,"opcode":"0x104","out":{},"seq":1,"status":0,"syndrome":"0x0"}
{"in":{"opcode":266},"name":"query_issi","op_mod":0,"opcode":"0x10a","out":{"status":0},"seq":2,"status":0,"syndrome":"0x0"}
{"in":{},"name":"unknown","op_mod":0,"opcode":"0x9999","out":{},"seq":3,"status":2,"syndrome":"0x12ab"}
{"in":{},"name":"create_eq","op_mod":0,"opcode":"0x301","out":{},"seq":4,"status":3,"syndrome":"0x5"}
{"in":{},"name":"enable_hca","op_mod":0,"opcode":"0x104","delivery":9,"out":{},"seq":5,"status":0,"syndrome":"0x0"}
{"name":"enable_ca
{"event":"session 2: fresh device"}
"#;

    #[test]
    fn counts_kinds_and_lists_every_failure() {
        let s = Summary::read(TRACE.as_bytes()).unwrap();
        assert_eq!(s.commands, 5);
        assert_eq!(
            s.sessions, 1,
            "`over` notes and a session without commands do not count"
        );
        assert_eq!(s.unreadable, 1, "a cut-off last line is counted, not fatal");
        assert_eq!(
            s.kinds,
            [
                ("enable_hca".into(), 2),
                ("query_issi".into(), 1),
                ("unknown".into(), 1),
                ("create_eq".into(), 1)
            ]
        );
        let seqs: Vec<u64> = s.failures.iter().map(|f| f.seq).collect();
        assert_eq!(
            seqs,
            [3, 4, 5],
            "a nested `status` field is not the command's"
        );
        let unimplemented: Vec<u64> = s.not_implemented().map(|f| f.seq).collect();
        assert_eq!(unimplemented, [3]);
        let text = s.to_string();
        assert!(text.starts_with(
            "trace: 5 commands of 4 types in 1 session(s); 3 failed, 1 not implemented by the model"
        ));
        assert!(text.contains(
            "failed: seq 3 unknown (0x9999, op_mod 0): status 0x2 bad_op_err, syndrome 0x12ab (not implemented by the model)"
        ));
        assert!(text
            .contains("seq 4 create_eq (0x301, op_mod 0): status 0x3 bad_param_err, syndrome 0x5"));
        assert!(text
            .contains("seq 5 enable_hca (0x104, op_mod 0): not delivered (delivery status 0x9)"));
    }

    #[test]
    fn an_empty_trace_says_so() {
        let s = Summary::read(&b""[..]).unwrap();
        assert_eq!(
            s.to_string(),
            "trace: 0 commands of 0 types in 0 session(s); 0 failed, 0 not implemented by the model\n"
        );
    }
}
