//! Semantic search's configuration (LangGraph's `index=`): the embedding
//! function a program supplies, the vectors' dimensions, and the fields of
//! each item to embed.

use super::paths::FieldPath;
use crate::error::{BoxError, StoreError};
use futures::future::BoxFuture;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// Turns texts into vectors: one vector per text, in order, each of the
/// index's dimensions. What calls an embedding model (LangChain's
/// `Embeddings`).
///
/// Implemented for every async function or closure
/// `Fn(Vec<String>) -> impl Future<Output = Result<Vec<Vec<f32>>, E>>`
/// whose error converts into a boxed error (any `std::error::Error`,
/// `String`, `Infallible`), so a closure is enough:
///
/// ```
/// use state_store::IndexConfig;
///
/// // A toy model: a text's length and its count of spaces.
/// let index = IndexConfig::new(2, |texts: Vec<String>| async move {
///     Ok::<_, std::convert::Infallible>(
///         texts
///             .iter()
///             .map(|t| vec![t.len() as f32, t.matches(' ').count() as f32])
///             .collect(),
///     )
/// });
/// assert_eq!(index.dims(), 2);
/// ```
pub trait Embeddings: Send + Sync + 'static {
    /// The vectors of `texts`, one per text, in order.
    fn embed(&self, texts: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>, BoxError>>;
}

impl<F, Fut, E> Embeddings for F
where
    F: Fn(Vec<String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Vec<f32>>, E>> + Send + 'static,
    E: Into<BoxError>,
{
    fn embed(&self, texts: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>, BoxError>> {
        let vectors = self(texts);
        Box::pin(async move { vectors.await.map_err(Into::into) })
    }
}

/// How a store indexes items for search by meaning (LangGraph's
/// `IndexConfig`): the embedding function, the vectors' dimensions, and
/// the fields to embed (by default `"$"`, the whole value). Set it with
/// [`Store::with_index`](crate::Store::with_index).
///
/// Fields are LangGraph's paths: `"text"`, `"metadata.title"`,
/// `"messages[*].content"` (each element embedded on its own),
/// `"authors[0].name"`, `"revisions[-1]"`, `"{title,summary}"`, `"$"`. An
/// item may embed to several vectors; it ranks by the best of them.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// use state_store::{IndexConfig, Store};
///
/// // A toy model: how often a text says "cat" and "dog".
/// let embed = |texts: Vec<String>| async move {
///     Ok::<_, std::convert::Infallible>(
///         texts
///             .iter()
///             .map(|t| vec![t.matches("cat").count() as f32, t.matches("dog").count() as f32])
///             .collect(),
///     )
/// };
/// let store = Store::memory().with_index(IndexConfig::new(2, embed).fields(["text"]));
/// store.put_item(&["notes"], "a", json!({"text": "the dog barked"})).await?;
/// store.put_item(&["notes"], "b", json!({"text": "a cat, another cat"})).await?;
///
/// let found = store.search_items(&["notes"]).query("cat food").await?;
/// assert_eq!(found[0].key, "b");
/// assert!(found[0].score.unwrap() > found[1].score.unwrap());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct IndexConfig {
    dims: usize,
    embed: Arc<dyn Embeddings>,
    fields: Vec<(String, FieldPath)>,
}

impl IndexConfig {
    /// An index of `dims`-dimensional vectors made by `embed`, embedding
    /// each item's whole value.
    pub fn new(dims: usize, embed: impl Embeddings) -> IndexConfig {
        IndexConfig {
            dims,
            embed: Arc::new(embed),
            fields: vec![("$".to_owned(), FieldPath::Whole)],
        }
    }

    /// Embeds these fields of each item instead of the whole value (a put
    /// can still choose its own, see
    /// [`PutItem::index_fields`](crate::PutItem::index_fields)).
    pub fn fields<I, S>(mut self, fields: I) -> IndexConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.fields = parse_fields(fields);
        self
    }

    /// The vectors' dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The fields embedded by default.
    pub(crate) fn default_fields(&self) -> &[(String, FieldPath)] {
        &self.fields
    }

    /// The vectors of `texts`, checked: one per text, each of the index's
    /// dimensions, every number finite. `what` names what is embedded,
    /// for errors.
    pub(crate) async fn embed(
        &self,
        texts: Vec<String>,
        what: &(dyn Fn() -> String + Sync),
    ) -> Result<Vec<Vec<f32>>, StoreError> {
        let error = |detail: String, source: Option<BoxError>| StoreError::Embedding {
            what: what(),
            detail,
            source,
        };
        if self.dims == 0 {
            return Err(error(
                "the index has 0 dimensions; give IndexConfig::new the model's".to_owned(),
                None,
            ));
        }
        let count = texts.len();
        let vectors = self
            .embed
            .embed(texts)
            .await
            .map_err(|e| error("the embedding function failed".to_owned(), Some(e)))?;
        if vectors.len() != count {
            return Err(error(
                format!(
                    "the embedding function returned {} vectors for {count} texts; expected one per text",
                    vectors.len()
                ),
                None,
            ));
        }
        for (i, vector) in vectors.iter().enumerate() {
            if vector.len() != self.dims {
                return Err(error(
                    format!(
                        "vector {i} has {} dimensions; the index has {}",
                        vector.len(),
                        self.dims
                    ),
                    None,
                ));
            }
            if let Some(bad) = vector.iter().find(|x| !x.is_finite()) {
                return Err(error(
                    format!("vector {i} holds {bad}; expected finite numbers"),
                    None,
                ));
            }
        }
        Ok(vectors)
    }
}

