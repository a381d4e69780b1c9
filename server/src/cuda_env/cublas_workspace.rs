//! `CUBLAS_WORKSPACE_CONFIG`: `:SIZE:COUNT` pairs, SIZE in KiB, and the workspace PyTorch
//! allocates per cuBLAS handle and stream when the variable is unset.

/// The workspace size in bytes that a well-formed `CUBLAS_WORKSPACE_CONFIG` value asks for.
pub fn parse(value: &str) -> Result<u64, String> {
    let Some(rest) = value.strip_prefix(':') else {
        return Err(format!("`{value}` must start with `:`; the format is `:SIZE_KiB:COUNT`, e.g. `:4096:8`"));
    };
    let fields: Vec<&str> = rest.split(':').collect();
    if !fields.len().is_multiple_of(2) {
        return Err(format!(
            "`{value}` has an odd number of fields; it must be `:SIZE_KiB:COUNT` pairs, e.g. `:4096:8`"
        ));
    }
    let mut total: u64 = 0;
    for pair in fields.chunks(2) {
        let size = whole_number(pair[0], value)?;
        let count = whole_number(pair[1], value)?;
        total = total.saturating_add(size.saturating_mul(1024).saturating_mul(count));
    }
    Ok(total)
}

fn whole_number(field: &str, value: &str) -> Result<u64, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`{field}` in `{value}` is not a whole number; the format is `:SIZE_KiB:COUNT`, e.g. `:4096:8`"
        ));
    }
    field.parse().map_err(|_| format!("`{field}` in `{value}` is too large"))
}

/// The cuBLAS workspace PyTorch allocates per handle and stream when `CUBLAS_WORKSPACE_CONFIG` is
/// unset: 32 MiB (`:4096:8`) on compute capability 9.0, `:4096:2:16:8` (8 MiB + 128 KiB) elsewhere.
/// Source: aten/src/ATen/cuda/CublasHandlePool.cpp, `parseChosenWorkspaceSize`.
pub fn pytorch_default_bytes(compute_capability: (u32, u32)) -> u64 {
    if compute_capability == (9, 0) { 4096 * 8 * 1024 } else { 4096 * 1024 * 2 + 16 * 1024 * 8 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_documented_forms() {
        assert_eq!(parse(":4096:8"), Ok(32 * 1024 * 1024));
        assert_eq!(parse(":16:8"), Ok(128 * 1024));
        assert_eq!(parse(":4096:2:16:8"), Ok(4096 * 1024 * 2 + 16 * 1024 * 8));
    }

    #[test]
    fn rejects_malformed_values() {
        assert!(parse("4096:8").unwrap_err().contains("must start with `:`"));
        assert!(parse(":4096").unwrap_err().contains("odd number"));
        assert!(parse(":4096:8:16").unwrap_err().contains("odd number"));
        assert!(parse(":4k:8").unwrap_err().contains("not a whole number"));
        assert!(parse(":4096::8").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn default_depends_on_hopper() {
        assert_eq!(pytorch_default_bytes((9, 0)), 33_554_432);
        assert_eq!(pytorch_default_bytes((8, 0)), 8_519_680);
    }
}
