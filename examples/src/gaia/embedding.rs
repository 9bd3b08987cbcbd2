//! A stand-in for the embedding model GAIA's store indexes memories with:
//! a hashed bag of words, so that search by meaning runs offline and
//! ranks the same way on every run and every machine.
//!
//! Each word of four letters or more (lowercased) adds one to the slot of
//! the vector its hash picks; the store ranks by cosine similarity, so a
//! memory scores by the words it shares with the query, relative to both
//! lengths, and a memory sharing none scores 0.

use super::keywords;
use state_store::IndexConfig;
use std::convert::Infallible;

/// The vectors' dimensions: enough that two words rarely share a slot.
pub const DIMS: usize = 256;

/// The field of a memory the index embeds.
pub const TEXT: &str = "text";

/// The vector of `text`.
pub fn embed_text(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0; DIMS];
    for word in keywords(text) {
        vector[slot(&word)] += 1.0;
    }
    vector
}

/// The store's index for memories (LangGraph's `index={"embed": ..,
/// "dims": .., "fields": ["text"]}`): [`embed_text`] of each memory's
/// [`TEXT`]. Give it to the store the graph runs with:
/// `store.with_index(embedding::index())`.
pub fn index() -> IndexConfig {
    IndexConfig::new(DIMS, |texts: Vec<String>| async move {
        Ok::<_, Infallible>(texts.iter().map(|text| embed_text(text)).collect())
    })
    .fields([TEXT])
}

fn slot(word: &str) -> usize {
    // The remainder is below DIMS, so it fits a usize.
    (fnv1a(word.as_bytes()) % DIMS as u64) as usize
}

/// FNV-1a, 64 bits: the same on every run (std's hasher is seeded per
/// process), for the vectors' slots and the memories' keys.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b))
    }

    #[test]
    fn shared_words_point_the_same_way() {
        let query = embed_text("Schedule a meeting for tomorrow");
        let close = embed_text("Prefers meeting slots in the afternoon");
        let far = embed_text("Works with the design team");
        assert!(cosine(&query, &close) > 0.2);
        assert_eq!(cosine(&query, &far), 0.0);
        // Case and short words do not count.
        assert_eq!(embed_text("MEETING at 9"), embed_text("a meeting"));
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
