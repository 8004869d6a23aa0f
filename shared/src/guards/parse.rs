//! From tokens to a syntax tree in Python's shape: the reference reads a guard with
//! Python's expression grammar, so precedence, chained comparisons and the places
//! where `not` may stand follow Python. Constructs of Python that no guard may use
//! (arithmetic, lambdas, tuples, `is`, conditional expressions...) are refused
//! here; the rules of the guard language itself are checked in `check`.

use super::lex::Tok;
use super::{CmpOp, Literal, PYTHON_KEYWORDS as KEYWORDS};

/// How deeply brackets, `not` and minus signs may nest: deeper guards are refused
/// rather than risking the stack (Python itself stops at 200 open brackets).
const MAX_DEPTH: usize = 100;

/// A node of a guard's syntax tree, before the guard language's rules are checked.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    Or(Vec<Node>),
    And(Vec<Node>),
    Not(Box<Node>),
    /// A minus sign before an operand.
    Neg(Box<Node>),
    Compare(Box<Node>, Vec<(CmpOp, Node)>),
    Int(i128),
    Float(f64),
    Str(String),
    /// A literal of Python outside the language: `True`, `None`, bytes, ...
    OtherConst(&'static str),
    Name(String),
    List(Vec<Node>),
    /// `value[index]`.
    Subscript(Box<Node>, Box<Node>),
    /// `value.name`.
    Attribute(Box<Node>, String),
    /// `function(args)`; the flag says whether keyword arguments were given.
    Call(Box<Node>, Vec<Node>, bool),
}

impl Node {
    /// The value of a negative number such as `-5` or `-(2.5)`; None for anything
    /// else. Both the guard and the filter language take one as a literal.
    pub(super) fn negative_number(&self) -> Option<Literal> {
        match self {
            Node::Neg(inner) => match **inner {
                Node::Int(value) => Some(Literal::Int(-value)),
                Node::Float(value) => Some(Literal::Float(-value)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Operators of Python's arithmetic and bit operations.
const ARITHMETIC: [&str; 13] = [
    "+", "-", "*", "/", "//", "%", "**", "@", "|", "&", "^", "<<", ">>",
];

/// Parse a whole guard's tokens into one expression.
pub(super) fn parse(tokens: Vec<Tok>) -> Result<Node, String> {
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
    };
    if parser.tokens.is_empty() {
        return Err("it is empty".to_owned());
    }
    let node = parser.expression()?;
    match parser.peek() {
        None => Ok(node),
        Some(Tok::Op(",")) => Err("a tuple is not part of the guard language".to_owned()),
        Some(token) => Err(format!("{} is unexpected there", describe(token))),
    }
}

struct Parser {
    tokens: Vec<Tok>,
    at: usize,
    depth: usize,
}

/// A token as a message names it.
fn describe(token: &Tok) -> String {
    match token {
        Tok::Name(name) => format!("`{name}`"),
        Tok::Int(_) | Tok::Float(_) => "a number".to_owned(),
        Tok::Str(_) => "a string".to_owned(),
        Tok::Other(what) => (*what).to_owned(),
        Tok::Op(op) => format!("`{op}`"),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(found)) if *found == op)
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Tok::Name(found)) if found == word)
    }

    fn is_word_at(&self, ahead: usize, word: &str) -> bool {
        matches!(self.tokens.get(self.at + ahead), Some(Tok::Name(found)) if found == word)
    }

    fn next(&mut self) -> Option<Tok> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn expect_op(&mut self, op: &str) -> Result<(), String> {
        match self.next() {
            Some(Tok::Op(found)) if found == op => Ok(()),
            Some(token) => Err(format!("`{op}` is expected, not {}", describe(&token))),
            None => Err(format!("it ends where `{op}` is expected")),
        }
    }

