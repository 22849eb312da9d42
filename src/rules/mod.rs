//! Rules: typed fields by CSS, XPath, regex or JSON-LD path per URL
//! pattern, and outlink rules (README, "Rules").

pub mod convert;
pub mod xpath;
