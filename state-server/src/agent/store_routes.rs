//! The long-term store's routes, as the Agent Server answers them: `PUT`,
//! `GET` and `DELETE /store/items`, `POST /store/items/search` and
//! `POST /store/namespaces`, on the store's items (the item store graphs
//! reach through `ctx.store()`).

use super::body::Body;
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Query;
use crate::routes::App;
use axum::Json;
use axum::extract::State as Shared;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use state_store::StoreError;

/// Whether `owner` (none: any) may use `namespace`: an identity's
/// namespaces begin with its id.
fn owns(owner: &Owner, namespace: &[impl AsRef<str>]) -> bool {
    owner.as_deref().is_none_or(|owner| {
        namespace
            .first()
            .is_some_and(|first| first.as_ref() == owner)
    })
}

/// A write outside the identity's namespaces: 403 (a write says nothing
/// of what is stored).
fn not_yours(owner: &Owner) -> ApiError {
    ApiError::forbidden(format!(
        "namespace: an identity's items are under namespaces that begin with its id \
         ([\"{}\", ..])",
        owner.as_deref().unwrap_or_default()
    ))
}

/// A read's namespace prefix for `owner`: the prefix asked for when it is
/// theirs (or begins nothing: then theirs), `None` when it names another's.
fn scoped(owner: &Owner, prefix: &[String]) -> Option<Vec<String>> {
    match owner.as_deref() {
        None => Some(prefix.to_vec()),
        Some(owner) if prefix.is_empty() => Some(vec![owner.to_owned()]),
        Some(_) if owns(owner, prefix) => Some(prefix.to_vec()),
        Some(_) => None,
    }
}

/// The field of a request a store refusal is about.
#[derive(Clone, Copy)]
struct Fields {
    /// The field holding the namespace (or the prefix).
    namespace: &'static str,
    /// The field an `InvalidItem` is about, by the store's reason and
    /// what it names.
    item: fn(what: &str, reason: &str) -> &'static str,
}

/// A store error from a bad namespace, key, value, filter or query is
/// the request's fault: a 422 whose detail begins with the field.
fn refused(error: StoreError, fields: Fields) -> ApiError {
    let field = match &error {
        StoreError::InvalidNamespace { .. } => fields.namespace,
        StoreError::InvalidItem { what, reason } => (fields.item)(what, reason),
        _ => return ApiError::from(error),
    };
    ApiError::invalid_body(format!("{field}: {error}"))
}

/// An item's namespace and key or value, as a put, get or delete names
/// them (the store's key reasons begin "a key").
const ITEM: Fields = Fields {
    namespace: "namespace",
    item: |_, reason| {
        if reason.starts_with("a key") {
            "key"
        } else {
            "value"
        }
    },
};

/// `PUT /store/items`'s body.
#[derive(Deserialize)]
pub(crate) struct Put {
    namespace: Vec<String>,
    key: String,
    value: Map<String, Value>,
    /// `false` to keep it out of the semantic index; a list of fields to
    /// index only those.
    #[serde(default)]
    index: Option<Value>,
}

