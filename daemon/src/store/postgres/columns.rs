//! Rows as arrays of columns: the one way a table's module packs the rows that wait
//! for the flush (`pending.rs`) into the parameters of its part, each an array that
//! `unnest` turns back into rows. A table writes its columns once, in the order of
//! its part's parameters ([`Columns::of`]); their types follow from the values.

use postgres::types::ToSql;

/// A value one column holds, and where [`Columns`] keeps the columns of its type.
pub trait Cell: Sized {
    /// The type's place in [`Columns`].
    const KIND: Kind;
    /// The columns of this type.
    fn columns(columns: &mut Columns) -> &mut Vec<Vec<Self>>;
}

/// For each type a column may hold, its [`Kind`], the field of [`Columns`] that
/// holds its columns, and the parameters in order.
macro_rules! cells {
    ($($type:ty => $kind:ident($field:ident)),* $(,)?) => {
        /// The type of one column: which field of [`Columns`] holds it.
        #[derive(Debug, Clone, Copy)]
        pub enum Kind {
            $(
                #[doc = concat!("`", stringify!($type), "`.")]
                $kind,
            )*
        }

        $(
            impl Cell for $type {
                const KIND: Kind = Kind::$kind;
                fn columns(columns: &mut Columns) -> &mut Vec<Vec<Self>> {
                    &mut columns.$field
                }
            }
        )*

        impl Columns {
            /// Add the parameters, as the driver takes them, in the part's order.
            pub fn params<'c>(&'c self, into: &mut Vec<&'c (dyn ToSql + Sync)>) {
                for &(kind, index) in &self.order {
                    into.push(match kind {
                        $(Kind::$kind => &self.$field[index],)*
                    });
                }
            }
        }
    };
}

cells! {
    i64 => Int(int),
    String => Text(text),
    Option<i64> => MaybeInt(maybe_int),
    Option<String> => MaybeText(maybe_text),
}

/// Rows of one kind as arrays of columns, each array in the order of the rows.
#[derive(Debug, Default)]
pub struct Columns {
    int: Vec<Vec<i64>>,
    text: Vec<Vec<String>>,
    maybe_int: Vec<Vec<Option<i64>>>,
    maybe_text: Vec<Vec<Option<String>>>,
    /// Each column in the part's order: its type, and its place among that type's.
    order: Vec<(Kind, usize)>,
}

impl Columns {
    /// The columns of `rows`, each row's cells given by `cells` in the part's order
    /// (the same cells for every row); `None` when there are no rows.
    pub fn of<R>(
        rows: impl IntoIterator<Item = R>,
        mut cells: impl FnMut(&mut Cells<'_>, R),
    ) -> Option<Columns> {
        let mut columns = Columns::default();
        let mut any = false;
        for row in rows {
            any = true;
            cells(
                &mut Cells {
                    columns: &mut columns,
                    at: 0,
                },
                row,
            );
        }
        any.then_some(columns)
    }

    /// Add a whole column after the rows' columns: a parameter of its own,
    /// which may be shorter than theirs (a part that groups its rows says
    /// where each group's rows are).
    pub fn put_column<V: Cell>(&mut self, values: Vec<V>) {
        let index = V::columns(self).len();
        V::columns(self).push(values);
        self.order.push((V::KIND, index));
    }
}

/// The cells of one row, put in the order of the part's parameters.
pub struct Cells<'c> {
    columns: &'c mut Columns,
    /// The next cell's column.
    at: usize,
}

impl Cells<'_> {
    /// The next cell of the row.
    pub fn put<V: Cell>(&mut self, value: V) -> &mut Self {
        if self.columns.order.len() == self.at {
            // The first row: each cell starts its column.
            let index = V::columns(self.columns).len();
            V::columns(self.columns).push(Vec::new());
            self.columns.order.push((V::KIND, index));
        }
        let (_, index) = self.columns.order[self.at];
        V::columns(self.columns)[index].push(value);
        self.at += 1;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::Columns;

    #[test]
    fn each_column_is_one_parameter_in_the_order_the_cells_were_put() {
        let rows = [(1_i64, "a", None), (2, "b", Some(7_i64))];
        let columns = Columns::of(rows, |cells, (id, name, maybe)| {
            cells.put(id).put(name.to_string()).put(maybe);
        })
        .unwrap();
        let mut params = Vec::new();
        columns.params(&mut params);
        assert_eq!(params.len(), 3);
        assert_eq!(columns.int, vec![vec![1, 2]]);
        assert_eq!(columns.text, vec![vec!["a".to_string(), "b".to_string()]]);
        assert_eq!(columns.maybe_int, vec![vec![None, Some(7)]]);
        assert!(Columns::of(Vec::<i64>::new(), |cells, id| {
            cells.put(id);
        })
        .is_none());
    }
}
