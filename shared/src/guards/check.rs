//! The rules of the guard language, applied to a Python-shaped syntax tree: what
//! may be named, indexed, read with a dot, called and searched with `in`
//! (`docs/concepts/guards.md`). The result is the checked [`Expr`] tree
//! and what the guard reads.

use super::parse::Node;
use super::{ChildField, CmpOp, Expr, Literal, Quantifier, Reads};

/// Check a parsed guard; the error is the reason, without the guard's text.
pub(super) fn check(node: &Node) -> Result<(Expr, Reads), String> {
    let mut checker = Checker::default();
    let tree = checker.node(node, false)?;
    Ok((tree, checker.reads))
}

#[derive(Default)]
struct Checker {
    reads: Reads,
}

/// What `in` may search: a list display, or a value that an accessor reads.
/// A string literal is refused there, as in the reference.
fn searchable(node: &Node) -> bool {
    matches!(
        node,
        Node::List(_) | Node::Subscript(..) | Node::Attribute(..) | Node::Call(..)
    )
}

impl Checker {
    /// Check one node. `in_branch`: inside the condition of `branches.all(...)` or
    /// `branches.any(...)`, where the child's fields may be named.
    fn node(&mut self, node: &Node, in_branch: bool) -> Result<Expr, String> {
        match node {
            Node::Or(items) => Ok(Expr::Or(self.all(items, in_branch)?)),
            Node::And(items) => Ok(Expr::And(self.all(items, in_branch)?)),
            Node::Not(inner) => Ok(Expr::Not(Box::new(self.node(inner, in_branch)?))),
            Node::Neg(_) => node
                .negative_number()
                .map(Expr::Literal)
                .ok_or_else(|| "a minus sign may stand only before a number, as in -5".to_owned()),
            Node::Compare(first, rest) => self.compare(first, rest, in_branch),
            Node::Int(value) => Ok(Expr::Literal(Literal::Int(*value))),
            Node::Float(value) => Ok(Expr::Literal(Literal::Float(*value))),
            Node::Str(text) => Ok(Expr::Literal(Literal::Str(text.clone()))),
            Node::OtherConst(what) => Err(other_literal(what)),
            Node::List(items) => self.list(items, in_branch),
            Node::Name(name) => self.name(name, in_branch),
            Node::Subscript(value, index) => self.subscript(value, index),
            Node::Attribute(value, attr) => self.attribute(value, attr, in_branch),
            Node::Call(function, args, keywords) => self.call(function, args, *keywords, in_branch),
        }
    }

    fn all(&mut self, items: &[Node], in_branch: bool) -> Result<Vec<Expr>, String> {
        items
            .iter()
            .map(|item| self.node(item, in_branch))
            .collect()
    }

    fn compare(
        &mut self,
        first: &Node,
        rest: &[(CmpOp, Node)],
        in_branch: bool,
    ) -> Result<Expr, String> {
        for (op, searched) in rest {
            if matches!(op, CmpOp::In | CmpOp::NotIn) && !searchable(searched) {
                return Err(
                    "`in` must search a list literal or a value such as ctx['key'], \
                     not a string or a number"
                        .to_owned(),
                );
            }
        }
        let first = Box::new(self.node(first, in_branch)?);
        let rest = rest
            .iter()
            .map(|(op, operand)| Ok((*op, self.node(operand, in_branch)?)))
            .collect::<Result<_, String>>()?;
        Ok(Expr::Compare { first, rest })
    }

    fn list(&mut self, items: &[Node], in_branch: bool) -> Result<Expr, String> {
        let mut checked = Vec::with_capacity(items.len());
        for item in items {
            let literal = matches!(
                item,
                Node::Int(_) | Node::Float(_) | Node::Str(_) | Node::OtherConst(_) | Node::Name(_)
            );
            if !literal && item.negative_number().is_none() {
                return Err("a list may hold only literals, such as [1, 'a', null]".to_owned());
            }
            checked.push(self.node(item, in_branch)?);
        }
        Ok(Expr::List(checked))
    }