/// `PUT /store/items`: stores (or replaces) an item; 204.
pub(crate) async fn put(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(put): Body<Put>,
) -> Result<StatusCode, ApiError> {
    if !owns(&owner, &put.namespace) {
        return Err(not_yours(&owner));
    }
    let mut request = app
        .store
        .put_item(&put.namespace, &put.key, Value::Object(put.value));
    match put.index {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => request = request.no_index(),
        Some(Value::Array(fields)) => {
            let fields: Option<Vec<String>> = fields
                .iter()
                .map(|f| f.as_str().map(str::to_owned))
                .collect();
            let fields = fields.ok_or_else(|| {
                ApiError::invalid_body("index: expected false or a list of field names")
            })?;
            request = request.index_fields(fields);
        }
        Some(_) => {
            return Err(ApiError::invalid_body(
                "index: expected false or a list of field names",
            ));
        }
    }
    request.await.map_err(|error| refused(error, ITEM))?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /store/items`'s query: the namespace dotted (`users.u1`).
#[derive(Deserialize)]
pub(crate) struct GetQuery {
    namespace: String,
    key: String,
}

/// `GET /store/items?namespace=a.b&key=k`: the item, or 404.
pub(crate) async fn get(
    Shared(app): Shared<App>,
    owner: Owner,
    Query(query): Query<GetQuery>,
) -> Result<Json<Value>, ApiError> {
    let namespace: Vec<&str> = query.namespace.split('.').collect();
    let item = match owns(&owner, &namespace) {
        true => app
            .store
            .get_item(&namespace[..], &query.key)
            .await
            .map_err(|error| refused(error, ITEM))?,
        // Another's item is as absent.
        false => None,
    };
    let item = item.ok_or_else(|| {
        ApiError::missing(format!("Item {}/{} not found", query.namespace, query.key))
    })?;
    Ok(Json(serde_json::to_value(item).unwrap_or(Value::Null)))
}

/// `DELETE /store/items`'s body.
#[derive(Deserialize)]
pub(crate) struct Delete {
    namespace: Vec<String>,
    key: String,
}

/// `DELETE /store/items`: 204, whether or not it was there (as LangGraph).
pub(crate) async fn delete(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(delete): Body<Delete>,
) -> Result<StatusCode, ApiError> {
    if !owns(&owner, &delete.namespace) {
        return Err(not_yours(&owner));
    }
    app.store
        .delete_item(&delete.namespace, &delete.key)
        .await
        .map_err(|error| refused(error, ITEM))?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /store/items/search`'s body.
#[derive(Deserialize)]
pub(crate) struct Search {
    #[serde(default)]
    namespace_prefix: Vec<String>,
    #[serde(default)]
    filter: Option<Map<String, Value>>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    query: Option<String>,
}

/// `POST /store/items/search`: `{"items": [..]}`, each with its `score`
/// (`null` without a `query`).
pub(crate) async fn search(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(search): Body<Search>,
) -> Result<Json<Value>, ApiError> {
    let Some(prefix) = scoped(&owner, &search.namespace_prefix) else {
        return Ok(Json(json!({ "items": [] })));
    };
    let mut request = app
        .store
        .search_items(&prefix)
        .limit(search.limit.unwrap_or(10).clamp(1, 1000))
        .offset(search.offset.unwrap_or(0));
    if let Some(filter) = search.filter {
        request = request.filter(Value::Object(filter));
    }
    if let Some(query) = search.query {
        request = request.query(query);
    }
    // The store names a filter's errors "search filter ..", a query's
    // "search of ..".
    let fields = Fields {
        namespace: "namespace_prefix",
        item: |what, _| {
            if what.starts_with("search filter") {
                "filter"
            } else {
                "query"
            }
        },
    };
    let items = request.await.map_err(|error| refused(error, fields))?;
    Ok(Json(json!({ "items": items })))
}

/// `POST /store/namespaces`'s body.
#[derive(Deserialize)]
pub(crate) struct Namespaces {
    #[serde(default)]
    prefix: Vec<String>,
    #[serde(default)]
    suffix: Option<Vec<String>>,
    #[serde(default)]
    max_depth: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

/// `POST /store/namespaces`: `{"namespaces": [[..], ..]}`.
pub(crate) async fn namespaces(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(body): Body<Namespaces>,
) -> Result<Json<Value>, ApiError> {
    let Some(prefix) = scoped(&owner, &body.prefix) else {
        return Ok(Json(json!({ "namespaces": [] })));
    };
    let mut request = app
        .store
        .list_namespaces(&prefix)
        .limit(body.limit.unwrap_or(100).clamp(1, 1000))
        .offset(body.offset.unwrap_or(0));
    if let Some(suffix) = &body.suffix {
        request = request.suffix(suffix);
    }
    if let Some(depth) = body.max_depth {
        request = request.max_depth(depth);
    }
    let namespaces = request.await.map_err(|error| match &error {
        // The prefix's labels are checked first, then the suffix's.
        StoreError::InvalidNamespace { namespace, .. } if *namespace != format!("{prefix:?}") => {
            ApiError::invalid_body(format!("suffix: {error}"))
        }
        _ => refused(
            error,
            Fields {
                namespace: "prefix",
                item: |_, _| "prefix",
            },
        ),
    })?;
    Ok(Json(json!({ "namespaces": namespaces })))
}
