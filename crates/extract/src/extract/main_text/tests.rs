//! Hard cases of the main text, each a small page written for the case.

use super::{main_text, TextFormat};
use crate::parse::{parse_html, ParseConfig};

fn text_of(html: &str, format: TextFormat) -> String {
    let url = url::Url::parse("https://news.example/a/1").expect("url");
    let page = parse_html(html.as_bytes(), Some("text/html"), &url, &ParseConfig::default());
    main_text(&page.structure, format).unwrap_or_default()
}

fn plain(html: &str) -> String {
    text_of(html, TextFormat::Plain)
}

const ARTICLE: &str = "The council voted on Tuesday to extend the tram line to the harbour, a project that has \
    been debated for a decade, costs more than planned, and will close two streets for a year.";
const SECOND: &str = "Residents of the old quarter, who had campaigned against the route, said they would ask \
    the court to review the decision, citing noise, dust and the loss of a market square.";

fn chrome(body: &str) -> String {
    format!(
        "<html><head><title>Tram</title></head><body>\
         <nav><ul><li><a href=/>Home</a></li><li><a href=/news>News</a></li><li><a href=/sport>Sport</a></li></ul></nav>\
         <div id=cookie-banner><p>We use cookies to improve your experience on our site. Accept all cookies?</p></div>\
         {body}\
         <aside class=related><h3>Related</h3><ul><li><a href=/b>Buses run late again this winter</a></li>\
         <li><a href=/c>Harbour festival returns with fireworks</a></li></ul></aside>\
         <footer><p>Copyright 2026 The Example News. All rights reserved. Contact us for licensing.</p></footer>\
         </body></html>"
    )
}

#[test]
fn an_article_is_kept_and_the_chrome_around_it_dropped() {
    let html = chrome(&format!("<article><h1>Tram line extended</h1><p>{ARTICLE}</p><p>{SECOND}</p></article>"));
    let t = plain(&html);
    assert!(t.contains("Tram line extended") && t.contains("decade") && t.contains("market square"), "{t}");
    for noise in ["cookies", "Harbour festival", "Copyright", "Sport"] {
        assert!(!t.contains(noise), "{noise} in: {t}");
    }
}

