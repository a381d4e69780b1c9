//! explain (in progress)
