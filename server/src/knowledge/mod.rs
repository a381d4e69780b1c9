//! knowledge (in progress)
