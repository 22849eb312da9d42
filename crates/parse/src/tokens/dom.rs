//! The page's DOM built by the pass's own tokenizer (for rules that read
//! a DOM): one tokenization feeds both the pass and html5ever's tree
//! builder.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{BufferQueue, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};

use super::{Collector, State, Tokenized};

/// [`tokenize`], and the page's DOM built from the same tokens: one
/// tokenizer pass feeds both the pass's state and html5ever's tree builder
/// (scraper's tree), instead of a second tokenization of the page for the
/// DOM. Rules that need a DOM take this path (docs/src/rules.md).
///
/// The tree builder decides the tokenizer's states (raw text, RCDATA,
/// plaintext), as in a standalone parse, so the DOM is the one
/// `scraper::Html::parse_document` gives; the pass sees the same tokens
/// as alone except on pages where the two disagree on a raw-text element
/// (e.g. a self-closing `<title/>`, or `<style>` inside `<svg>`).
#[must_use]
pub fn tokenize_with_dom(html: &str, max_links: usize, max_text: usize) -> (Tokenized, scraper::Html) {
    use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts, TreeSink};
    use html5ever::TokenizerResult;
    let tree = TreeBuilder::new(scraper::HtmlTreeSink::new(scraper::Html::new_document()), TreeBuilderOpts::default());
    let both = Both { pass: Collector(RefCell::new(State::new(max_links, max_text))), tree };
    let tok = Tokenizer::new(both, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // The tree builder pauses the tokenizer at a `</script>` (for script
    // execution, which a crawler does not do) and at a `<meta charset>`
    // (to re-decode, which the charset sniffing did already): feed on
    // until the input is done.
    while !matches!(tok.feed(&input), TokenizerResult::Done) {}
    tok.end();
    let Both { pass, tree } = tok.sink;
    (pass.0.into_inner().finish(), tree.sink.finish())
}

/// The tokenizer's sink when the DOM is built in the same pass.
struct Both {
    pass: Collector,
    tree: html5ever::tree_builder::TreeBuilder<
        <scraper::HtmlTreeSink as html5ever::tree_builder::TreeSink>::Handle,
        scraper::HtmlTreeSink,
    >,
}

impl TokenSink for Both {
    type Handle = <scraper::HtmlTreeSink as html5ever::tree_builder::TreeSink>::Handle;

    fn process_token(&self, token: Token, line: u64) -> TokenSinkResult<Self::Handle> {
        // The tree builder's answer sets the tokenizer's state.
        let _ = self.pass.take(&token);
        self.tree.process_token(token, line)
    }

    fn end(&self) {
        self.tree.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.tree.adjusted_current_node_present_but_not_in_html_namespace()
    }
}
