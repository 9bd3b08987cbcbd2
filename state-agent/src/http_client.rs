//! The HTTP client the providers post with: reqwest over rustls with ring
//! (set on this client, not installed as the process's default provider)
//! and the system's certificates.

use crate::error::{ModelError, ModelErrorKind};
use std::fmt;
use std::sync::Arc;

/// A reqwest client for `provider`'s calls (errors name it).
pub(crate) fn client(provider: &str) -> Result<reqwest::Client, ModelError> {
    let fail = |what: &str, e: &dyn fmt::Display| {
        ModelError::new(provider, ModelErrorKind::Connection)
            .with_message(format!("cannot set up the HTTP client: {what}: {e}"))
    };
    let crypto = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(crypto.clone())
        .map_err(|e| fail("the system's certificates", &e))?;
    let tls = rustls::ClientConfig::builder_with_provider(crypto)
        .with_safe_default_protocol_versions()
        .map_err(|e| fail("TLS", &e))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    reqwest::Client::builder()
        .user_agent(concat!("state-agent/", env!("CARGO_PKG_VERSION")))
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|e| fail("reqwest", &e))
}
