//! Vectors: how an item's embeddings are stored (little-endian `f32`s, one
//! vector after another) and how a query ranks items by them (cosine
//! similarity, the best of an item's vectors, as LangGraph does; exact,
//! every candidate scored in Rust), keeping only the best few.

use crate::backend::Vectors;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Vectors as stored.
pub(crate) fn to_bytes(vectors: &[Vec<f32>]) -> Vec<u8> {
    vectors
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

/// A search's query vector, with its norm.
#[derive(Debug, Clone)]
pub(crate) struct QueryVector {
    values: Vec<f32>,
    norm: f32,
}

impl QueryVector {
    pub fn new(values: Vec<f32>) -> QueryVector {
        let norm = values.iter().map(|x| x * x).sum::<f32>().sqrt();
        QueryVector { values, norm }
    }

    /// The best cosine similarity between the query and an item's stored
    /// vectors (0 against a zero vector, as LangGraph); `Err` says why the
    /// stored bytes are not vectors of the query's dimensions.
    pub fn score(&self, stored: Vectors<'_>) -> Result<f32, String> {
        let dims = self.values.len();
        let width = dims * 4;
        if usize::try_from(stored.dims).ok() != Some(dims) {
            return Err(format!(
                "its vectors have {} dimensions, the store's index {dims}: put the item again to embed it anew",
                stored.dims
            ));
        }
        if stored.bytes.is_empty() || !stored.bytes.len().is_multiple_of(width) {
            return Err(format!(
                "its vectors are {} bytes, not a whole number of {dims}-dimensional f32 vectors",
                stored.bytes.len()
            ));
        }
        Ok(stored
            .bytes
            .chunks_exact(width)
            .map(|vector| self.cosine(vector))
            .fold(f32::NEG_INFINITY, f32::max))
    }

    fn cosine(&self, vector: &[u8]) -> f32 {
        // Eight independent sums: the loop vectorizes.
        let mut dot = [0f32; 8];
        let mut norm = [0f32; 8];
        let mut query = self.values.chunks_exact(8);
        let mut stored = vector.chunks_exact(32);
        for (q, v) in query.by_ref().zip(stored.by_ref()) {
            for lane in 0..8 {
                let x = f32::from_le_bytes([
                    v[lane * 4],
                    v[lane * 4 + 1],
                    v[lane * 4 + 2],
                    v[lane * 4 + 3],
                ]);
                dot[lane] += q[lane] * x;
                norm[lane] += x * x;
            }
        }
        let (mut dot, mut norm) = (dot.iter().sum::<f32>(), norm.iter().sum::<f32>());
        for (q, v) in query
            .remainder()
            .iter()
            .zip(stored.remainder().chunks_exact(4))
        {
            let x = f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
            dot += q * x;
            norm += x * x;
        }
        let norms = self.norm * norm.sqrt();
        if norms > 0.0 { dot / norms } else { 0.0 }
    }
}

/// Where a candidate ranks: by score (highest first), then as a search
/// without a query orders (newest first, then namespace and key,
/// descending), so that ties fall the same way on every backend.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rank {
    pub score: f32,
    pub updated_at: i64,
    pub prefix: String,
    pub key: String,
}

impl Rank {
    /// `Less`: `self` ranks before `other`.
    fn cmp_borrowed(&self, score: f32, updated_at: i64, prefix: &str, key: &str) -> Ordering {
        score
            .total_cmp(&self.score)
            .then(updated_at.cmp(&self.updated_at))
            .then(prefix.cmp(&self.prefix))
            .then(key.cmp(&self.key))
    }
}

struct Entry<T> {
    rank: Rank,
    payload: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    /// Greater: ranks later (the heap's top is the worst kept).
    fn cmp(&self, other: &Self) -> Ordering {
        let o = &other.rank;
        self.rank
            .cmp_borrowed(o.score, o.updated_at, &o.prefix, &o.key)
    }
}

