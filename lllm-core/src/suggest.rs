//! "Did you mean" suggestions for misspelt names.

/// Longest word a suggestion is looked for.
const MAX_WORD_LEN: usize = 64;

/// The candidate closest to `word`, when one is close enough to be a likely typo.
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // Names are short: a long word is no typo of one (and comparing it would cost its length squared).
    if word.len() > MAX_WORD_LEN {
        return None;
    }
    let word_lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| {
            (
                strsim::jaro_winkler(&word_lower, &c.to_ascii_lowercase()),
                c,
            )
        })
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_typos_only() {
        let keys = ["model_args", "model_name", "system_prompt"];
        assert_eq!(closest("modle_args", keys), Some("model_args"));
        assert_eq!(closest("system_promt", keys), Some("system_prompt"));
        assert_eq!(closest("temperature", keys), None);
    }
}
