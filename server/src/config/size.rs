//! Byte sizes as people write them: `10MB`, `24 GB`, `80GiB`, `16G` or a plain number of bytes.

/// The largest size culint accepts anywhere: larger values are typos, not real files or GPUs.
pub const MAX_SIZE: u64 = 1 << 50;

/// Parse a size. Decimal units (`kB`, `MB`, `GB`, `TB`) are powers of 1000, binary units (`KiB`,
/// `MiB`, `GiB`, `TiB`) and the bare letters (`K`, `M`, `G`, `T`, as in `nvidia-smi` and Slurm)
/// are powers of 1024. Fractions such as `1.5GiB` are allowed.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number = number.replace('_', "");
    if number.is_empty() {
        return Err(format!(
            "`{text}` is not a size; write a number of bytes or a number with a unit, such as `24GB` or `80GiB`"
        ));
    }
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a size: `{number}` is not a number"))?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "mb" => 1000u64.pow(2),
        "gb" => 1000u64.pow(3),
        "tb" => 1000u64.pow(4),
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "`{text}` has an unknown unit `{other}`; use B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)"
            ));
        }
    };
    let bytes = value * multiplier as f64;
    if !bytes.is_finite() || bytes > MAX_SIZE as f64 {
        return Err(format!("`{text}` is too large (the limit is 1 PiB)"));
    }
    if bytes < 1.0 {
        return Err(format!("`{text}` is not a positive size"));
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_binary_and_bare_units() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size("24 GB"), Ok(24_000_000_000));
        assert_eq!(parse_size("80GiB"), Ok(80 << 30));
        assert_eq!(parse_size("16G"), Ok(16 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("1_000_000"), Ok(1_000_000));
    }

    #[test]
    fn rejects_nonsense() {
        assert!(parse_size("").unwrap_err().contains("not a size"));
        assert!(parse_size("GB").unwrap_err().contains("not a size"));
        assert!(parse_size("12 parsecs").unwrap_err().contains("unknown unit `parsecs`"));
        assert!(parse_size("0").unwrap_err().contains("not a positive size"));
        assert!(parse_size("99999999TiB").unwrap_err().contains("too large"));
        assert!(parse_size("1.2.3GB").unwrap_err().contains("not a number"));
    }
}