#[test]
fn comments_below_an_article_are_not_main_text() {
    let html = chrome(&format!(
        "<div class=story><p>{ARTICLE}</p><p>{SECOND}</p></div>\
         <div id=comments><div class=comment><p>I have lived here for forty years and this is a disgrace, frankly.</p></div>\
         <div class=comment><p>Finally some progress for the city, about time the council did something useful.</p></div></div>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(!t.contains("forty years") && !t.contains("about time"), "{t}");
}

#[test]
fn a_page_without_an_article_keeps_its_text_but_not_its_menus() {
    let html = chrome("<div><p>Opening hours: 9 to 5.</p><p>Closed on Sundays.</p></div>");
    let t = plain(&html);
    assert!(t.contains("Opening hours") && t.contains("Closed on Sundays"), "{t}");
    assert!(!t.contains("Sport"), "{t}");
}

#[test]
fn lists_tables_and_code_keep_their_structure_in_markdown() {
    let html = chrome(&format!(
        "<main><h2>How to build</h2><p>{ARTICLE}</p><ul><li>Clone the repository first</li><li>Run the build</li></ul>\
         <table><tr><th>Line</th><th>Stops</th></tr><tr><td>Harbour</td><td>12</td></tr></table>\
         <pre>cargo build --release\ncargo test</pre><p>{SECOND}</p></main>"
    ));
    let md = text_of(&html, TextFormat::Markdown);
    assert!(md.contains("## How to build"), "{md}");
    assert!(md.contains("- Clone the repository first") && md.contains("- Run the build"), "{md}");
    assert!(md.contains("Harbour") && md.contains("12"), "table cells are kept: {md}");
    assert!(md.contains("```\ncargo build --release"), "{md}");
    let t = plain(&html);
    assert!(!t.contains("##") && !t.contains("```") && t.contains("Clone the repository first"), "{t}");
}

#[test]
fn of_several_articles_the_text_of_each_is_kept() {
    let html = chrome(&format!(
        "<div class=content><article><h2>One</h2><p>{ARTICLE}</p></article><article><h2>Two</h2><p>{SECOND}</p></article></div>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
}

#[test]
fn json_ld_article_body_stands_in_when_the_page_renders_none() {
    let body = format!("{ARTICLE} {SECOND}");
    let html = format!(
        "<html><head><script type=\"application/ld+json\">{{\"@type\":\"NewsArticle\",\"headline\":\"Tram\",\
         \"articleBody\":\"{body}\"}}</script></head><body><div id=app></div>\
         <nav><a href=/>Home</a> <a href=/news>News</a></nav></body></html>"
    );
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
}

#[test]
fn a_legacy_encoded_page_reads_right() {
    let html = chrome(
        "<article><p>Le conseil municipal a voté mardi la prolongation du tramway jusqu'au port, \
        un projet débattu depuis dix ans, plus cher que prévu, et qui fermera deux rues pendant un an.</p></article>",
    )
    .replace("<head>", "<head><meta charset=windows-1252>");
    let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&html);
    let url = url::Url::parse("https://news.example/fr").expect("url");
    let page = parse_html(&bytes, Some("text/html"), &url, &ParseConfig::default());
    let t = main_text(&page.structure, TextFormat::Plain).unwrap_or_default();
    assert!(t.contains("débattu depuis dix ans"), "{t}");
}

#[test]
fn a_very_long_page_is_handled_in_bounded_time_and_kept_whole_up_to_the_text_limit() {
    let paragraphs: String = (0..20_000).map(|i| format!("<p>Paragraph {i}: {ARTICLE}</p>")).collect();
    let started = std::time::Instant::now();
    let t = plain(&chrome(&format!("<article>{paragraphs}</article>")));
    assert!(t.contains("Paragraph 0:") && t.lines().count() > 1000, "{}", t.len());
    assert!(!t.contains("cookies"));
    assert!(started.elapsed().as_secs() < 20, "took {:?}", started.elapsed());
}

#[test]
fn picture_captions_are_not_main_text_and_end_with_their_element() {
    let html = chrome(&format!(
        "<article><figure><img src=a.jpg alt=\"\"><figcaption></figcaption></figure>\
         <div class=text><figure class=wp-block-image><img src=b.jpg><figcaption>Foto: Anita Example</figcaption></figure>\
         <p>{ARTICLE}</p><figure><img src=c.jpg><figcaption>Foto: Frank Example</figcaption></figure><p>{SECOND}</p></div></article>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(!t.contains("Foto:"), "{t}");
}

#[test]
fn a_comment_thread_longer_than_the_article_does_not_win() {
    let comment = |n: u32| {
        format!(
            "<li class=comment><p>Reader {n} wrote: the tram will help, but the works will hurt the shops, \
             the cafes, the market and everyone who lives along the route, for at least a year or more.</p></li>"
        )
    };
    let thread: String = (0..12).map(comment).collect();
    let html = chrome(&format!(
        "<article><h1>Tram line extended</h1><p>{ARTICLE}</p><p>{SECOND}</p></article>\
         <section class=comments><h2>Comments</h2><ol class=comment-list>{thread}</ol></section>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(!t.contains("Reader 3 wrote"), "{t}");
}

#[test]
fn class_names_are_read_as_words() {
    // "commentary" is not a comment, "has-sidebar" describes a layout and
    // "field--label-hidden" is a visible field: none of them is boilerplate.
    let html = chrome(&format!(
        "<div class='layout has-sidebar'><div class='news commentary'>\
         <div class='field field--label-hidden'><p>{ARTICLE}</p><p>{SECOND}</p></div></div></div>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
}

#[test]
fn a_heading_over_dropped_links_goes_with_them() {
    let html = chrome(&format!(
        "<article><h1>Tram line extended</h1><p>{ARTICLE}</p><p>{SECOND}</p>\
         <h2>More on this story</h2><ul><li><a href=/x>Tram fares to rise</a></li>\
         <li><a href=/y>Harbour works begin in spring</a></li></ul></article>"
    ));
    let t = plain(&html);
    assert!(t.contains("Tram line extended") && t.contains("market square"), "{t}");
    assert!(!t.contains("More on this story") && !t.contains("fares"), "{t}");
}

#[test]
fn paragraphs_left_unclosed_end_at_the_next_block() {
    // Without the implied end of <p>, the first paragraph would hold the
    // whole page, its menus and footer included.
    let html = format!(
        "<html><body><div class=menu><a href=/>Home</a> <a href=/n>News</a></div>\
         <div class=story><p>{ARTICLE}<p>{SECOND}<div class=share><a href=/s>Share this</a></div></div>\
         <div class=footer><p>Copyright 2026 The Example News. All rights reserved.</div></body></html>"
    );
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(!t.contains("Copyright") && !t.contains("Share this"), "{t}");
}

#[test]
fn the_marked_article_wins_over_a_denser_block_with_far_less_text() {
    // A block of comma-heavy text (a tag cloud written out) is denser than
    // an article of plain sentences; the <article>, with far more
    // paragraph text, is the main content.
    let cloud: String = (0..24).map(|i| format!("topic{i}, ")).collect();
    let sentence = "The harbour works start in spring and the new quay opens to ferries the year after";
    let body: String = (0..6).map(|i| format!("<p>{sentence} as paragraph {i} of the plan says.</p>")).collect();
    let html = chrome(&format!(
        "<div class=x><p>{cloud}</p></div><div class=wrap><article><h1>Harbour plan</h1>{body}</article></div>"
    ));
    let t = plain(&html);
    assert!(t.contains("Harbour plan") && t.contains("paragraph 5 of the plan"), "{t}");
    assert!(!t.contains("topic3,"), "{t}");
}

#[test]
fn a_credit_inside_a_figure_is_not_main_text() {
    let html = chrome(&format!(
        "<article><p>{ARTICLE}</p><figure><img src=t.jpg><span>Photo: Jane Doe / Example Agency</span></figure>\
         <p>{SECOND}</p></article>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(!t.contains("Jane Doe"), "{t}");
}

#[test]
fn an_end_tag_of_another_heading_ends_the_open_one() {
    // `<h2>...</h3>` ends the h2 in a browser; the paragraphs after it are
    // text, not a heading waiting for its section.
    let html = chrome(&format!("<article><h2>Tram line extended</h3><p>{ARTICLE}</p><p>{SECOND}</p></article>"));
    let t = text_of(&html, TextFormat::Markdown);
    assert!(t.contains("## Tram line extended"), "{t}");
    assert!(t.lines().any(|l| l.starts_with("The council voted")), "{t}");
}

#[test]
fn a_line_that_is_only_a_date_or_a_time_is_left_out() {
    let html = chrome(&format!(
        "<article><h1>Tram line extended</h1><div class=when>May 19, 2020 | 05:28</div>\
         <p>{ARTICLE}</p><div>13. 1. 2020</div><p>{SECOND}</p><div>Adults: 3 € (prices of 2019)</div></article>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(!t.contains("May 19, 2020") && !t.contains("13. 1. 2020"), "{t}");
    // A price with a year is not a date.
    assert!(t.contains("Adults: 3 €"), "{t}");
    assert!(super::lines::is_date_line("Erstellt am Dienstag 6. Mai 2014") && super::lines::is_date_line("20:37"));
    assert!(!super::lines::is_date_line("Over 2000 people came") && !super::lines::is_date_line("Windows 10"));
}

/// Eight paragraphs of article text, about 1,500 characters.
fn body() -> String {
    (0..8).map(|i| format!("<p>{}</p>", if i % 2 == 0 { ARTICLE } else { SECOND })).collect()
}

#[test]
fn a_consent_dialog_with_more_text_than_the_article_is_not_main_text() {
    // The dialog's inner `modal` name alone would be overruled by its text
    // (it holds most of the page's paragraphs), and its `content` sections
    // would win; under a consent dialog's name, no name is overruled.
    let policy = "We and our partners store cookies on your device, read them, and use them to measure \
        audiences, to show personalised advertising, and to improve our services, which you can refuse.";
    let policy: String = (0..4).map(|_| format!("<p>{policy}</p>")).collect();
    let html = chrome(&format!(
        "<div class=story><p>{ARTICLE}</p><p>{SECOND}</p></div>\
         <div class=cookie-consent-wrap><div class=modal><section><div class=content>{policy}</div></section></div></div>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(!t.contains("our partners store cookies"), "{t}");
}

#[test]
fn a_live_ticker_named_as_comments_is_the_text_and_the_comments_are_not() {
    let entries: String = (0..8)
        .map(|m| {
            format!(
                "<div class='live-match-comment'><div class=live-match-comment-time>{m}'</div>\
                 <div class=live-match-comment-body>Minute {m}: the home side press high, win the ball back near \
                 the box, and the striker's shot goes just wide of the far post.</div></div>"
            )
        })
        .collect();
    let html = chrome(&format!(
        "<main><h1>Harbour United against City</h1><div class=live>{entries}</div>\
         <div class=comments><div class=comment><p>What a match, I was there with my father, and it was cold.</p></div></div></main>"
    ));
    let t = plain(&html);
    assert!(t.contains("Minute 0:") && t.contains("Minute 7:"), "{t}");
    assert!(!t.contains("with my father"), "{t}");
}

#[test]
fn a_content_name_inside_a_comment_thread_does_not_make_it_the_article() {
    // A reader's comment in an `entry-content` block: the name's bonus is
    // quartered with the rest of a thread's score.
    let comment = "I have taken this tram every morning for twenty years and never once was it on time, \
        not in summer and not in winter, so the extension will change nothing at all for us out here. \
        The council, as usual, listens to the shops, the hotels and the cruise lines, not to the people.";
    let html = chrome(&format!(
        "<div><p>{ARTICLE}</p><p>{SECOND}</p></div>\
         <div id=comments><div class=reply><div class=entry-content><p>{comment}</p></div></div></div>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade"), "{t}");
    assert!(!t.contains("twenty years"), "{t}");
}

#[test]
fn a_lead_above_the_article_body_is_kept() {
    // The body is the densest block; its parent adds only a share bar, and
    // the block above that adds the lead: a paragraph without links.
    let lead = "The harbour line opens in spring, two years late and over budget, the council said.";
    let html = chrome(&format!(
        "<div class=wrap><p class=intro>{lead}</p><div class=inner><div class=body>{}</div>\
         <div class=share><a href=/s>Share</a> <a href=/t>Tweet</a></div></div></div>",
        body()
    ));
    let t = plain(&html);
    assert!(t.contains("two years late") && t.contains("market square"), "{t}");
    assert!(!t.contains("Tweet"), "{t}");
}

#[test]
fn a_paragraph_wrapped_in_a_block_of_its_own_next_to_the_article_joins_it() {
    let coda = "The council will publish the full plans, the costs and the timetable of the works on its \
        website next week, and residents can comment on them until the end of the month at the town hall.";
    let html =
        chrome(&format!("<div class=col><div class=body>{}</div><div class=x><p>{coda}</p></div></div>", body()));
    let t = plain(&html);
    assert!(t.contains("market square") && t.contains("until the end of the month"), "{t}");
}

#[test]
fn see_also_links_follow_prompts_calls_and_credits_are_not_main_text() {
    let html = chrome(&format!(
        "<article><p>{ARTICLE}</p><p>Lea también: <a href=/x>Impiden ingreso a reportero y camarógrafo</a></p>\
         <div>Themen: <a href=/k>Kritik</a>, <a href=/p>Prognosen</a></div>\
         <p>Marco Example, the council's planner. © AFP / Jane Doe</p><p>{SECOND}</p>\
         <p>Follow The Example News on Twitter and Instagram @ExampleNews</p>\
         <p>Subscribe now to our e-edition for the full story.</p><div>© Example Press | Jane Doe</div></article>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    for noise in ["Lea también", "Themen:", "AFP", "Twitter", "Subscribe", "Example Press"] {
        assert!(!t.contains(noise), "{noise} in: {t}");
    }
}

#[test]
fn disclosures_notices_and_contact_boxes_in_an_article_are_not_main_text() {
    let html = chrome(&format!(
        "<article><section class=editorial-disclosure><p>This post contains references to products from one or \
         more of our advertisers, who may pay us when you follow a link.</p></section>\
         <p>{ARTICLE}</p><p>{SECOND}</p>\
         <div class=\"column community-notice\"><p>This post is a blog of the reader community and gives the \
         opinion of its author, not necessarily that of the newsroom.</p></div>\
         <div class=\"mod mod-contactbox\"><h4>Press office</h4><p>Press office of the council, Town Hall, \
         Market Square 1, telephone and e-mail on request.</p></div>\
         <div class=postmetadata><p>This entry was filed on Tuesday at noon under Trams, City and Harbour, \
         and you can follow any responses through the feed.</p></div></article>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    for noise in ["advertisers", "reader community", "Press office", "filed on Tuesday"] {
        assert!(!t.contains(noise), "{noise} in: {t}");
    }
}

#[test]
fn a_label_that_introduces_nothing_of_the_article_goes_and_one_that_does_stays() {
    let html = chrome(&format!(
        "<article><p>{ARTICLE}</p><p>The works, in order:</p><ul><li>Rails laid along the quay</li>\
         <li>New stops at the market</li></ul><p>Mehr Themen:</p>\
         <ul><li><a href=/a>Busse</a></li><li><a href=/b>Hafen</a></li><li><a href=/c>Markt</a></li></ul>\
         <p>{SECOND}</p><p>Quellenangaben:</p></article>"
    ));
    let t = plain(&html);
    assert!(t.contains("decade") && t.contains("market square"), "{t}");
    assert!(t.contains("The works, in order:\nRails laid along the quay"), "{t}");
    for noise in ["Mehr Themen", "Quellenangaben"] {
        assert!(!t.contains(noise), "{noise} in: {t}");
    }
}

#[test]
fn a_densest_block_that_is_boilerplate_inside_a_wrapper_is_handled() {
    // The page's only text is a `<footer>` of comma-dense paragraphs: the
    // densest block, though boilerplate. Its wrapper's text without
    // boilerplate is then smaller than its own, and climbing from it once
    // subtracted past zero (a panic in a debug build, a wrapped count in a
    // release one).
    let list = "Tram, bus, ferry, bicycle, taxi, train, coach, tram-train, cable car, funicular, \
        metro, monorail, trolleybus, rickshaw, scooter, shuttle, water taxi, airport link, night bus, car share";
    let html = format!(
        "<html><body><div class=wrap><footer><p>{list}</p><p>{list}</p><p>{list}</p></footer></div></body></html>"
    );
    let t = plain(&html);
    assert!(t.contains("car share"), "{t}");
}