/// The best `capacity` candidates offered, in rank order.
pub(crate) struct TopK<T> {
    capacity: usize,
    heap: BinaryHeap<Entry<T>>,
}

impl<T> TopK<T> {
    pub fn new(capacity: usize) -> TopK<T> {
        TopK {
            capacity,
            heap: BinaryHeap::with_capacity(capacity.min(1024)),
        }
    }

    /// Keeps the candidate if it ranks among the best so far; `payload` is
    /// made only then.
    pub fn offer(
        &mut self,
        score: f32,
        updated_at: i64,
        prefix: &str,
        key: &str,
        payload: impl FnOnce() -> T,
    ) {
        if self.capacity == 0 {
            return;
        }
        if self.heap.len() == self.capacity {
            // No room when the worst kept ranks before this one.
            let worst = self.heap.peek().map(|e| &e.rank);
            if worst.is_some_and(|w| w.cmp_borrowed(score, updated_at, prefix, key).is_le()) {
                return;
            }
            self.heap.pop();
        }
        self.heap.push(Entry {
            rank: Rank {
                score,
                updated_at,
                prefix: prefix.to_owned(),
                key: key.to_owned(),
            },
            payload: payload(),
        });
    }

    /// The kept candidates, best first.
    pub fn into_sorted(self) -> Vec<(Rank, T)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| (e.rank, e.payload))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(vectors: &[Vec<f32>]) -> (i64, Vec<u8>) {
        (vectors[0].len() as i64, to_bytes(vectors))
    }

    #[test]
    fn cosine_is_the_best_of_an_items_vectors() {
        let query = QueryVector::new((0..19).map(|i| i as f32).collect());
        let same: Vec<f32> = (0..19).map(|i| i as f32 * 3.0).collect();
        let opposite: Vec<f32> = same.iter().map(|x| -x).collect();
        let (dims, bytes) = stored(&[opposite.clone(), same]);
        let score = query
            .score(Vectors {
                dims,
                bytes: &bytes,
            })
            .unwrap();
        assert!((score - 1.0).abs() < 1e-6, "{score}");
        let (dims, bytes) = stored(&[opposite]);
        let score = query
            .score(Vectors {
                dims,
                bytes: &bytes,
            })
            .unwrap();
        assert!((score + 1.0).abs() < 1e-6, "{score}");
        let (dims, bytes) = stored(&[vec![0.0; 19]]);
        assert_eq!(
            query
                .score(Vectors {
                    dims,
                    bytes: &bytes
                })
                .unwrap(),
            0.0
        );
    }

    #[test]
    fn vectors_that_do_not_fit_the_query_are_refused_with_a_reason() {
        let query = QueryVector::new(vec![1.0; 4]);
        let (dims, bytes) = stored(&[vec![1.0; 3]]);
        let err = query
            .score(Vectors {
                dims,
                bytes: &bytes,
            })
            .unwrap_err();
        assert!(err.contains("3 dimensions, the store's index 4"), "{err}");
        let err = query
            .score(Vectors {
                dims: 4,
                bytes: &bytes[..10],
            })
            .unwrap_err();
        assert!(err.contains("10 bytes"), "{err}");
        assert!(
            query
                .score(Vectors {
                    dims: 4,
                    bytes: &[]
                })
                .is_err()
        );
    }

    #[test]
    fn top_k_keeps_the_best_in_order_with_ties_broken_as_searches_order() {
        let mut top = TopK::new(3);
        for (score, at, key) in [
            (0.5, 1, "a"),
            (0.9, 1, "b"),
            (0.5, 2, "c"),
            (0.1, 9, "d"),
            (0.5, 2, "e"),
            (0.95, 0, "f"),
        ] {
            top.offer(score, at, "ns", key, || key);
        }
        let kept: Vec<&str> = top.into_sorted().into_iter().map(|(_, k)| k).collect();
        assert_eq!(kept, ["f", "b", "e"]);
        let mut none = TopK::new(0);
        none.offer(1.0, 0, "", "", || ());
        assert!(none.into_sorted().is_empty());
    }
}