    fn name(&mut self, name: &str, in_branch: bool) -> Result<Expr, String> {
        let child = match name {
            "true" => return Ok(Expr::Literal(Literal::Bool(true))),
            "false" => return Ok(Expr::Literal(Literal::Bool(false))),
            "null" => return Ok(Expr::Literal(Literal::Null)),
            "workflow" => Some(ChildField::Workflow),
            "token" => Some(ChildField::Token),
            "status" => Some(ChildField::Status),
            "final" => Some(ChildField::Final),
            _ => None,
        };
        match (child, name) {
            (Some(field), _) if in_branch => Ok(Expr::ChildField(field)),
            (Some(_), _) => Err(format!(
                "'{name}' is a field of a child, readable only inside \
                 branches.all(...) or branches.any(...)"
            )),
            (None, "payload") => Err("read one field of the payload, e.g. payload.severity".into()),
            (None, "ctx") => Err("read one key of the context, e.g. ctx['key']".into()),
            (None, _) => Err(format!(
                "unknown name {}; a guard reads ctx['key'], payload.field and count('event')",
                crate::pyrepr::repr_str(name)
            )),
        }
    }

    fn subscript(&mut self, value: &Node, index: &Node) -> Result<Expr, String> {
        match (value, index) {
            (Node::Name(name), Node::Str(key)) if name == "ctx" => {
                self.reads.context_keys.insert(key.clone());
                Ok(Expr::Context(key.clone()))
            }
            _ => Err("only the context can be indexed, as ctx['key']".to_owned()),
        }
    }

    fn attribute(&mut self, value: &Node, attr: &str, in_branch: bool) -> Result<Expr, String> {
        match value {
            Node::Name(name) if name == "payload" && in_branch => {
                // A child's payload is not the routed event's: not among the reads.
                Ok(Expr::ChildPayload(attr.to_owned()))
            }
            Node::Name(name) if name == "payload" => {
                self.reads.payload_fields.insert(attr.to_owned());
                Ok(Expr::Payload(attr.to_owned()))
            }
            Node::Name(name) if name == "ctx" => {
                Err("the context is read as ctx['key'], not with a dot".to_owned())
            }
            _ => Err("only the payload can be read with a dot, as payload.field".to_owned()),
        }
    }

    fn call(
        &mut self,
        function: &Node,
        args: &[Node],
        keywords: bool,
        in_branch: bool,
    ) -> Result<Expr, String> {
        if matches!(function, Node::Name(name) if name == "count") {
            if keywords {
                return Err("count() takes the event's name and nothing else".to_owned());
            }
            let [Node::Str(event)] = args else {
                return Err(
                    "count() needs the event's name as a string, e.g. count('stuck')".into(),
                );
            };
            self.reads.events.insert(event.clone());
            return Ok(Expr::Count(event.clone()));
        }
        let quantifier = match function {
            Node::Attribute(owner, method) if **owner == Node::Name("branches".into()) => {
                match method.as_str() {
                    "all" => Some(Quantifier::All),
                    "any" => Some(Quantifier::Any),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some(quantifier) = quantifier else {
            return Err(
                "only count('event'), branches.all(...) and branches.any(...) can be called"
                    .to_owned(),
            );
        };
        match args {
            [condition] if !keywords && !in_branch => {
                self.reads.branches = true;
                let condition = Box::new(self.node(condition, true)?);
                Ok(Expr::Branches {
                    quantifier,
                    condition,
                })
            }
            _ => Err(
                "branches.all() and branches.any() take exactly one condition, \
                 and cannot be nested"
                    .to_owned(),
            ),
        }
    }
}

/// Why a Python literal outside the language is refused, with what to write.
fn other_literal(what: &str) -> String {
    match what {
        "True" => "True is not a literal of the guard language; write true".to_owned(),
        "False" => "False is not a literal of the guard language; write false".to_owned(),
        "None" => "None is not a literal of the guard language; write null".to_owned(),
        other => format!("{other} is not a literal of the guard language"),
    }
}
