//! The pure core: facts in, actions out, no I/O.
