//! A command that fails: the status and syndrome the device writes into the output header.
//!
//! Handlers return `Result<_, Fail>` and stop at the first failed check, as firmware does; the
//! command interface turns the `Fail` into the output's first eight bytes.

use mlx5_prm::CmdStatus;

/// A command status other than OK, with the syndrome that names the failed check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fail {
    /// Output status byte.
    pub status: u8,
    /// Output syndrome (see [`crate::syndrome`]).
    pub syndrome: u32,
}

/// What a command handler returns: its output bytes, or why it failed.
pub(crate) type Outcome<T = Vec<u8>> = Result<T, Fail>;

impl Fail {
    /// A failure with status `status`.
    pub fn new(status: CmdStatus, syndrome: u32) -> Fail {
        Fail {
            status: status.raw(),
            syndrome,
        }
    }

    /// BAD_OP: the command (or op_mod) is not supported.
    pub fn bad_op(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadOpErr, syndrome)
    }

    /// BAD_PARAM: an input field is invalid.
    pub fn bad_param(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadParamErr, syndrome)
    }

    /// BAD_SYS_STATE: the function is not in a state that allows the command.
    pub fn bad_sys_state(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadSysStateErr, syndrome)
    }

    /// BAD_RES: a referenced object does not exist.
    pub fn bad_res(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadResErr, syndrome)
    }

    /// RES_BUSY: the object is still in use.
    pub fn busy(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::ResBusy, syndrome)
    }

    /// LIM: a device limit would be exceeded.
    pub fn lim(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::LimErr, syndrome)
    }

    /// BAD_RES_STATE: the object is in a state that does not allow the command.
    pub fn bad_res_state(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadResStateErr, syndrome)
    }

    /// BAD_QP_STATE: the QP is in a state that does not allow the command.
    pub fn bad_qp_state(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadQpStateErr, syndrome)
    }

    /// BAD_INP_LEN: the input is shorter than the command needs.
    pub fn inp_len(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadInpLenErr, syndrome)
    }

    /// BAD_OUTP_LEN: the output is shorter than the command needs.
    pub fn outp_len(syndrome: u32) -> Fail {
        Fail::new(CmdStatus::BadOutpLenErr, syndrome)
    }
}

/// `Ok(())` when `ok`, else `Err(fail)`: a check in one line.
pub(crate) fn ensure(ok: bool, fail: Fail) -> Outcome<()> {
    if ok {
        Ok(())
    } else {
        Err(fail)
    }
}