    /// Enter one level of nesting, refusing guards nested too deeply.
    fn deeper(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("it nests more than {MAX_DEPTH} levels deep"));
        }
        Ok(())
    }

    /// A full expression: `or` of `and`s, refusing Python's other forms.
    fn expression(&mut self) -> Result<Node, String> {
        if self.is_word("lambda") {
            return Err("lambdas are not part of the guard language".to_owned());
        }
        let node = self.or_test()?;
        if self.is_word("if") {
            return Err(
                "conditional expressions (a if b else c) are not part of the guard language"
                    .to_owned(),
            );
        }
        if self.is_op(":=") {
            return Err("assignments (:=) are not part of the guard language".to_owned());
        }
        if self.is_word("for") || self.is_word("async") {
            return Err("comprehensions are not part of the guard language".to_owned());
        }
        Ok(node)
    }

    fn or_test(&mut self) -> Result<Node, String> {
        let first = self.and_test()?;
        let mut rest = Vec::new();
        while self.is_word("or") {
            self.at += 1;
            rest.push(self.and_test()?);
        }
        Ok(join(first, rest, Node::Or))
    }

    fn and_test(&mut self) -> Result<Node, String> {
        let first = self.not_test()?;
        let mut rest = Vec::new();
        while self.is_word("and") {
            self.at += 1;
            rest.push(self.not_test()?);
        }
        Ok(join(first, rest, Node::And))
    }

    fn not_test(&mut self) -> Result<Node, String> {
        if self.is_word("not") {
            self.at += 1;
            self.deeper()?;
            let operand = self.not_test()?;
            self.depth -= 1;
            return Ok(Node::Not(Box::new(operand)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Node, String> {
        let first = self.operand()?;
        let mut rest = Vec::new();
        while let Some(op) = self.comparison_operator()? {
            rest.push((op, self.operand()?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        Ok(Node::Compare(Box::new(first), rest))
    }

    /// The next comparison operator, consumed; None when none follows.
    fn comparison_operator(&mut self) -> Result<Option<CmpOp>, String> {
        let op = match self.peek() {
            Some(Tok::Op("<")) => CmpOp::Lt,
            Some(Tok::Op("<=")) => CmpOp::Le,
            Some(Tok::Op(">")) => CmpOp::Gt,
            Some(Tok::Op(">=")) => CmpOp::Ge,
            Some(Tok::Op("==")) => CmpOp::Eq,
            Some(Tok::Op("!=")) => CmpOp::Ne,
            Some(Tok::Name(word)) if word == "in" => CmpOp::In,
            Some(Tok::Name(word)) if word == "not" && self.is_word_at(1, "in") => {
                self.at += 1;
                CmpOp::NotIn
            }
            Some(Tok::Name(word)) if word == "is" => {
                return Err("compare with < <= > >= == != in or not in, not with `is`".to_owned())
            }
            Some(Tok::Op("<>")) => return Err("write != rather than <>".to_owned()),
            _ => return Ok(None),
        };
        self.at += 1;
        Ok(Some(op))
    }

    /// An operand of a comparison: a primary with an optional minus sign before it.
    fn operand(&mut self) -> Result<Node, String> {
        let node = self.unary()?;
        if let Some(Tok::Op(op)) = self.peek() {
            if ARITHMETIC.contains(op) {
                return Err("arithmetic is not part of the guard language".to_owned());
            }
        }
        Ok(node)
    }

    fn unary(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some(Tok::Op("-")) => {
                self.at += 1;
                self.deeper()?;
                let operand = self.unary()?;
                self.depth -= 1;
                if self.is_op("**") {
                    return Err("arithmetic is not part of the guard language".to_owned());
                }
                Ok(Node::Neg(Box::new(operand)))
            }
            Some(Tok::Op("+" | "~")) => Err(
                "only a minus sign may stand before a value, and only before a number".to_owned(),
            ),
            Some(Tok::Name(word)) if word == "await" => {
                Err("await is not part of the guard language".to_owned())
            }
            _ => self.primary(),
        }
    }

    /// An atom and what follows it: `.name`, `(args)`, `[index]`.
    fn primary(&mut self) -> Result<Node, String> {
        let mut node = self.atom()?;
        let outer = self.depth;
        loop {
            if matches!(self.peek(), Some(Tok::Op("." | "(" | "["))) {
                // Each trailer nests the tree one level more, like a bracket.
                self.deeper()?;
            }
            if self.is_op(".") {
                self.at += 1;
                match self.next() {
                    Some(Tok::Name(name)) if !KEYWORDS.contains(&name.as_str()) => {
                        node = Node::Attribute(Box::new(node), name);
                    }
                    _ => return Err("a dot must be followed by a name".to_owned()),
                }
            } else if self.is_op("(") {
                self.at += 1;
                let (args, keywords) = self.arguments()?;
                node = Node::Call(Box::new(node), args, keywords);
            } else if self.is_op("[") {
                self.at += 1;
                let index = self.index()?;
                node = Node::Subscript(Box::new(node), Box::new(index));
            } else {
                self.depth = outer;
                return Ok(node);
            }
        }
    }

    /// The arguments of a call, after its `(`, through its `)`.
    fn arguments(&mut self) -> Result<(Vec<Node>, bool), String> {
        self.deeper()?;
        let mut args = Vec::new();
        let mut keywords = false;
        while !self.is_op(")") {
            if self.is_op("*") || self.is_op("**") {
                return Err("star arguments are not part of the guard language".to_owned());
            }
            let keyword = matches!(self.peek(), Some(Tok::Name(_)))
                && matches!(self.tokens.get(self.at + 1), Some(Tok::Op("=")));
            if keyword {
                self.at += 2;
                keywords = true;
                self.expression()?;
            } else if keywords {
                return Err("an argument may not follow a keyword argument".to_owned());
            } else {
                args.push(self.expression()?);
            }
            if !self.is_op(",") {
                break;
            }
            self.at += 1;
        }
        self.expect_op(")")?;
        self.depth -= 1;
        Ok((args, keywords))
    }

    /// The index of a subscript, after its `[`, through its `]`.
    fn index(&mut self) -> Result<Node, String> {
        self.deeper()?;
        if self.is_op(":") {
            return Err("slices are not part of the guard language".to_owned());
        }
        let index = self.expression()?;
        if self.is_op(":") {
            return Err("slices are not part of the guard language".to_owned());
        }
        if self.is_op(",") {
            return Err("an index may not be a tuple".to_owned());
        }
        self.expect_op("]")?;
        self.depth -= 1;
        Ok(index)
    }

    fn atom(&mut self) -> Result<Node, String> {
        let Some(token) = self.next() else {
            return Err("it ends where a value is expected".to_owned());
        };
        match token {
            Tok::Int(value) => Ok(Node::Int(value)),
            Tok::Float(value) => Ok(Node::Float(value)),
            Tok::Str(first) => self.strings(first),
            Tok::Other(what) => self.other_literal(what),
            Tok::Name(name) => match name.as_str() {
                "True" => Ok(Node::OtherConst("True")),
                "False" => Ok(Node::OtherConst("False")),
                "None" => Ok(Node::OtherConst("None")),
                "lambda" => Err("lambdas are not part of the guard language".to_owned()),
                "yield" => Err("yield is not part of the guard language".to_owned()),
                word if KEYWORDS.contains(&word) => {
                    Err(format!("`{word}` is misplaced: a value is expected there"))
                }
                _ => Ok(Node::Name(name)),
            },
            Tok::Op("(") => self.parenthesized(),
            Tok::Op("[") => self.list(),
            Tok::Op("{") => {
                Err("dictionaries and sets are not part of the guard language".to_owned())
            }
            Tok::Op("...") => Ok(Node::OtherConst("Ellipsis")),
            Tok::Op(op) => Err(format!("`{op}` is misplaced: a value is expected there")),
        }
    }

    /// Python joins adjacent string literals into one: `'a' 'b'` is `'ab'`.
    fn strings(&mut self, mut text: String) -> Result<Node, String> {
        loop {
            match self.peek() {
                Some(Tok::Str(more)) => {
                    text.push_str(more);
                    self.at += 1;
                }
                Some(Tok::Other(what)) => {
                    let what = *what;
                    self.at += 1;
                    return self.other_literal(what);
                }
                _ => return Ok(Node::Str(text)),
            }
        }
    }

    /// A bytes literal, f-string or complex number, with any strings joined to it.
    fn other_literal(&mut self, what: &'static str) -> Result<Node, String> {
        while matches!(self.peek(), Some(Tok::Str(_) | Tok::Other(_))) {
            self.at += 1;
        }
        if what == "an f-string" {
            return Err("f-strings are not part of the guard language".to_owned());
        }
        Ok(Node::OtherConst(what))
    }

    /// After `(`: a parenthesized expression, through its `)`.
    fn parenthesized(&mut self) -> Result<Node, String> {
        self.deeper()?;
        if self.is_op(")") {
            return Err("a tuple is not part of the guard language".to_owned());
        }
        if self.is_word("yield") {
            return Err("yield is not part of the guard language".to_owned());
        }
        let node = self.expression()?;
        if self.is_op(",") {
            return Err("a tuple is not part of the guard language".to_owned());
        }
        self.expect_op(")")?;
        self.depth -= 1;
        Ok(node)
    }

    /// After `[`: a list display, through its `]`.
    fn list(&mut self) -> Result<Node, String> {
        self.deeper()?;
        let mut items = Vec::new();
        while !self.is_op("]") {
            if self.is_op("*") {
                return Err("star expressions are not part of the guard language".to_owned());
            }
            items.push(self.expression()?);
            if !self.is_op(",") {
                break;
            }
            self.at += 1;
        }
        self.expect_op("]")?;
        self.depth -= 1;
        Ok(Node::List(items))
    }
}

/// `first` alone, or `first` and `rest` joined by a boolean operator.
fn join(first: Node, rest: Vec<Node>, make: fn(Vec<Node>) -> Node) -> Node {
    if rest.is_empty() {
        return first;
    }
    let mut all = Vec::with_capacity(rest.len() + 1);
    all.push(first);
    all.extend(rest);
    make(all)
}
