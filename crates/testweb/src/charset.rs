//! `charset.test`: the same kind of page in windows-1252, GBK and
//! Shift_JIS, with the encoding declared in the Content-Type header, only
//! in a `<meta>` tag, or nowhere (the crawler must detect it).

use bytes::Bytes;

/// An encoding served by `charset.test`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    Win1252,
    Gbk,
    Sjis,
}

/// Where the encoding is declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decl {
    Header,
    Meta,
    None,
}

impl Enc {
    pub const ALL: [Enc; 3] = [Self::Win1252, Self::Gbk, Self::Sjis];

    #[must_use]
    pub fn slug(self) -> &'static str {
        match self {
            Self::Win1252 => "win1252",
            Self::Gbk => "gbk",
            Self::Sjis => "sjis",
        }
    }

    /// The charset label a crawler should report (lower-case WHATWG name).
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Win1252 => "windows-1252",
            Self::Gbk => "gbk",
            Self::Sjis => "shift_jis",
        }
    }

    fn encoding(self) -> &'static encoding_rs::Encoding {
        match self {
            Self::Win1252 => encoding_rs::WINDOWS_1252,
            Self::Gbk => encoding_rs::GBK,
            Self::Sjis => encoding_rs::SHIFT_JIS,
        }
    }

    /// A snippet the decoded text must contain.
    #[must_use]
    pub fn snippet(self) -> &'static str {
        match self {
            Self::Win1252 => "Crème brûlée",
            Self::Gbk => "中文测试网页",
            Self::Sjis => "日本語のテキスト",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::Win1252 => "Café de la Gare – Menü",
            Self::Gbk => "中文测试网页",
            Self::Sjis => "日本語のテキスト",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Self::Win1252 => "Crème brûlée à la française: naïve façade, déjà vu — «Größe» ½ Portion für 5 €. Señor Muñoz bestellt Smørrebrød und Käsespätzle, très élégant.",
            Self::Gbk => "欢迎访问中文测试网页。今天天气很好，我们一起去公园散步。北京的秋天非常美丽，树叶变成了金黄色。图书馆里有很多学生在安静地读书。",
            Self::Sjis => "日本語のテキストです。東京の天気は晴れです。桜の花がとてもきれいです。駅の近くに新しい図書館ができました。私たちは毎朝コーヒーを飲みます。",
        }
    }

    fn meta(self) -> &'static str {
        match self {
            Self::Win1252 => "<meta charset=\"windows-1252\">",
            Self::Gbk => "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=gbk\">",
            Self::Sjis => "<meta charset=\"Shift_JIS\">",
        }
    }

    fn header(self) -> &'static str {
        match self {
            Self::Win1252 => "text/html; charset=windows-1252",
            Self::Gbk => "text/html; charset=GBK",
            Self::Sjis => "text/html; charset=Shift_JIS",
        }
    }
}

impl Decl {
    pub const ALL: [Decl; 3] = [Self::Header, Self::Meta, Self::None];

    #[must_use]
    pub fn slug(self) -> &'static str {
        match self {
            Self::Header => "header",
            Self::Meta => "meta",
            Self::None => "none",
        }
    }
}

/// Parses `/gbk/meta` and the like.
#[must_use]
pub fn parse(path: &str) -> Option<(Enc, Decl)> {
    let (e, d) = path.strip_prefix('/')?.split_once('/')?;
    let enc = Enc::ALL.into_iter().find(|x| x.slug() == e)?;
    let decl = Decl::ALL.into_iter().find(|x| x.slug() == d)?;
    Some((enc, decl))
}

/// The page whose bytes are windows-1252 while its header and `<meta>`
/// say UTF-8 (a common server misconfiguration).
pub const MISLABELED: &str = "/mislabeled";
/// Text its decoded page must contain.
pub const MISLABELED_SNIPPET: &str = "Crème brûlée à la française";

/// Content-Type and body of [`MISLABELED`].
#[must_use]
pub fn mislabeled() -> (&'static str, Bytes) {
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Mislabeled: naïve résumé</title></head><body><h1>Mislabeled: naïve résumé</h1>",
    );
    for _ in 0..4 {
        html.push_str("<p>");
        html.push_str(Enc::Win1252.text());
        html.push_str("</p>\n");
    }
    html.push_str("</body></html>\n");
    let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&html);
    ("text/html; charset=utf-8", Bytes::from(bytes.into_owned()))
}

/// Content-Type and body of a charset page.
#[must_use]
pub fn page(enc: Enc, decl: Decl) -> (&'static str, Bytes) {
    let meta = if decl == Decl::Meta { enc.meta() } else { "" };
    let mut html = format!(
        "<!DOCTYPE html>\n<html><head>{meta}<title>{}</title></head><body><h1>{}</h1>",
        enc.title(),
        enc.title()
    );
    // Several paragraphs, so that detection without any declaration has enough text.
    for _ in 0..4 {
        html.push_str("<p>");
        html.push_str(enc.text());
        html.push_str("</p>\n");
    }
    html.push_str("</body></html>\n");
    let (bytes, _, _) = enc.encoding().encode(&html);
    let ctype = if decl == Decl::Header { enc.header() } else { "text/html" };
    (ctype, Bytes::from(bytes.into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_round_trips_through_its_encoding_and_is_not_utf8() {
        for enc in Enc::ALL {
            for decl in Decl::ALL {
                let (ctype, body) = page(enc, decl);
                assert_eq!(ctype.contains("charset="), decl == Decl::Header);
                let (text, had_errors) = enc.encoding().decode_without_bom_handling(&body);
                assert!(!had_errors, "{enc:?}");
                assert!(text.contains(enc.snippet()), "{enc:?}");
                assert!(std::str::from_utf8(&body).is_err(), "{enc:?} {decl:?} must not be valid UTF-8");
                let (_, _, unmappable) = enc.encoding().encode(enc.text());
                assert!(!unmappable, "{enc:?}: every character must exist in the encoding");
                assert_eq!(parse(&format!("/{}/{}", enc.slug(), decl.slug())), Some((enc, decl)));
            }
        }
        assert_eq!(parse("/utf8/none"), None);
    }
}
