//! Error tests.