/// Paths as LangGraph reads them (`"$"` is the whole value).
pub(crate) fn parse_fields<I, S>(fields: I) -> Vec<(String, FieldPath)>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    fields
        .into_iter()
        .map(|field| {
            let field = field.into();
            let path = FieldPath::parse(&field);
            (field, path)
        })
        .collect()
}

impl fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fields: Vec<&str> = self.fields.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("IndexConfig")
            .field("dims", &self.dims)
            .field("fields", &fields)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(answer: Vec<Vec<f32>>) -> IndexConfig {
        IndexConfig::new(2, move |_texts: Vec<String>| {
            let answer = answer.clone();
            async move { Ok::<_, String>(answer) }
        })
    }

    async fn err(index: IndexConfig, texts: usize) -> String {
        let texts = vec!["t".to_owned(); texts];
        index
            .embed(texts, &|| "embedding item \"k\"".to_owned())
            .await
            .unwrap_err()
            .to_string()
    }

    #[tokio::test]
    async fn the_functions_answers_are_checked() {
        assert_eq!(
            err(index(vec![vec![1.0, 2.0]]), 2).await,
            "embedding item \"k\": the embedding function returned 1 vectors for 2 texts; expected one per text"
        );
        assert_eq!(
            err(index(vec![vec![1.0]]), 1).await,
            "embedding item \"k\": vector 0 has 1 dimensions; the index has 2"
        );
        assert!(
            err(index(vec![vec![1.0, f32::NAN]]), 1)
                .await
                .contains("NaN")
        );
        let failing = IndexConfig::new(2, |_: Vec<String>| async {
            Err::<Vec<Vec<f32>>, _>("model offline")
        });
        let e = failing
            .embed(vec!["t".into()], &|| "q".into())
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "q: the embedding function failed");
        assert_eq!(
            std::error::Error::source(&e).unwrap().to_string(),
            "model offline"
        );
        assert!(
            err(
                IndexConfig::new(0, |_: Vec<String>| async { Ok::<_, String>(vec![]) }),
                1
            )
            .await
            .contains("0 dimensions")
        );
    }

    #[test]
    fn debug_shows_the_configuration() {
        let index = index(vec![]).fields(["text", "tags[*]"]);
        assert_eq!(
            format!("{index:?}"),
            "IndexConfig { dims: 2, fields: [\"text\", \"tags[*]\"], .. }"
        );
    }
}
