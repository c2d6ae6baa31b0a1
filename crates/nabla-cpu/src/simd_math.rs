//! (being written) vectorisable math functions.
