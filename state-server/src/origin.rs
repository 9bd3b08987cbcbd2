//! Whether a browser's request comes from this server's own pages: what
//! the inspector's writes and the protocol's WebSocket require, as a page
//! on another site can post a form or open a WebSocket without asking
//! (neither is governed by CORS).

use crate::error::ApiError;
use axum::http::{HeaderMap, header};

/// A write must come from a page of this server. A browser says where a
/// request comes from: `Sec-Fetch-Site` (every current browser), else
/// `Origin`, which must name this host; a form posted from another site is
/// refused even though it carries the cookie. A client that sends neither
/// is not a browser acting for another site (curl, a script).
pub(crate) fn same_origin(headers: &HeaderMap) -> Result<(), ApiError> {
    if let Some(site) = headers.get("sec-fetch-site") {
        return match site.as_bytes() {
            b"same-origin" | b"none" => Ok(()),
            _ => Err(ApiError::cross_origin()),
        };
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest);
    match (origin_host, host) {
        (Some(origin), Some(host)) if origin.eq_ignore_ascii_case(host) => Ok(()),
        // `Origin: null` too: a sandboxed or privacy-stripped request.
        _ => Err(ApiError::cross_origin()),
    }
}
