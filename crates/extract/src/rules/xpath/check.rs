//! What [`compile`](super::compile) checks beyond the syntax: the
//! functions of XPath 1.0 and how many arguments each takes, no variables,
//! and no namespace prefixes, which no name on an HTML page has.

use xpath_eval::{Expr, FilterExpr, LocationPath, NodeTest, PathExpr, PrimaryExpr};

/// XPath 1.0's core function library, which is what `xpath-eval`
/// implements: name, least and most arguments.
const FUNCTIONS: [(&str, usize, usize); 27] = [
    ("last", 0, 0),
    ("position", 0, 0),
    ("count", 1, 1),
    ("id", 1, 1),
    ("local-name", 0, 1),
    ("namespace-uri", 0, 1),
    ("name", 0, 1),
    ("string", 0, 1),
    ("concat", 2, usize::MAX),
    ("starts-with", 2, 2),
    ("contains", 2, 2),
    ("substring-before", 2, 2),
    ("substring-after", 2, 2),
    ("substring", 2, 3),
    ("string-length", 0, 1),
    ("normalize-space", 0, 1),
    ("translate", 3, 3),
    ("boolean", 1, 1),
    ("not", 1, 1),
    ("true", 0, 0),
    ("false", 0, 0),
    ("lang", 1, 1),
    ("number", 0, 1),
    ("sum", 1, 1),
    ("floor", 1, 1),
    ("ceiling", 1, 1),
    ("round", 1, 1),
];

/// The checks `xpath-eval` would only make while evaluating (it accepts
/// any function name when parsing), and the name tests that cannot match
/// an HTML page.
pub(super) fn check_expr(e: &Expr) -> Result<(), String> {
    match e {
        Expr::Or(l, r)
        | Expr::And(l, r)
        | Expr::Equality(l, _, r)
        | Expr::Relational(l, _, r)
        | Expr::Additive(l, _, r)
        | Expr::Multiplicative(l, _, r)
        | Expr::Union(l, r) => {
            check_expr(l)?;
            check_expr(r)
        }
        Expr::Negate(e) => check_expr(e),
        Expr::Path(PathExpr::Location(loc)) => check_path(loc),
        Expr::Path(PathExpr::Filter(f)) => check_filter(f),
        Expr::Path(PathExpr::FilterLocation(f, loc)) => {
            check_filter(f)?;
            check_path(loc)
        }
    }
}

fn check_filter(f: &FilterExpr) -> Result<(), String> {
    match &f.primary {
        PrimaryExpr::Variable(name) => {
            return Err(format!("`${}`: rules have no variables", name.local));
        }
        PrimaryExpr::Parenthesized(e) => check_expr(e)?,
        PrimaryExpr::Literal(_) | PrimaryExpr::Number(_) => {}
        PrimaryExpr::Function(call) => {
            let name = match &call.name.prefix {
                Some(p) => format!("{p}:{}", call.name.local),
                None => call.name.local.clone(),
            };
            let known = FUNCTIONS.iter().find(|(n, ..)| call.name.prefix.is_none() && *n == name);
            let Some(&(_, least, most)) = known else {
                return Err(format!(
                    "unknown function `{name}()` (XPath 1.0 has `contains()`, `normalize-space()`, …)"
                ));
            };
            let got = call.args.len();
            if got < least || got > most {
                let takes = match (least, most) {
                    (l, m) if l == m => format!("{l}"),
                    (l, usize::MAX) => format!("at least {l}"),
                    (l, m) => format!("{l} or {m}"),
                };
                return Err(format!("`{name}()` takes {takes} argument(s), not {got}"));
            }
            call.args.iter().try_for_each(check_expr)?;
        }
    }
    f.predicates.iter().try_for_each(check_expr)
}

fn check_path(loc: &LocationPath) -> Result<(), String> {
    for step in &loc.steps {
        match &step.node_test {
            NodeTest::QName(q) => {
                if let Some(p) = &q.prefix {
                    return Err(format!(
                        "`{p}:{}`: names on an HTML page have no namespace prefix; write `{}`",
                        q.local, q.local
                    ));
                }
            }
            NodeTest::NamespaceWildcard(p) => {
                return Err(format!("`{p}:*`: names on an HTML page have no namespace prefix; write `*`"));
            }
            _ => {}
        }
        step.predicates.iter().try_for_each(check_expr)?;
    }
    Ok(())
}
