//! Integration tests for `state-core`; the tests are under `tests/`.
