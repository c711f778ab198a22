//! Constant expressions in array dimensions (`[MLX5_CMD_SET_MONITOR_NUM_COUNTER]`), evaluated
//! against the header's `#define`s: numbers, names, parentheses and `+ - * / << >> & |`.

use super::excerpt::excerpt;
use std::collections::HashMap;

/// `#define` names and their bodies, as written.
pub type Defines = HashMap<String, String>;

/// Records `#define NAME body` from a preprocessor line (continuations already joined).
pub fn record_define(line: &str, defines: &mut Defines) {
    let t = line.trim_start_matches('#').trim_start();
    let Some(rest) = t.strip_prefix("define") else {
        return;
    };
    let rest = rest.trim_start();
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() || rest[name.len()..].starts_with('(') {
        return; // function-like macros are not constants
    }
    let body = rest[name.len()..]
        .replace("\\\r\n", " ")
        .replace("\\\n", " ");
    defines.insert(name, body.trim().to_string());
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(u64),
    Name(String),
    Op(&'static str),
    Open,
    Close,
}

fn lex(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let lit = text[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            out.push(Tok::Num(crate::num::parse_uint(lit)?));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(text[start..i].to_string()));
        } else {
            let two = text.get(i..i + 2).unwrap_or("");
            let (tok, n) = match (two, c) {
                ("<<", _) => (Tok::Op("<<"), 2),
                (">>", _) => (Tok::Op(">>"), 2),
                (_, '+') => (Tok::Op("+"), 1),
                (_, '-') => (Tok::Op("-"), 1),
                (_, '*') => (Tok::Op("*"), 1),
                (_, '/') => (Tok::Op("/"), 1),
                (_, '&') => (Tok::Op("&"), 1),
                (_, '|') => (Tok::Op("|"), 1),
                (_, '(') => (Tok::Open, 1),
                (_, ')') => (Tok::Close, 1),
                _ => return Err(format!("unexpected `{c}`")),
            };
            out.push(tok);
            i += n;
        }
    }
    Ok(out)
}

struct Eval<'a> {
    toks: Vec<Tok>,
    pos: usize,
    defines: &'a Defines,
    depth: usize,
}

const LEVELS: &[&[&str]] = &[&["|"], &["&"], &["<<", ">>"], &["+", "-"], &["*", "/"]];

impl Eval<'_> {
    fn binary(&mut self, level: usize) -> Result<u64, String> {
        if level == LEVELS.len() {
            return self.atom();
        }
        let mut v = self.binary(level + 1)?;
        while let Some(Tok::Op(op)) = self.toks.get(self.pos).cloned() {
            if !LEVELS[level].contains(&op) {
                break;
            }
            self.pos += 1;
            let r = self.binary(level + 1)?;
            v = match op {
                "|" => v | r,
                "&" => v & r,
                "<<" => v.checked_shl(r as u32).ok_or("shift too large")?,
                ">>" => v.checked_shr(r as u32).ok_or("shift too large")?,
                "+" => v.checked_add(r).ok_or("overflow")?,
                "-" => v.checked_sub(r).ok_or("negative result")?,
                "*" => v.checked_mul(r).ok_or("overflow")?,
                _ => v.checked_div(r).ok_or("division by zero")?,
            };
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<u64, String> {
        let t = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or("expression ends early")?;
        self.pos += 1;
        match t {
            Tok::Num(n) => Ok(n),
            Tok::Open => {
                let v = self.binary(0)?;
                match self.toks.get(self.pos) {
                    Some(Tok::Close) => {
                        self.pos += 1;
                        Ok(v)
                    }
                    _ => Err("missing `)`".into()),
                }
            }
            Tok::Name(n) => {
                let body = self
                    .defines
                    .get(&n)
                    .ok_or_else(|| format!("`{}` is not a #define in the header", excerpt(&n)))?;
                if self.depth > 32 {
                    return Err(format!("`{}` expands too deeply", excerpt(&n)));
                }
                evaluate_at(body, self.defines, self.depth + 1)
            }
            _ => Err("unexpected operator".into()),
        }
    }
}

fn evaluate_at(text: &str, defines: &Defines, depth: usize) -> Result<u64, String> {
    let mut e = Eval {
        toks: lex(text)?,
        pos: 0,
        defines,
        depth,
    };
    let v = e.binary(0)?;
    if e.pos != e.toks.len() {
        return Err(format!("cannot evaluate `{}`", excerpt(text)));
    }
    Ok(v)
}

/// Evaluates a dimension expression.
pub fn evaluate(text: &str, defines: &Defines) -> Result<u64, String> {
    evaluate_at(text, defines, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        let mut d = Defines::new();
        record_define("#define A (6)", &mut d);
        record_define("#define B    (1)", &mut d);
        record_define("#define C (A +\\\n\t B)", &mut d);
        record_define("#define F(x) (x)", &mut d);
        assert_eq!(evaluate("C", &d), Ok(7));
        assert_eq!(evaluate("0x10 * 2 + (1 << 3)", &d), Ok(40));
        assert_eq!(evaluate("8UL", &d), Ok(8));
        assert!(evaluate("F(1)", &d).is_err());
        assert!(evaluate("D", &d).unwrap_err().contains("`D`"));
        record_define("#define L L", &mut d);
        assert!(evaluate("L", &d).is_err());
    }
}
