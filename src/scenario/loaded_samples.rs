//! What a `samples_file` holds once read: plain data, so the file format's types can carry it.

/// The values of one `samples_file`, as read when the scenario was loaded
/// (`scenario/samples.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSamples {
    /// In file order (the distribution sorts its own copy).
    pub values: std::sync::Arc<[f64]>,
    /// FNV-1a of the file's bytes, 16 hex digits.
    pub digest: String,
    /// The path as read (the scenario's folder joined with the field's value).
    pub path: String,
}
