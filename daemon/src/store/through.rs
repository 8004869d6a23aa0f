//! How a transaction that keeps facts of its own (`cached_tx.rs`) reaches the table
//! methods it does not keep facts of: each such trait is written once, inside
//! [`passed_through!`], which also implements it for every [`Through`] transaction
//! by passing each call, unchanged, to the transaction beneath. A method added to
//! such a trait is then written in three places only: the trait, SQLite's and
//! Postgres's.

use super::Tx;

/// A transaction over another one, to which it passes every method of the traits
/// written with [`passed_through!`].
pub trait Through {
    /// The transaction beneath.
    fn through(&self) -> &dyn Tx;
}

/// A table trait whose methods a [`Through`] transaction passes to the one beneath:
/// the trait as written, and its implementation for every `Through` transaction.
/// Each method takes `&self` and named arguments, and returns a value.
macro_rules! passed_through {
    (
        $(#[$meta:meta])*
        pub trait $name:ident {
            $(
                $(#[$method_meta:meta])*
                fn $method:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty;
            )*
        }
    ) => {
        $(#[$meta])*
        pub trait $name {
            $(
                $(#[$method_meta])*
                fn $method(&self $(, $arg: $ty)*) -> $ret;
            )*
        }

        impl<T: $crate::store::through::Through + ?Sized> $name for T {
            $(
                fn $method(&self $(, $arg: $ty)*) -> $ret {
                    self.through().$method($($arg),*)
                }
            )*
        }
    };
}

pub(crate) use passed_through;
