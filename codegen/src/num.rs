//! Integer literals as the spec writes them: `64`, `0x40`, `0b100_0000`, `0o100`.

/// Parses an unsigned integer literal. Underscores may separate digits.
pub fn parse_uint(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, radix) = if let Some(rest) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))
    {
        (rest, 16)
    } else if let Some(rest) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        (rest, 2)
    } else if let Some(rest) = t.strip_prefix("0o").or_else(|| t.strip_prefix("0O")) {
        (rest, 8)
    } else {
        (t, 10)
    };
    let cleaned: String = digits.chars().filter(|&c| c != '_').collect();
    if cleaned.is_empty() {
        return Err(format!(
            "`{t}` is not a number: expected digits like 64 or 0x40"
        ));
    }
    u64::from_str_radix(&cleaned, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => format!("`{t}` does not fit in 64 bits"),
        _ => format!("`{t}` is not a number: expected digits like 64 or 0x40"),
    })
}

#[cfg(test)]
mod tests {
    use super::parse_uint;

    #[test]
    fn forms() {
        assert_eq!(parse_uint("64"), Ok(64));
        assert_eq!(parse_uint("0x40"), Ok(64));
        assert_eq!(parse_uint("0X4_0"), Ok(64));
        assert_eq!(parse_uint("0b100_0000"), Ok(64));
        assert_eq!(parse_uint("0o100"), Ok(64));
        assert!(parse_uint("0x").is_err());
        assert!(parse_uint("-1").is_err());
        assert!(parse_uint("0x1_0000_0000_0000_0000")
            .unwrap_err()
            .contains("64 bits"));
    }
}
