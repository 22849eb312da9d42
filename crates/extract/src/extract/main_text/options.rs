//! The main text's options: how it is rendered (`--text-format`) and which
//! of the two text columns a crawl fills (`--store-text`).

/// How the main text is rendered (`--text-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextFormat {
    /// One line per paragraph, heading, list item or cell.
    #[default]
    Plain,
    /// The same lines, with Markdown's marks for headings (`#`), list
    /// items (`- `), quotes (`> `) and code blocks (fenced).
    Markdown,
}

impl std::str::FromStr for TextFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "plain" => Ok(Self::Plain),
            "markdown" => Ok(Self::Markdown),
            _ => Err(format!("{s:?} is not a text format; allowed: plain, markdown")),
        }
    }
}

/// Which of the two text columns of `doc` a crawl fills (`--store-text`).
///
/// Both hold the page's words: `text` all its visible text, `main_text`
/// the article in it. On article pages the main text is most of the
/// visible text, so storing both stores most words twice, and compressing
/// and writing them is most of what the second column costs a crawl
/// (docs/src/main-text.md, "What it costs a crawl"). A column left out stays in the schema
/// and is null; `content_hash`, the duplicate detection and the noise
/// filter's evidence are computed from the visible text either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreText {
    /// `text` and `main_text` (the default).
    #[default]
    Both,
    /// `main_text` only.
    Main,
    /// `text` only (the main text is not computed unless a plan or the
    /// entity linking needs it).
    Visible,
    /// Neither.
    None,
}

impl StoreText {
    /// Whether the `text` column is filled.
    #[must_use]
    pub fn visible(self) -> bool {
        matches!(self, Self::Both | Self::Visible)
    }

    /// Whether the `main_text` column is filled.
    #[must_use]
    pub fn main(self) -> bool {
        matches!(self, Self::Both | Self::Main)
    }
}

impl std::str::FromStr for StoreText {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "both" => Ok(Self::Both),
            "main" => Ok(Self::Main),
            "visible" => Ok(Self::Visible),
            "none" => Ok(Self::None),
            _ => Err(format!("{s:?} is not a choice of text columns; allowed: both, main, visible, none")),
        }
    }
}
