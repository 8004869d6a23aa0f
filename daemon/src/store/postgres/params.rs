//! A statement's parameters, numbered as they are added: the one way the
//! Postgres modules write placeholders (`$1`, `$2`, ...) into SQL they build, so
//! that a placeholder's number is always its value's place.

use postgres::types::ToSql;

/// The values of one statement, in the order of their placeholders.
#[derive(Default)]
pub struct Params<'a> {
    values: Vec<Value<'a>>,
}

/// A value the statement owns, or one borrowed from the caller.
enum Value<'a> {
    Owned(Box<dyn ToSql + Sync + 'a>),
    Borrowed(&'a (dyn ToSql + Sync)),
}

impl<'a> Params<'a> {
    /// No values yet.
    pub fn new() -> Params<'a> {
        Params::default()
    }

    /// Add a value the statement keeps; its placeholder.
    pub fn add(&mut self, value: impl ToSql + Sync + 'a) -> String {
        self.values.push(Value::Owned(Box::new(value)));
        placeholder(self.values.len())
    }

    /// Add a value borrowed for the statement's run; its placeholder.
    pub fn add_ref(&mut self, value: &'a (dyn ToSql + Sync)) -> String {
        self.values.push(Value::Borrowed(value));
        placeholder(self.values.len())
    }

    /// The values, as the driver takes them.
    pub fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|value| match value {
                Value::Owned(boxed) => &**boxed as &(dyn ToSql + Sync),
                Value::Borrowed(value) => *value,
            })
            .collect()
    }
}

/// The placeholder of the `n`th parameter (from 1): `$n`.
pub fn placeholder(n: usize) -> String {
    format!("${n}")
}

#[cfg(test)]
mod tests {
    use super::Params;

    #[test]
    fn each_value_is_named_by_its_place() {
        let name = "a".to_string();
        let mut params = Params::new();
        assert_eq!(params.add(1_i64), "$1");
        assert_eq!(params.add_ref(&name), "$2");
        assert_eq!(params.add("b".to_string()), "$3");
        assert_eq!(params.refs().len(), 3);
    }
}
