//! What CUDA, cuBLAS and PyTorch read from the environment, and whether a value is well formed.
//! Shared by `culint probe` (which checks the variables in effect) and the rules that check the
//! values a script sets (CUL204 invalid-alloc-conf, CUL602 unknown-cuda-env-var).

pub mod alloc_conf;
pub mod cublas_workspace;
pub mod env_vars;

/// The known name closest to `name`, if it is a likely misspelling (at most two edits away).
pub(crate) fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|candidate| (edit_distance(&name.to_ascii_lowercase(), &candidate.to_ascii_lowercase()), candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_finds_misspellings_only() {
        let names = ["expandable_segments", "max_split_size_mb"];
        assert_eq!(closest("expandable_segment", names.into_iter()), Some("expandable_segments"));
        assert_eq!(closest("max_split_size", names.into_iter()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
