//! Support for proptest mutation fuzzing, shared by the test binaries of nabla-data and nabla-nn
//! (the latter includes this file with `#[path]`): the configuration, edits of valid byte strings
//! (bit flips, byte insertions and deletions, truncation, and overwrites with the values that each
//! caller finds interesting for its format), and dimensions to substitute into text headers.

use proptest::prelude::*;
use proptest::sample::{Index, select};

/// The proptest configuration: `NABLA_FUZZ_CASES` cases (default 256), no regression files (a
/// failure becomes a named test).
pub fn config() -> ProptestConfig {
    let cases = std::env::var("NABLA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Flips bit `1` of the byte at `0`.
    Flip(Index, u8),
    /// Inserts a byte.
    Insert(Index, u8),
    /// Deletes a byte.
    Delete(Index),
    /// Cuts the input.
    Truncate(Index),
    /// Overwrites bytes with an interesting value.
    Overwrite(Index, &'static [u8]),
}

/// Any one mutation, overwriting with one of `interesting`.
fn mutation(interesting: &'static [&'static [u8]]) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<Index>().prop_map(Mutation::Delete),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), select(interesting)).prop_map(|(i, v)| Mutation::Overwrite(i, v)),
    ]
}

/// One to three mutations, overwriting with `interesting`.
pub fn mutations(interesting: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(interesting), 1..4)
}

/// `bytes` with `mutations` applied in order.
pub fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len();
        match *m {
            Mutation::Flip(i, bit) if len > 0 => bytes[i.index(len)] ^= 1 << bit,
            Mutation::Insert(i, b) => bytes.insert(i.index(len + 1), b),
            Mutation::Delete(i) if len > 0 => {
                bytes.remove(i.index(len));
            }
            Mutation::Truncate(i) => bytes.truncate(i.index(len + 1)),
            Mutation::Overwrite(i, v) if len > 0 => {
                let at = i.index(len);
                let end = (at + v.len()).min(len);
                bytes[at..end].copy_from_slice(&v[..end - at]);
            }
            _ => {}
        }
    }
    bytes
}

/// Dimensions as text for a header: small (0 to 3), or one of `special` (too large, negative,
/// malformed), each half the time.
pub fn text_dim(special: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..4).prop_map(|d| d.to_string()),
        select(special).prop_map(str::to_string),
    ]
}
