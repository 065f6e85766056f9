//! The Windows backend (being written on its own branch; this file is replaced by it).
