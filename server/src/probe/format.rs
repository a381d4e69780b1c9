//! Human-readable quantities for probe messages.

/// `33554432` → `32 MiB`, `84974239744` → `79.1 GiB`.
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = count as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() < 0.05 || value >= 100.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(32 << 20), "32 MiB");
        assert_eq!(bytes(8_519_680), "8.1 MiB");
        assert_eq!(bytes(84_974_239_744), "79.1 GiB");
        assert_eq!(bytes(150 << 30), "150 GiB");
    }
}
