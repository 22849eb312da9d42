//! Why a link is noise: the `links` table's `noise` column
//! (docs/src/output.md). The crawl works with [`NoiseLabel`]; the
//! strings exist only in the Parquet files, written by
//! [`NoiseLabel::as_str`] and read back by
//! [`NoiseLabel::from_str`](std::str::FromStr::from_str).

use std::fmt;
use std::str::FromStr;

/// The noise label of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoiseLabel {
    /// `rel="nofollow"` on the link, or a robots meta tag of its page.
    Nofollow,
    /// The target is outside `--scope`.
    Scope,
    /// A suspect: the link sits in a navigation block (the DOM prefilter);
    /// followed unless `--denoise strict`.
    DomRatio,
    /// The target's URL template led to barren pages (evidence).
    Barren,
    /// LCS clustering judged the target noise.
    LcsCluster,
    /// The target is a crawler trap (ever-deeper path, query explosion).
    Trap,
    /// The rule that matched the page does not follow this link (its
    /// `follow`, `deny`, `scopes` or `max_depth`; docs/src/rules.md).
    Rule,
}

impl NoiseLabel {
    /// Every label, in declaration order.
    pub const ALL: [Self; 7] =
        [Self::Nofollow, Self::Scope, Self::DomRatio, Self::Barren, Self::LcsCluster, Self::Trap, Self::Rule];

    /// The stable name written to the `noise` column.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nofollow => "nofollow",
            Self::Scope => "scope",
            Self::DomRatio => "dom_ratio",
            Self::Barren => "barren",
            Self::LcsCluster => "lcs_cluster",
            Self::Trap => "trap",
            Self::Rule => "rule",
        }
    }

    /// A label the optimise step gives a link's target (recomputed when the
    /// step runs again), as opposed to one set when the page was parsed.
    #[must_use]
    pub fn from_optimise(self) -> bool {
        matches!(self, Self::Barren | Self::LcsCluster | Self::Trap)
    }

    /// The noise filter's verdicts, which `--denoise mark` records but
    /// still follows; traps and hard labels are never followed.
    #[must_use]
    pub fn followed_when_marked(self) -> bool {
        matches!(self, Self::Barren | Self::LcsCluster)
    }
}

impl fmt::Display for NoiseLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `noise` value that names no label (a damaged or foreign file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown noise label `{0}`")]
pub struct UnknownLabel(pub String);

impl FromStr for NoiseLabel {
    type Err = UnknownLabel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // A match, not a search of `ALL`: this runs for every link read back.
        Ok(match s {
            "nofollow" => Self::Nofollow,
            "scope" => Self::Scope,
            "dom_ratio" => Self::DomRatio,
            "barren" => Self::Barren,
            "rule" => Self::Rule,
            "lcs_cluster" => Self::LcsCluster,
            "trap" => Self::Trap,
            _ => return Err(UnknownLabel(s.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_stay_as_documented() {
        for l in NoiseLabel::ALL {
            assert_eq!(l.as_str().parse::<NoiseLabel>(), Ok(l));
        }
        // The book's vocabulary (docs/src/output.md): these strings are in users' files.
        let names: Vec<&str> = NoiseLabel::ALL.iter().map(|l| l.as_str()).collect();
        assert_eq!(names, ["nofollow", "scope", "dom_ratio", "barren", "lcs_cluster", "trap", "rule"]);
        assert_eq!("robots".parse::<NoiseLabel>(), Err(UnknownLabel("robots".into())));
    }
}
