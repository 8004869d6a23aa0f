//! The compiler: from a workflow to a graph file, with every check of the
//! reference (SPEC section 3.1).

pub mod overlap;
